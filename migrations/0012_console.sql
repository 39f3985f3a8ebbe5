-- The web console (issue 22). Each document's and README's Markdown source as synced (the file's
-- text, at most the file cap), so the read API can return it (`?format=markdown`) and render it
-- (`?format=html`). Null for rows synced before this migration: the source is stored on the
-- file's next change (the engine re-reads a file only when its blob SHA moves).
alter table documents add column source text;
alter table readmes add column source text;

-- The batch upsert of migration 0003 with the source as a ninth column. A row whose source is
-- still null takes the source even when nothing else differs.
drop function sync_upsert_documents(bigint, text[], text[], integer[], text[], jsonb[], jsonb[], text[]);
create function sync_upsert_documents(
    p_repo_id      bigint,
    p_paths        text[],
    p_blob_shas    text[],
    p_sizes        integer[],
    p_titles       text[],
    p_frontmatters jsonb[],
    p_headings     jsonb[],
    p_bodies       text[],
    p_sources      text[]
) returns table (doc_path text, doc_outcome text)
language plpgsql as $$
declare
    i        integer;
    inserted boolean;
begin
    for i in 1 .. coalesce(array_length(p_paths, 1), 0) loop
        begin
            insert into documents as d (repo_id, path, blob_sha, size_bytes, title, frontmatter, headings, body, source)
            values (p_repo_id, p_paths[i], p_blob_shas[i], p_sizes[i], p_titles[i],
                    p_frontmatters[i], p_headings[i], p_bodies[i], p_sources[i])
            on conflict (repo_id, path) do update set
                blob_sha = excluded.blob_sha, size_bytes = excluded.size_bytes, title = excluded.title,
                frontmatter = excluded.frontmatter, headings = excluded.headings, body = excluded.body,
                source = excluded.source, updated_at = now()
            where (d.blob_sha, d.size_bytes, d.title, d.frontmatter, d.headings, d.body, d.source)
                  is distinct from
                  (excluded.blob_sha, excluded.size_bytes, excluded.title, excluded.frontmatter,
                   excluded.headings, excluded.body, excluded.source)
            returning (d.xmax = 0) into inserted;
            if found then
                doc_path := p_paths[i];
                doc_outcome := case when inserted then 'inserted' else 'updated' end;
                return next;
            end if;
        -- Only what the data can cause: a bug in this function must not pass for a refusal.
        exception when data_exception or integrity_constraint_violation or program_limit_exceeded then
            doc_path := p_paths[i];
            doc_outcome := 'refused';
            return next;
        end;
    end loop;
end
$$;

-- The console's Sessions page pages an org's sessions newest first by (updated_at, id); its
-- Insights page aggregates an org's sessions by the day they started (else were last updated).
create index agent_sessions_org_updated_id_idx on agent_sessions (org_id, updated_at desc, id desc);
drop index agent_sessions_org_updated_idx;
create index agent_sessions_org_day_idx on agent_sessions (org_id, (coalesce(started_at, updated_at)));
