//! The upsert (contract step 8): the whole batch in one transaction, a handful of set-based
//! statements whatever the batch size.
//!
//! 1. Lock every session of the batch (transaction advisory locks on the session key, taken in
//!    one fixed order), so concurrent batches for one session serialize and cannot deadlock.
//! 2. Read the stored rows, then decide in memory, chunk by chunk in index order, exactly as the
//!    contract's "Chunks", "Omission" and "No regression" rules say. A chunk out of sequence
//!    fails the whole batch (409) before anything is written.
//! 3. Write: sessions (guarded by `IS DISTINCT FROM`, so a repeated batch rewrites nothing),
//!    then their event rows ([`event_rows`]: a new session's by COPY, a stored one's compared by
//!    seq), then the event counts that changed.
//!
//! Any database failure rolls everything back (500 `ingestion_failed`): nothing partial remains.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;
use sqlx::{PgPool, Postgres, Transaction};

use super::batch::{Event, Session};
use super::error::{IngestError, db_failure};
use super::event_rows::{self, SessionEvents, StoredSession};
use super::sanitize::{merge, sanitize};

/// Advisory-lock class of ingest session keys (the two-key lock space is apart from the
/// single-key one the sync engine uses).
const SESSION_LOCK_CLASS: i32 = 0x1A5E;

/// The session as stored, as far as the chunk rules and the merge need it.
struct Stored {
    id: Option<i64>,
    updated_at: Option<DateTime<Utc>>,
    committed: Option<String>,
    pending: Option<String>,
    payload: Map<String, Value>,
    frustration: Option<Value>,
    /// Event rows stored before this batch.
    event_count: i32,
}

/// What the batch does to one session.
struct Plan<'a> {
    session_id: &'a str,
    state: Stored,
    /// Some chunk was applied (not all skipped as older than the stored one).
    applied: bool,
    /// No row was stored before this batch: no stored events to compare or delete.
    is_new: bool,
    /// A chunk 0 of a differing revision carried events: stored events outside `events` go.
    replace_events: bool,
    events: BTreeMap<u64, &'a Event>,
}

pub async fn upsert(
    pool: &PgPool,
    org_id: i64,
    target: &str,
    sessions: &[Session],
    frustration_opt_in: bool,
) -> Result<(), IngestError> {
    // One session's chunks, in index order (the parser refused duplicate indexes).
    let mut by_session: BTreeMap<&str, Vec<&Session>> = BTreeMap::new();
    for s in sessions {
        by_session.entry(s.session_id.as_str()).or_default().push(s);
    }
    for chunks in by_session.values_mut() {
        chunks.sort_by_key(|s| s.chunk.index);
    }
    let ids: Vec<&str> = by_session.keys().copied().collect();

    let mut tx = pool.begin().await.map_err(db_failure("begin"))?;
    lock_sessions(&mut tx, target, &ids).await?;
    let mut stored = load(&mut tx, target, &ids).await?;

    let mut plans = Vec::with_capacity(by_session.len());
    for (session_id, chunks) in &by_session {
        let state = stored.remove(*session_id).unwrap_or(Stored {
            id: None,
            updated_at: None,
            committed: None,
            pending: None,
            payload: Map::new(),
            frustration: None,
            event_count: 0,
        });
        let plan = plan_session(session_id, state, chunks, frustration_opt_in)?;
        if plan.applied {
            plans.push(plan);
        }
    }
    if plans.is_empty() {
        // Everything was older than what is stored: acknowledged, not applied.
        tx.commit().await.map_err(db_failure("commit"))?;
        return Ok(());
    }

    write_sessions(&mut tx, org_id, target, &mut plans).await?;
    write_events(&mut tx, &plans).await?;
    tx.commit().await.map_err(db_failure("commit"))?;
    Ok(())
}

/// The event rows of every applied session, after the session rows (which give the keys), then
/// the event counts that changed.
async fn write_events<'a>(
    tx: &mut Transaction<'_, Postgres>,
    plans: &[Plan<'a>],
) -> Result<(), IngestError> {
    let stored: Vec<_> = plans
        .iter()
        .filter(|p| !p.is_new)
        .filter_map(|p| {
            p.state.id.map(|session_pk| StoredSession {
                session_pk,
                events: p.events.values().copied().collect(),
                replace: p.replace_events,
                stored_count: p.state.event_count,
            })
        })
        .collect();
    let (mut append, counts) = event_rows::write_stored(tx, &stored).await?;
    // A new session's events all go in (its count was written with its row), in the same COPY
    // as the seqs stored sessions lacked.
    append.extend(plans.iter().filter(|p| p.is_new).filter_map(|p| {
        p.state.id.map(|session_pk| SessionEvents {
            session_pk,
            events: p.events.values().copied().collect(),
        })
    }));
    event_rows::append(tx, &append).await?;
    event_rows::write_counts(tx, &counts).await
}

