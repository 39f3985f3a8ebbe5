-- Agent session ingest (contracts/agent-session-sync-v2.md): who may sync (orgs, users, compute
-- targets, device tokens), the org's sync policy and the feature gates, the sessions themselves and
-- their columnar event rows, and the per-target rate-limit windows shared by every instance.

create table orgs (
    id                     bigint generated always as identity primary key,
    name                   text not null unique check (name <> '' and char_length(name) <= 200),
    -- The org-level feature gate (contract step 7): the capability switched off for this org.
    session_sync_gate      boolean not null default true,
    -- Store the locally computed frustration signal only when the org opted in.
    frustration_opt_in     boolean not null default false,
    created_at             timestamptz not null default now()
);

-- The org's sync policy (contract step 6). Kept apart from `orgs` so "no policy row" is a state of
-- its own, which the ingest path treats as disabled (fail-closed).
create table org_sync_policies (
    org_id                 bigint primary key references orgs (id) on delete cascade,
    session_sync_enabled   boolean not null,
    updated_at             timestamptz not null default now()
);

-- Global switches. A missing row counts as off (fail-closed); the migration turns ingest on.
create table feature_flags (
    name                   text primary key check (name ~ '^[a-z][a-z0-9_]{0,63}$'),
    enabled                boolean not null,
    updated_at             timestamptz not null default now()
);
insert into feature_flags (name, enabled) values ('agent_session_sync', true);

create table users (
    id                     bigint generated always as identity primary key,
    org_id                 bigint not null references orgs (id) on delete cascade,
    name                   text not null check (name <> '' and char_length(name) <= 200),
    created_at             timestamptz not null default now(),
    unique (org_id, name),
    -- Target of the composite keys below: a token or target always names a user of its own org.
    unique (id, org_id)
);

-- A device (or other machine) that syncs sessions; the id is the client's `computeTargetId`.
create table compute_targets (
    id                     text primary key check (char_length(id) between 1 and 128),
    user_id                bigint not null,
    org_id                 bigint not null,
    created_at             timestamptz not null default now(),
    foreign key (user_id, org_id) references users (id, org_id) on delete cascade
);
create index compute_targets_owner_idx on compute_targets (user_id, org_id);

-- Only the SHA-256 of a device token is stored; the token itself is shown once when issued.
create table device_tokens (
    id                     bigint generated always as identity primary key,
    token_hash             bytea not null unique check (octet_length(token_hash) = 32),
    user_id                bigint not null,
    org_id                 bigint not null,
    label                  text check (label is null or char_length(label) <= 200),
    created_at             timestamptz not null default now(),
    revoked_at             timestamptz,
    foreign key (user_id, org_id) references users (id, org_id) on delete cascade
);

create table agent_sessions (
    id                     bigint generated always as identity primary key,
    org_id                 bigint not null references orgs (id) on delete cascade,
    compute_target_id      text not null references compute_targets (id) on delete cascade,
    session_id             text not null check (char_length(session_id) between 1 and 200),
    -- The device store's update time of the last applied payload (no regression past it).
    updated_at             timestamptz not null,
    -- Chunk state (contract "Chunks"): the last fully received revision, and the one in flight.
    committed_revision     text check (char_length(committed_revision) between 1 and 128),
    pending_revision       text check (char_length(pending_revision) between 1 and 128),
    -- Promoted columns the web reads.
    agent                  text not null check (char_length(agent) between 1 and 64),
    model                  text,
    title                  text,
    status                 text,
    started_at             timestamptz,
    ended_at               timestamptz,
    repository_remote_url  text,
    repository_branch      text,
    repository_commit_sha  text,
    input_tokens           bigint check (input_tokens >= 0),
    output_tokens          bigint check (output_tokens >= 0),
    cache_read_tokens      bigint check (cache_read_tokens >= 0),
    cache_write_tokens     bigint check (cache_write_tokens >= 0),
    cost_usd               double precision check (cost_usd >= 0),
    event_count            integer not null default 0 check (event_count >= 0),
    -- Stored only when the org opted in; otherwise it stays null.
    frustration            jsonb check (frustration is null or jsonb_typeof(frustration) = 'object'),
    -- The sanitized session (no events, no retired fields), compact.
    payload                jsonb not null check (jsonb_typeof(payload) = 'object'),
    first_synced_at        timestamptz not null default now(),
    last_synced_at         timestamptz not null default now(),
    unique (compute_target_id, session_id)
);
create index agent_sessions_org_updated_idx on agent_sessions (org_id, updated_at desc);

-- Columnar event metadata only: the retired per-turn text (summary, data) has no column.
create table agent_session_events (
    session_pk             bigint not null references agent_sessions (id) on delete cascade,
    seq                    bigint not null check (seq >= 0),
    ts                     timestamptz not null,
    kind                   text not null check (char_length(kind) between 1 and 64),
    tool_name              text,
    duration_ms            bigint check (duration_ms >= 0),
    input_tokens           bigint check (input_tokens >= 0),
    output_tokens          bigint check (output_tokens >= 0),
    is_error               boolean,
    primary key (session_pk, seq)
);

-- Rate limit: one row per compute target and minute window, counted by one atomic upsert.
create table ingest_rate_limits (
    compute_target_id      text not null references compute_targets (id) on delete cascade,
    window_start           timestamptz not null,
    batches                integer not null check (batches > 0),
    primary key (compute_target_id, window_start)
);
