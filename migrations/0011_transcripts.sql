-- The transcript lane (docs/transcript-wire-contract.md): redacted session transcripts archived in
-- object storage as immutable, content-addressed segments. Postgres keeps what was verified: each
-- file's generation and acknowledged offset, its segments, the upload intents in flight, the read
-- tokens the web app uses, and the org's retention.

-- The org-level transcript gate (contract "intent", step 5) and the org's retention: segments older
-- than this many days are deleted, objects and rows (`syncplane transcripts expire`, the tick).
alter table orgs add column transcript_gate boolean not null default true;
alter table orgs add column transcript_retention_days integer
    check (transcript_retention_days is null or transcript_retention_days between 1 and 36500);

-- The global switch; a missing row counts as off (fail-closed).
insert into feature_flags (name, enabled) values ('agent_transcript_sync', true)
    on conflict (name) do nothing;

-- One transcript file of one session of one compute target, at its current generation.
create table transcript_files (
    id                     bigint generated always as identity primary key,
    org_id                 bigint not null references orgs (id) on delete cascade,
    compute_target_id      text not null references compute_targets (id) on delete cascade,
    session_id             text not null check (char_length(session_id) between 1 and 200),
    file_id                text not null check (octet_length(file_id) between 1 and 256
                                                and file_id ~ '^[A-Za-z0-9_-][A-Za-z0-9._-]*$'),
    generation             integer not null check (generation >= 1),
    acked_offset           bigint not null default 0 check (acked_offset >= 0),
    -- Redacted bytes archived for the current generation (the sum of its segments').
    decoded_bytes          bigint not null default 0 check (decoded_bytes >= 0),
    created_at             timestamptz not null default now(),
    updated_at             timestamptz not null default now(),
    unique (compute_target_id, session_id, file_id)
);
create index transcript_files_org_idx on transcript_files (org_id, updated_at);

-- A verified segment: contiguous with the one before it in its generation.
create table transcript_segments (
    file_row               bigint not null references transcript_files (id) on delete cascade,
    generation             integer not null check (generation >= 1),
    start_offset           bigint not null check (start_offset >= 0),
    source_bytes           bigint not null check (source_bytes > 0),
    decoded_bytes          bigint not null check (decoded_bytes >= 0),
    compressed_bytes       bigint not null check (compressed_bytes > 0),
    sha256                 bytea not null check (octet_length(sha256) = 32),
    object_key             text not null,
    created_at             timestamptz not null default now(),
    primary key (file_row, generation, start_offset)
);
create index transcript_segments_created_idx on transcript_segments (created_at);

-- An upload intent: what the client was told to store, until it is completed or expires.
create table transcript_uploads (
    id                     uuid primary key,
    file_row               bigint not null references transcript_files (id) on delete cascade,
    generation             integer not null check (generation >= 1),
    start_offset           bigint not null check (start_offset >= 0),
    source_bytes           bigint not null check (source_bytes > 0),
    decoded_bytes          bigint not null check (decoded_bytes >= 0),
    compressed_bytes       bigint not null check (compressed_bytes > 0),
    sha256                 bytea not null check (octet_length(sha256) = 32),
    object_key             text not null,
    expires_at             timestamptz not null,
    completed_at           timestamptz,
    created_at             timestamptz not null default now()
);
create index transcript_uploads_file_idx on transcript_uploads (file_row);
create index transcript_uploads_key_idx on transcript_uploads (object_key);

-- Read tokens for the web app: one org each; only the SHA-256 is stored, shown once when issued.
create table read_tokens (
    id                     bigint generated always as identity primary key,
    token_hash             bytea not null unique check (octet_length(token_hash) = 32),
    org_id                 bigint not null references orgs (id) on delete cascade,
    label                  text check (label is null or char_length(label) <= 200),
    created_at             timestamptz not null default now(),
    revoked_at             timestamptz
);

-- The transcript lane's own rate-limit windows (apart from the metadata lane's batches).
create table transcript_rate_limits (
    compute_target_id      text not null,
    window_start           timestamptz not null,
    requests               integer not null,
    primary key (compute_target_id, window_start)
);