/// The contract's chunk rules, applied to one session's chunks of this batch in index order.
fn plan_session<'a>(
    session_id: &'a str,
    mut state: Stored,
    chunks: &[&'a Session],
    frustration_opt_in: bool,
) -> Result<Plan<'a>, IngestError> {
    let mut plan_events = BTreeMap::new();
    let mut applied = false;
    let mut replace_events = false;
    for s in chunks {
        if state
            .updated_at
            .is_some_and(|stored| s.updated_at.at < stored)
        {
            // No regression: an older device state is acknowledged and not applied.
            continue;
        }
        let rev = s.data_revision.as_str();
        let is_committed = state.committed.as_deref() == Some(rev);
        if s.chunk.index == 0 {
            if !is_committed {
                // A new revision starts: its events replace the stored ones (omitted events
                // delete nothing), and it is pending until its last chunk.
                if s.events.is_some() {
                    replace_events = true;
                    plan_events.clear();
                }
                state.pending = Some(rev.to_owned());
            }
            // Chunk 0 of the committed revision is a replay: upsert by seq, delete nothing.
        } else if state.pending.as_deref() != Some(rev) && !is_committed {
            tracing::info!(
                session_id,
                chunk = s.chunk.index,
                "chunk of a revision that is neither pending nor committed"
            );
            return Err(IngestError::ChunkOutOfSequence);
        }
        if s.chunk.is_last() && state.pending.as_deref() == Some(rev) {
            state.committed = Some(rev.to_owned());
            state.pending = None;
        }
        for e in s.events.iter().flatten() {
            plan_events.insert(e.seq, e);
        }
        let clean = sanitize(s, frustration_opt_in);
        merge(&mut state.payload, clean.blob);
        if clean.frustration.is_some() {
            state.frustration = clean.frustration;
        }
        state.updated_at = Some(s.updated_at.at);
        applied = true;
    }
    Ok(Plan {
        session_id,
        is_new: state.id.is_none(),
        state,
        applied,
        replace_events,
        events: plan_events,
    })
}

async fn lock_sessions(
    tx: &mut Transaction<'_, Postgres>,
    target: &str,
    ids: &[&str],
) -> Result<(), IngestError> {
    // The key is length-prefixed so target and session id cannot run into each other; locks are
    // taken in hash order, the same order in every transaction.
    let keys: Vec<String> = ids
        .iter()
        .map(|s| format!("{}:{target}{s}", target.len()))
        .collect();
    sqlx::query(
        "SELECT count(pg_advisory_xact_lock($1, h))
           FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($2::text[]) AS k ORDER BY h OFFSET 0) AS l",
    )
    .bind(SESSION_LOCK_CLASS)
    .bind(&keys)
    .execute(&mut **tx)
    .await
    .map_err(db_failure("lock sessions"))?;
    Ok(())
}

async fn load(
    tx: &mut Transaction<'_, Postgres>,
    target: &str,
    ids: &[&str],
) -> Result<HashMap<String, Stored>, IngestError> {
    type Row = (
        i64,
        String,
        DateTime<Utc>,
        Option<String>,
        Option<String>,
        Value,
        Option<Value>,
        i32,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT id, session_id, updated_at, committed_revision, pending_revision, payload,
                frustration, event_count
           FROM agent_sessions WHERE compute_target_id = $1 AND session_id = ANY($2)",
    )
    .bind(target)
    .bind(ids)
    .fetch_all(&mut **tx)
    .await
    .map_err(db_failure("load sessions"))?;
    Ok(rows
        .into_iter()
        .map(
            |(id, sid, updated_at, committed, pending, payload, frustration, event_count)| {
                let payload = match payload {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                (
                    sid,
                    Stored {
                        id: Some(id),
                        updated_at: Some(updated_at),
                        committed,
                        pending,
                        payload,
                        frustration,
                        event_count,
                    },
                )
            },
        )
        .collect())
}

/// Promoted columns, read from the merged blob (one source for the blob and the columns).
fn text(blob: &Map<String, Value>, path: &[&str]) -> Option<String> {
    lookup(blob, path)?.as_str().map(str::to_owned)
}

fn time(blob: &Map<String, Value>, key: &str) -> Option<DateTime<Utc>> {
    let raw = lookup(blob, &[key])?.as_str()?;
    DateTime::parse_from_rfc3339(raw)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn int(blob: &Map<String, Value>, path: &[&str]) -> Option<i64> {
    lookup(blob, path)?
        .as_u64()
        .and_then(|v| i64::try_from(v).ok())
}

fn lookup<'m>(blob: &'m Map<String, Value>, path: &[&str]) -> Option<&'m Value> {
    let (first, rest) = path.split_first()?;
    let mut v = blob.get(*first)?;
    for key in rest {
        v = v.as_object()?.get(*key)?;
    }
    Some(v)
}

