-- Issue 23 (listing and heads in one GraphQL query per 100 repositories).
--
-- `viewer.repositories` is not documented for installation tokens, so its count is confirmed
-- against the REST listing's `total_count` before it replaces the REST listing. One row per
-- installation: the count last confirmed and when. A listing whose count matches a confirmation
-- younger than a day is taken without asking REST again; any other is checked (one request).
create table listing_checks (
    installation_id bigint primary key,
    total_count     bigint not null check (total_count >= 0),
    confirmed_at    timestamptz not null
);
