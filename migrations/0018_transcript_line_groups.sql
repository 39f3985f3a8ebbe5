-- Indexing throughput (issue 34; docs/transcript-search.md "Groups of lines"): the index held one
-- row per line, and Postgres spent most of its indexing time adding each line's lexemes to the GIN
-- index, one (lexeme, row) pair at a time. Consecutive lines of a session share most of their
-- words, so the index now holds one row per group of consecutive lines of one segment (at most 16
-- lines and 64 KiB of text, `syncplane_archive::search::index`): on the benchmark's lines, 42% of
-- the pairs in a sixteenth of the rows.
--
-- A group's `terms` are all of its lines' lexemes without positions: the GIN index finds the
-- groups that may hold a match, and the search reads those groups' lines again to find the lines
-- that do (a phrase, an exclusion, words in one line: `syncplane_archive::search::matcher`). No
-- vector per line is kept: writing them was an eighth of Postgres's indexing time. Hits stay
-- lines: each line keeps its number, role, tool, time and text (`line_nos`, `roles`, ... the
-- same index in each array).
create table transcript_line_groups (
    id                     bigint generated always as identity primary key,
    org_id                 bigint not null,
    file_row               bigint not null,
    generation             integer not null,
    segment_offset         bigint not null,
    compute_target_id      text not null,
    session_id             text not null,
    -- The newest and the oldest of the lines' times: newest-first pages order groups by `at`.
    at                     timestamptz not null,
    first_at               timestamptz not null,
    terms                  tsvector not null,
    -- The group's lines in order, one element each (a long line's parts are one each): the line
    -- within its file's generation (1-based) and within its segment (0-based), the part, ...
    line_nos               bigint[] not null,
    segment_lines          integer[] not null,
    parts                  integer[] not null,
    roles                  text[] not null,
    tool_names             text[] not null,
    ats                    timestamptz[] not null,
    bodies                 text[] not null,
    check (cardinality(line_nos) >= 1 and first_at <= at),
    check (cardinality(segment_lines) = cardinality(line_nos)
           and cardinality(parts) = cardinality(line_nos)
           and cardinality(roles) = cardinality(line_nos)
           and cardinality(tool_names) = cardinality(line_nos)
           and cardinality(ats) = cardinality(line_nos)
           and cardinality(bodies) = cardinality(line_nos))
);

-- Compressed with lz4 where the server has it, as the lines were (migration 0015).
do $$
begin
    alter table transcript_line_groups alter column terms set compression lz4;
    alter table transcript_line_groups alter column bodies set compression lz4;
exception when feature_not_supported or invalid_parameter_value then
    null;
end
$$;

-- The lines indexed so far, grouped by the indexer's bounds: 16 rows (a long line's parts are one
-- each) of a segment, cut again at each 64 KiB of text (so a group's lexemes stay far below a
-- tsvector's 1 MiB).
create aggregate transcript_lexeme_union (tsvector) (
    sfunc = tsvector_concat, stype = tsvector, initcond = ''
);
insert into transcript_line_groups (
       org_id, file_row, generation, segment_offset, compute_target_id, session_id, at, first_at,
       terms, line_nos, segment_lines, parts, roles, tool_names, ats, bodies)
select min(org_id), file_row, generation, segment_offset, min(compute_target_id),
       min(session_id), max(at), min(at),
       strip(transcript_lexeme_union(search_vector order by line_no, part)),
       array_agg(line_no order by line_no, part), array_agg(segment_line order by line_no, part),
       array_agg(part order by line_no, part), array_agg(role order by line_no, part),
       array_agg(tool_name order by line_no, part), array_agg(at order by line_no, part),
       array_agg(body order by line_no, part)
  from (select l.*,
               (row_number() over w - 1) / 16 as by_count,
               (sum(octet_length(body)) over w - octet_length(body)) / 65536 as by_bytes
          from transcript_lines l
        window w as (partition by file_row, generation, segment_offset order by line_no, part)) l
 group by file_row, generation, segment_offset, by_count, by_bytes;
drop aggregate transcript_lexeme_union (tsvector);

create index transcript_line_groups_terms_idx on transcript_line_groups using gin (terms);
-- Newest first within an org (the order of every result page), within a compute target.
create index transcript_line_groups_org_at_idx
    on transcript_line_groups (org_id, at desc, id desc);
create index transcript_line_groups_target_at_idx
    on transcript_line_groups (org_id, compute_target_id, at desc, id desc);
create index transcript_line_groups_segment_idx
    on transcript_line_groups (file_row, generation, segment_offset);

-- The lines follow their segments as before (migration 0016): the same triggers, now deleting
-- the groups.
create or replace function transcript_lines_follow_segments() returns trigger
language plpgsql as $$
begin
    delete from transcript_line_groups l
     using gone g
     where l.file_row = g.file_row and l.generation = g.generation
       and l.segment_offset = g.start_offset;
    return null;
end
$$;

create or replace function transcript_lines_follow_truncate() returns trigger
language plpgsql as $$
begin
    truncate transcript_line_groups;
    return null;
end
$$;

drop table transcript_lines;
