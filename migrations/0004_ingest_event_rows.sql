-- Event rows without a per-row foreign key. A 200-session batch carries tens of thousands of
-- events, and a foreign key checks each one with its own lookup and row lock on the session
-- (measured: about 100 ms of a 26,600-event insert that takes 50 ms without it).
--
-- What the key guaranteed still holds:
-- * No event without a session: the ingest upsert is the only writer of events, and writes them
--   in the same transaction that upserted their session's row, which that upsert also locks
--   (ON CONFLICT DO UPDATE locks the conflicting row even when its WHERE is false), so a
--   concurrent delete of the session waits for the batch and then deletes its events below.
-- * Deleting a session deletes its events (the cascade): the statement trigger below, one
--   set-based delete per statement, including deletes cascaded from orgs and compute targets.
alter table agent_session_events drop constraint agent_session_events_session_pk_fkey;

create function agent_sessions_delete_events() returns trigger
language plpgsql as $$
begin
    delete from agent_session_events e using gone_sessions g where e.session_pk = g.id;
    return null;
end $$;

create trigger agent_sessions_delete_events
    after delete on agent_sessions
    referencing old table as gone_sessions
    for each statement execute function agent_sessions_delete_events();

-- TRUNCATE has no row triggers: empty the events with their sessions.
create function agent_sessions_truncate_events() returns trigger
language plpgsql as $$
begin
    truncate agent_session_events;
    return null;
end $$;

create trigger agent_sessions_truncate_events
    after truncate on agent_sessions
    for each statement execute function agent_sessions_truncate_events();
