-- The GitHub docs sync schema (spec/sync-engine.txt). The engine is the only writer of repository
-- content; these constraints keep states the spec forbids out of the database even if code errs.

-- One row per repository the installation can reach and the configuration selects.
-- The identity is GitHub's numeric id, so a rename or transfer updates owner/name in place.
create table repos (
    id                     bigint generated always as identity primary key,
    github_id              bigint not null unique check (github_id > 0),
    owner                  text not null check (owner <> ''),
    name                   text not null check (name <> ''),
    default_branch         text,
    private                boolean not null default false,
    archived               boolean not null default false,
    html_url               text,
    description            text,
    -- The docs folder the last plan used (override or discovered); null when none exists.
    docs_path              text,
    -- Head check state: all three are cleared together when a sync could not fetch every file,
    -- so the next sync re-plans.
    head_commit_sha        text,
    tree_sha               text,
    head_etag              text,
    selection_fingerprint  text,
    codeowners_path        text,
    codeowners_blob_sha    text,
    sync_status            text not null default 'pending'
                           check (sync_status in ('pending', 'ok', 'error')),
    -- A fixed message chosen by the engine, never raw upstream text.
    sync_error             text,
    sync_error_code        text,
    -- The rerun marker (spec "Coalescing").
    sync_requested_at      timestamptz,
    last_synced_at         timestamptz,
    -- Skipped files of the last plan: [{"path": "...", "reason": "..."}].
    warnings               jsonb not null default '[]'::jsonb check (jsonb_typeof(warnings) = 'array'),
    created_at             timestamptz not null default clock_timestamp(),
    -- Wall-clock time of the last write (not the transaction start): the removal rule compares
    -- it with the instant a listing was taken.
    updated_at             timestamptz not null default clock_timestamp(),
    constraint repos_error_has_message
        check ((sync_status = 'error') = (sync_error is not null and sync_error_code is not null))
);
-- Not unique: two repositories can swap names between listings; the GitHub id is the identity.
create index repos_full_name_idx on repos (lower(owner), lower(name));
create index repos_sync_requested_idx on repos (sync_requested_at) where sync_requested_at is not null;

create table documents (
    id            bigint generated always as identity primary key,
    repo_id       bigint not null references repos (id) on delete cascade,
    path          text not null check (path <> '' and left(path, 1) <> '/'),
    blob_sha      text not null check (blob_sha ~ '^[0-9a-f]{40}$'),
    size_bytes    integer not null check (size_bytes >= 0),
    title         text not null,
    frontmatter   jsonb not null default '{}'::jsonb check (jsonb_typeof(frontmatter) = 'object'),
    headings      jsonb not null default '[]'::jsonb check (jsonb_typeof(headings) = 'array'),
    body          text not null,
    search_vector tsvector generated always as (
        setweight(to_tsvector('simple', title), 'A') || setweight(to_tsvector('english', body), 'B')
    ) stored,
    created_at    timestamptz not null default now(),
    updated_at    timestamptz not null default now(),
    constraint documents_path_unique unique (repo_id, path)
);
create index documents_search_idx on documents using gin (search_vector);

-- The root README, one per repository.
create table readmes (
    repo_id       bigint primary key references repos (id) on delete cascade,
    path          text not null check (path <> ''),
    blob_sha      text not null check (blob_sha ~ '^[0-9a-f]{40}$'),
    size_bytes    integer not null check (size_bytes >= 0),
    title         text not null,
    frontmatter   jsonb not null default '{}'::jsonb check (jsonb_typeof(frontmatter) = 'object'),
    headings      jsonb not null default '[]'::jsonb check (jsonb_typeof(headings) = 'array'),
    body          text not null,
    search_vector tsvector generated always as (
        setweight(to_tsvector('simple', title), 'A') || setweight(to_tsvector('english', body), 'B')
    ) stored,
    updated_at    timestamptz not null default now()
);

-- CODEOWNERS rules in file order; the file's path and blob SHA are on repos.
create table code_owners (
    repo_id  bigint not null references repos (id) on delete cascade,
    line     integer not null check (line > 0),
    pattern  text not null check (pattern <> ''),
    owners   text[] not null,
    primary key (repo_id, line)
);

-- Every run: full, one repository, drain. Liveness is the run lock (lock_key), never the status.
create table sync_runs (
    id                 bigint generated always as identity primary key,
    trigger            text not null check (trigger in ('webhook', 'manual', 'startup', 'schedule')),
    -- owner/name for a one-repository run, null for all.
    scope              text,
    status             text not null default 'running'
                       check (status in ('running', 'success', 'partial', 'failed')),
    error              text,
    lock_key           bigint not null,
    started_at         timestamptz not null default now(),
    finished_at        timestamptz,
    repos_synced       integer not null default 0 check (repos_synced >= 0),
    repos_unchanged    integer not null default 0 check (repos_unchanged >= 0),
    repos_failed       integer not null default 0 check (repos_failed >= 0),
    repos_removed      integer not null default 0 check (repos_removed >= 0),
    docs_added         integer not null default 0 check (docs_added >= 0),
    docs_changed       integer not null default 0 check (docs_changed >= 0),
    docs_removed       integer not null default 0 check (docs_removed >= 0),
    github_requests    integer not null default 0 check (github_requests >= 0),
    constraint sync_runs_finished_iff_done check ((status = 'running') = (finished_at is null))
);
create index sync_runs_running_idx on sync_runs (started_at) where status = 'running';
create index sync_runs_started_idx on sync_runs (started_at desc);

-- Scheduler state per tenant (the tick function decides from it; DESIGN.md "Scheduler").
create table scheduler_state (
    tenant                text primary key check (tenant <> ''),
    next_due_at           timestamptz,
    consecutive_failures  integer not null default 0 check (consecutive_failures >= 0),
    last_run_id           bigint references sync_runs (id) on delete set null,
    last_run_finished_at  timestamptz,
    -- A hash of the sync settings that ran last: a change counts as a fresh start (sync.onStartup).
    config_fingerprint    text,
    updated_at            timestamptz not null default now()
);

-- A rate-limit pause shared by every worker of an installation (issue: functions).
create table github_rate_limit_pauses (
    installation_id  bigint primary key check (installation_id > 0),
    paused_until     timestamptz not null,
    updated_at       timestamptz not null default now()
);
