//! Retention you can see (issue 34 point 5): per organization, what the archive keeps (sessions,
//! files and segments, bytes stored compressed and decoded, the search index's lines), its oldest
//! segment and when that segment expires under the org's retention (`None`: kept until the
//! retention is set). Read by the ingest route `GET /api/agent-sessions/transcripts/retention`,
//! `syncplane transcripts usage`, and the `transcripts.expire` job's metrics.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

/// One organization's archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Kept {
    pub org_id: i64,
    pub org: String,
    /// Sessions with at least one transcript file, and those files.
    pub sessions: i64,
    pub files: i64,
    /// Segments stored (every generation's), their bytes as stored (zstd) and decoded.
    pub segments: i64,
    pub compressed_bytes: i64,
    pub decoded_bytes: i64,
    /// Rows of the search index (a line, or a part of a long one).
    pub indexed_lines: i64,
    pub oldest_segment_at: Option<DateTime<Utc>>,
    /// `orgs.transcript_retention_days`; `None` keeps everything.
    pub retention_days: Option<i32>,
    /// When the oldest segment is deleted (its recording plus the retention).
    pub oldest_expires_at: Option<DateTime<Utc>>,
}

#[derive(syncplane_core::FromRow)]
struct Row {
    org_id: i64,
    org: String,
    sessions: i64,
    files: i64,
    segments: i64,
    compressed_bytes: i64,
    decoded_bytes: i64,
    indexed_lines: i64,
    oldest_segment_at: Option<DateTime<Utc>>,
    retention_days: Option<i32>,
}

/// Every org's archive (`org_id: None`), or one org's.
pub async fn kept(pool: &PgPool, org_id: Option<i64>) -> Result<Vec<Kept>, sqlx::Error> {
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT o.id AS org_id, o.name AS org, o.transcript_retention_days AS retention_days,
                coalesce(f.sessions, 0) AS sessions, coalesce(f.files, 0) AS files,
                coalesce(s.segments, 0) AS segments,
                coalesce(s.compressed_bytes, 0) AS compressed_bytes,
                coalesce(s.decoded_bytes, 0) AS decoded_bytes,
                coalesce(l.lines, 0) AS indexed_lines, s.oldest AS oldest_segment_at
           FROM orgs o
           LEFT JOIN LATERAL (
                SELECT count(DISTINCT (compute_target_id, session_id)) AS sessions,
                       count(*) AS files
                  FROM transcript_files WHERE org_id = o.id) f ON true
           LEFT JOIN LATERAL (
                SELECT count(*) AS segments, sum(seg.compressed_bytes)::bigint AS compressed_bytes,
                       sum(seg.decoded_bytes)::bigint AS decoded_bytes, min(seg.created_at) AS oldest
                  FROM transcript_segments seg JOIN transcript_files tf ON tf.id = seg.file_row
                 WHERE tf.org_id = o.id) s ON true
           LEFT JOIN LATERAL (
                SELECT sum(cardinality(line_nos))::bigint AS lines
                  FROM transcript_line_groups WHERE org_id = o.id) l ON true
          WHERE $1::bigint IS NULL OR o.id = $1
          ORDER BY o.name",
    )
    .bind(org_id)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(Kept::from).collect())
}

impl From<Row> for Kept {
    fn from(r: Row) -> Self {
        let oldest_expires_at = match (r.oldest_segment_at, r.retention_days) {
            (Some(t), Some(days)) => Some(t + chrono::Duration::days(i64::from(days))),
            _ => None,
        };
        Self {
            org_id: r.org_id,
            org: r.org,
            sessions: r.sessions,
            files: r.files,
            segments: r.segments,
            compressed_bytes: r.compressed_bytes,
            decoded_bytes: r.decoded_bytes,
            indexed_lines: r.indexed_lines,
            oldest_segment_at: r.oldest_segment_at,
            retention_days: r.retention_days,
            oldest_expires_at,
        }
    }
}
