-- Exports per read token per minute (`TRANSCRIPT_EXPORT_RATE_LIMIT_PER_MINUTE`; docs/transcript-search.md
-- "Export"): an export reads an organization's sessions or a whole transcript, so a read token
-- gets few of them a minute, counted apart from its searches.
create table transcript_export_rate_limits (
    read_token_id          bigint not null,
    window_start           timestamptz not null,
    requests               integer not null,
    primary key (read_token_id, window_start)
);
