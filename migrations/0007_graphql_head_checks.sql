-- Issue 10 (batched head checks through GraphQL; what a run spent on GitHub).

-- GitHub's global node id: a drain reads the heads of waiting repositories with
-- `nodes(ids:)`, and only the stored rows describe them.
alter table repos add column node_id text check (node_id <> '');

-- Requests by kind and rate-limit units per run (`github_requests` stays the total). REST units
-- are the core budget's (a 304 costs none); GraphQL points are its own budget.
alter table sync_runs
    add column github_rest_requests    integer not null default 0 check (github_rest_requests >= 0),
    add column github_graphql_requests integer not null default 0 check (github_graphql_requests >= 0),
    add column github_rest_units       integer not null default 0 check (github_rest_units >= 0),
    add column github_graphql_points   integer not null default 0 check (github_graphql_points >= 0);