/// The upsert of the applied sessions' rows, one `unnest` of [`SessionColumns`]: new rows go in,
/// stored ones are updated only when a column differs (`IS DISTINCT FROM`), so a repeated batch
/// rewrites nothing. `$1` is the org, `$2` the compute target.
const UPSERT_SESSIONS: &str =
    "INSERT INTO agent_sessions AS s (org_id, compute_target_id, session_id, updated_at,
                committed_revision, pending_revision, agent, model, title, status, started_at,
                ended_at, repository_remote_url, repository_branch, repository_commit_sha,
                input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
                frustration, payload, event_count)
         SELECT $1, $2, u.sid, u.upd, u.com, u.pen, u.agent, u.model, u.title, u.status, u.st,
                u.en, u.remote, u.branch, u.sha, u.i, u.o, u.cr, u.cw, u.cost,
                u.fr::jsonb, u.payload::jsonb, u.n
           FROM unnest($3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[],
                       $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
                       $13::text[], $14::timestamptz[], $15::timestamptz[], $16::int8[],
                       $17::int8[], $18::int8[], $19::int8[], $20::float8[], $21::text[],
                       $22::text[], $23::int4[])
                AS u(sid, upd, com, pen, agent, model, title, status, remote, branch, sha, st,
                     en, i, o, cr, cw, cost, fr, payload, n)
         ON CONFLICT (compute_target_id, session_id) DO UPDATE SET
                updated_at = EXCLUDED.updated_at,
                committed_revision = EXCLUDED.committed_revision,
                pending_revision = EXCLUDED.pending_revision,
                agent = EXCLUDED.agent, model = EXCLUDED.model, title = EXCLUDED.title,
                status = EXCLUDED.status, started_at = EXCLUDED.started_at,
                ended_at = EXCLUDED.ended_at,
                repository_remote_url = EXCLUDED.repository_remote_url,
                repository_branch = EXCLUDED.repository_branch,
                repository_commit_sha = EXCLUDED.repository_commit_sha,
                input_tokens = EXCLUDED.input_tokens, output_tokens = EXCLUDED.output_tokens,
                cache_read_tokens = EXCLUDED.cache_read_tokens,
                cache_write_tokens = EXCLUDED.cache_write_tokens,
                cost_usd = EXCLUDED.cost_usd, frustration = EXCLUDED.frustration,
                payload = EXCLUDED.payload, last_synced_at = now()
          WHERE (s.updated_at, s.committed_revision, s.pending_revision, s.agent, s.model,
                 s.title, s.status, s.started_at, s.ended_at, s.repository_remote_url,
                 s.repository_branch, s.repository_commit_sha, s.input_tokens, s.output_tokens,
                 s.cache_read_tokens, s.cache_write_tokens, s.cost_usd, s.frustration, s.payload)
                IS DISTINCT FROM
                (EXCLUDED.updated_at, EXCLUDED.committed_revision, EXCLUDED.pending_revision,
                 EXCLUDED.agent, EXCLUDED.model, EXCLUDED.title, EXCLUDED.status,
                 EXCLUDED.started_at, EXCLUDED.ended_at, EXCLUDED.repository_remote_url,
                 EXCLUDED.repository_branch, EXCLUDED.repository_commit_sha,
                 EXCLUDED.input_tokens, EXCLUDED.output_tokens, EXCLUDED.cache_read_tokens,
                 EXCLUDED.cache_write_tokens, EXCLUDED.cost_usd, EXCLUDED.frustration,
                 EXCLUDED.payload)
         RETURNING s.id, s.session_id";

/// The text columns read from a session's blob, by their path in it, in the statement's order
/// (`$7` to `$13`: agent, model, title, status, repository remote, branch, commit).
const TEXT_PATHS: [&[&str]; 7] = [
    &["agent"],
    &["model"],
    &["title"],
    &["status"],
    &["repository", "remoteUrl"],
    &["repository", "branch"],
    &["repository", "commitSha"],
];
/// The token counts under the blob's `usage`, in the statement's order (`$16` to `$19`).
const TOKEN_KEYS: [&str; 4] = [
    "inputTokens",
    "outputTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
];

