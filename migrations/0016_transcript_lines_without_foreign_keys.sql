-- Indexing throughput (issue 34; docs/transcript-search.md): the lines' two foreign keys checked
-- every inserted line against its segment and its org, an index probe and a row lock each, per
-- line. A line still never outlives its segment: deleting segments (retention, an org or a
-- compute target deleted, whose cascades reach `transcript_segments`) deletes their lines in the
-- same statement, through the trigger below. The indexer cannot write lines for a segment that
-- is being deleted: it holds the segment's row (`FOR SHARE`) while it writes them, so the delete
-- waits for its commit and then finds them (at read committed, every delete's level here: a
-- delete at repeatable read would not see lines committed after its snapshot).
alter table transcript_lines drop constraint transcript_lines_file_row_generation_segment_offset_fkey;
alter table transcript_lines drop constraint transcript_lines_org_id_fkey;

create function transcript_lines_follow_segments() returns trigger
language plpgsql as $$
begin
    delete from transcript_lines l
     using gone g
     where l.file_row = g.file_row and l.generation = g.generation
       and l.segment_offset = g.start_offset;
    return null;
end
$$;

create trigger transcript_segments_delete_lines
    after delete on transcript_segments
    referencing old table as gone
    for each statement execute function transcript_lines_follow_segments();

-- Emptied (`TRUNCATE transcript_segments`, or `TRUNCATE orgs CASCADE`, which reaches it): the lines
-- go too, as the foreign keys made them.
create function transcript_lines_follow_truncate() returns trigger
language plpgsql as $$
begin
    truncate transcript_lines;
    return null;
end
$$;

create trigger transcript_segments_truncate_lines
    after truncate on transcript_segments
    for each statement execute function transcript_lines_follow_truncate();

-- Lines deleted before this migration's trigger existed cannot have been left behind (the foreign
-- key deleted them), so nothing is to be cleaned here.
