-- Upsert a repository's documents in one round trip, each in its own subtransaction: a PL/pgSQL
-- block with an EXCEPTION clause is a savepoint, so one document Postgres refuses never fails the
-- others (spec "One repository", step 5). Returns one row per document that was inserted,
-- updated or refused; identical documents are not touched and return nothing.
create function sync_upsert_documents(
    p_repo_id      bigint,
    p_paths        text[],
    p_blob_shas    text[],
    p_sizes        integer[],
    p_titles       text[],
    p_frontmatters jsonb[],
    p_headings     jsonb[],
    p_bodies       text[]
) returns table (doc_path text, doc_outcome text)
language plpgsql as $$
declare
    i        integer;
    inserted boolean;
begin
    for i in 1 .. coalesce(array_length(p_paths, 1), 0) loop
        begin
            insert into documents as d (repo_id, path, blob_sha, size_bytes, title, frontmatter, headings, body)
            values (p_repo_id, p_paths[i], p_blob_shas[i], p_sizes[i], p_titles[i],
                    p_frontmatters[i], p_headings[i], p_bodies[i])
            on conflict (repo_id, path) do update set
                blob_sha = excluded.blob_sha, size_bytes = excluded.size_bytes, title = excluded.title,
                frontmatter = excluded.frontmatter, headings = excluded.headings, body = excluded.body,
                updated_at = now()
            where (d.blob_sha, d.size_bytes, d.title, d.frontmatter, d.headings, d.body)
                  is distinct from
                  (excluded.blob_sha, excluded.size_bytes, excluded.title, excluded.frontmatter,
                   excluded.headings, excluded.body)
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