/// The `agent_sessions` columns of the applied sessions: one vector per column, filled session
/// by session from the merged blob (one source for the blob and the columns), then bound at once
/// in [`UPSERT_SESSIONS`]'s order.
#[derive(Default)]
struct SessionColumns<'a> {
    session_id: Vec<&'a str>,
    updated_at: Vec<Option<DateTime<Utc>>>,
    /// The committed and the pending revision.
    revisions: [Vec<Option<String>>; 2],
    /// [`TEXT_PATHS`], one vector each.
    texts: [Vec<Option<String>>; TEXT_PATHS.len()],
    /// `startedAt` and `endedAt`.
    times: [Vec<Option<DateTime<Utc>>>; 2],
    /// [`TOKEN_KEYS`], one vector each.
    tokens: [Vec<Option<i64>>; TOKEN_KEYS.len()],
    cost_usd: Vec<Option<f64>>,
    frustration: Vec<Option<String>>,
    payload: Vec<String>,
    event_count: Vec<i32>,
}

impl<'a> SessionColumns<'a> {
    fn of(plans: &[Plan<'a>]) -> Self {
        let mut columns = Self::default();
        for p in plans {
            columns.push(p);
        }
        columns
    }

    fn push(&mut self, p: &Plan<'a>) {
        let b = &p.state.payload;
        self.session_id.push(p.session_id);
        self.updated_at.push(p.state.updated_at);
        self.revisions[0].push(p.state.committed.clone());
        self.revisions[1].push(p.state.pending.clone());
        for (column, path) in self.texts.iter_mut().zip(TEXT_PATHS) {
            column.push(text(b, path));
        }
        self.times[0].push(time(b, "startedAt"));
        self.times[1].push(time(b, "endedAt"));
        for (column, key) in self.tokens.iter_mut().zip(TOKEN_KEYS) {
            column.push(int(b, &["usage", key]));
        }
        self.cost_usd
            .push(lookup(b, &["usage", "costUsd"]).and_then(Value::as_f64));
        self.frustration
            .push(p.state.frustration.as_ref().map(Value::to_string));
        // Serialized in place: a map of strings and numbers always serializes.
        self.payload
            .push(serde_json::to_string(b).unwrap_or_default());
        // Only a new row takes this (a stored row's count is not in the update): it has exactly
        // the events of this batch. Bounded by the decoded cap, far below i32::MAX.
        self.event_count
            .push(if p.is_new { p.events.len() as i32 } else { 0 });
    }

    /// Bind every column, `$3` onwards, in the statement's order.
    fn bind<'q, O>(
        &'q self,
        query: QueryAs<'q, Postgres, O, PgArguments>,
    ) -> QueryAs<'q, Postgres, O, PgArguments> {
        let query = query.bind(&self.session_id).bind(&self.updated_at);
        let query = self.revisions.iter().fold(query, |q, c| q.bind(c));
        let query = self.texts.iter().fold(query, |q, c| q.bind(c));
        let query = self.times.iter().fold(query, |q, c| q.bind(c));
        self.tokens
            .iter()
            .fold(query, |q, c| q.bind(c))
            .bind(&self.cost_usd)
            .bind(&self.frustration)
            .bind(&self.payload)
            .bind(&self.event_count)
    }
}

/// Upsert the applied sessions' rows; every plan then knows its row's id.
async fn write_sessions(
    tx: &mut Transaction<'_, Postgres>,
    org_id: i64,
    target: &str,
    plans: &mut [Plan<'_>],
) -> Result<(), IngestError> {
    let columns = SessionColumns::of(plans);
    let query = sqlx::query_as(UPSERT_SESSIONS).bind(org_id).bind(target);
    let returned: Vec<(i64, String)> = columns
        .bind(query)
        .fetch_all(&mut **tx)
        .await
        .map_err(db_failure("upsert sessions"))?;
    // New sessions learn their id here; unchanged ones already had it.
    let ids: HashMap<String, i64> = returned.into_iter().map(|(id, s)| (s, id)).collect();
    for p in plans.iter_mut() {
        if p.state.id.is_none() {
            p.state.id = ids.get(p.session_id).copied();
        }
        if p.state.id.is_none() {
            tracing::error!(
                session_id = p.session_id,
                "session row has no id after upsert"
            );
            return Err(IngestError::IngestionFailed);
        }
    }
    Ok(())
}
