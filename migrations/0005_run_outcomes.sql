-- Saying when to retry, and what a failed run really left (issue 12 §5).

-- A run stopped by GitHub's rate limit records when a retry can succeed (GitHub's reset time as
-- the client computed it; never upstream text). Null for every other run.
alter table sync_runs add column retry_after timestamptz;

-- Unchanged repositories whose content an earlier run recorded as failed had in fact committed
-- (the COMMIT's reply was lost, or the process died after it): the next run says so.
alter table sync_runs add column repos_already_current integer not null default 0
    check (repos_already_current >= 0);

-- Failed runs are few; the "written by a failed run" check on each repository load reads them.
create index sync_runs_failed_idx on sync_runs (started_at) where status = 'failed';
