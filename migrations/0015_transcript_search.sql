-- Search over the transcript archive (issue 34; docs/transcript-search.md): the searchable text of
-- every recorded segment's lines. The transaction that records a segment
-- (`syncplane_archive::files::record`, whichever path called it: the direct upload's complete, the
-- presigned complete, the worker's S3 notification) queues it (`transcript_index_queue`, below);
-- the indexer writes its lines and takes it off the queue in one transaction.
--
-- One row per line of a segment (a line whose text is longer than a part is several rows, one
-- per part), with the line's role, tool and time, its text (user prompts, assistant text, tool
-- calls' inputs and tool results; never JSON keys or ids) and one vector, built by the indexer
-- (`syncplane_archive::search::lexer`): the words stemmed as Postgres's `english` configuration
-- stems them, with their positions, plus the line's code tokens (`ECONNREFUSED`, `src/main.rs`,
-- `snake_case_name`, `--flag`) as exact lexemes, which the dictionary would stem or split.
--
-- The index follows the archive: a row belongs to its segment (deleted with it, so retention
-- removes it), and a new generation of a file deletes the old generation's rows.
create table transcript_lines (
    id                     bigint generated always as identity primary key,
    org_id                 bigint not null references orgs (id) on delete cascade,
    file_row               bigint not null,
    generation             integer not null,
    segment_offset         bigint not null,
    -- The line within its segment (0-based) and within its file's generation (1-based).
    segment_line           integer not null check (segment_line >= 0),
    line_no                bigint not null check (line_no >= 1),
    part                   integer not null default 0 check (part >= 0),
    compute_target_id      text not null,
    session_id             text not null,
    role                   text check (role in ('user', 'assistant', 'tool')),
    tool_name              text check (tool_name is null or char_length(tool_name) <= 128),
    at                     timestamptz not null,
    body                   text not null,
    search_vector          tsvector not null,
    foreign key (file_row, generation, segment_offset)
        references transcript_segments (file_row, generation, start_offset) on delete cascade
);
create index transcript_lines_vector_idx on transcript_lines using gin (search_vector);
-- Newest first within an org (the order of every result page), within a compute target, within
-- a session.
create index transcript_lines_org_at_idx on transcript_lines (org_id, at desc, id desc);
create index transcript_lines_target_at_idx
    on transcript_lines (org_id, compute_target_id, at desc, id desc);
create index transcript_lines_segment_idx
    on transcript_lines (file_row, generation, segment_offset);

-- Searches per read token per minute (`TRANSCRIPT_SEARCH_RATE_LIMIT_PER_MINUTE`).
create table transcript_search_rate_limits (
    read_token_id          bigint not null,
    window_start           timestamptz not null,
    requests               integer not null,
    primary key (read_token_id, window_start)
);

-- Lines in the current generation of a file (the next segment's first line number follows).
alter table transcript_files add column line_count bigint not null default 0 check (line_count >= 0);

-- Segments recorded and not yet indexed (`syncplane_archive::search::index::drain`): queued in the
-- transaction that records the segment, taken off in the one that writes its lines.
create table transcript_index_queue (
    file_row               bigint not null,
    generation             integer not null,
    segment_offset         bigint not null,
    -- The segment's first line within its file's generation (1-based).
    first_line             bigint not null check (first_line >= 1),
    queued_at              timestamptz not null default now(),
    primary key (file_row, generation, segment_offset),
    foreign key (file_row, generation, segment_offset)
        references transcript_segments (file_row, generation, start_offset) on delete cascade
);
create index transcript_index_queue_age_idx on transcript_index_queue (queued_at);

-- The lines' text and vectors compressed with lz4 where the server has it (faster than the
-- default pglz; a server built without it keeps pglz).
do $$
begin
    alter table transcript_lines alter column body set compression lz4;
    alter table transcript_lines alter column search_vector set compression lz4;
exception when feature_not_supported or invalid_parameter_value then
    null;
end
$$;
