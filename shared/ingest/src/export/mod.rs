//! Export (issue 34 point 4): an organization's sessions as JSON Lines or CSV, and a session's
//! transcript as its redacted JSON Lines, with the org's read token.
//!
//! - `GET /api/agent-sessions/sessions/export?format=jsonl|csv&since=&until=&computeTargetId=`:
//!   the sessions the console lists, oldest update first ([`sessions`]).
//! - `GET /api/agent-sessions/transcripts/export?computeTargetId=&sessionId=[&fileId=]`: the
//!   session's transcript files as they were uploaded, secrets already redacted ([`transcript`]).
//!
//! Never whole in memory: a [`Plan`] (the read token, the parameters and, for a transcript, that
//! the session is the org's: every refusal is answered before the first byte) is written by one
//! task into a bounded channel of [`CHUNK_BYTES`] chunks ([`start`]), from keyset pages of
//! sessions or one stored segment at a time. What reads the channel decides the delivery:
//! `syncplane serve` streams it to the client as it comes; the ingest function behind API
//! Gateway (whose HTTP APIs buffer a Lambda's answer, 6 MB at most) sends it to the transcript
//! bucket by multipart upload and answers `303` to a presigned GET of it ([`deliver`]); the CLI
//! writes it to stdout (`syncplane export`).

pub mod deliver;
pub mod sessions;
pub mod transcript;

use lambda_http::Request;
use sqlx::PgPool;
use syncplane_archive::store::{Store, StoreError};
use syncplane_contract::transcripts::path;
use tokio::sync::mpsc;

use crate::error::IngestError;
use crate::rate_limit::{Window, check_window};
use crate::transcripts::read::Params;
use syncplane_accounts::tokens;

/// The sessions export's path.
pub const SESSIONS_PATH: &str = "/api/agent-sessions/sessions/export";
/// The transcript export's path.
pub const TRANSCRIPT_PATH: &str = path::EXPORT;
/// Bytes per chunk the writer hands on.
pub const CHUNK_BYTES: usize = 64 * 1024;
/// Chunks waiting in the channel at most: with one chunk being filled and one being sent, an
/// export holds at most this many plus two in memory, whatever its size.
pub const CHANNEL_CHUNKS: usize = 8;

/// Whether `path` is one of the export routes.
pub fn owns(path: &str) -> bool {
    path == SESSIONS_PATH || path == TRANSCRIPT_PATH
}

/// An export, checked and ready to write.
#[derive(Debug, Clone)]
pub enum Plan {
    Sessions(sessions::Plan),
    Transcript(transcript::Plan),
}

impl Plan {
    /// The export `req` asks for (its path one of [`owns`]): `405` for a method other than GET,
    /// `401` without the org's read token, `429 rate_limited` past `per_minute` exports of the
    /// token in the minute, `400` (`invalid_parameter`, `invalid_compute_target_id`,
    /// `invalid_session_id`, `invalid_file_id`) for a parameter, `404` for a session or file the
    /// org does not have.
    pub async fn from_request(
        pool: &PgPool,
        req: &Request,
        per_minute: u32,
    ) -> Result<Self, IngestError> {
        if req.method() != http::Method::GET {
            return Err(IngestError::MethodNotAllowed { allow: "GET" });
        }
        let reader = tokens::authenticate_reader(pool, req.headers()).await?;
        let token = reader.token_id.to_string();
        check_window(pool, Window::TranscriptExports, &token, per_minute).await?;
        if syncplane_core::http::route_path(req) == SESSIONS_PATH {
            let params = Params::parse(req, sessions::PARAMS)?;
            Ok(Self::Sessions(sessions::Plan::parse(
                reader.org_id,
                &params,
            )?))
        } else {
            let params = Params::parse(req, transcript::PARAMS)?;
            transcript::Plan::find(pool, reader.org_id, &params)
                .await
                .map(Self::Transcript)
        }
    }

    /// The organization exported.
    pub fn org_id(&self) -> i64 {
        match self {
            Self::Sessions(p) => p.org_id,
            Self::Transcript(p) => p.org_id,
        }
    }

    /// The body's media type.
    pub fn content_type(&self) -> &'static str {
        match self {
            Self::Sessions(p) => p.format.content_type(),
            Self::Transcript(_) => transcript::CONTENT_TYPE,
        }
    }

    /// The file's extension.
    pub fn extension(&self) -> &'static str {
        match self {
            Self::Sessions(p) => p.format.extension(),
            Self::Transcript(_) => "jsonl",
        }
    }

    /// The name a download is saved under: ASCII letters, digits, `.`, `-` and `_` only (safe in
    /// a `Content-Disposition` header), the stem cut at 100 characters, the extension kept.
    pub fn filename(&self) -> String {
        let stem = match self {
            Self::Sessions(p) => format!("sessions-{}", p.org_id),
            Self::Transcript(p) => format!("transcript-{}", p.session_id),
        };
        let stem: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    c
                } else {
                    '_'
                }
            })
            .take(100)
            .collect();
        format!("{stem}.{}", self.extension())
    }

    /// Write the export to `out`.
    pub async fn write(
        self,
        pool: &PgPool,
        store: &Store,
        out: &mut Chunks,
    ) -> Result<(), ExportError> {
        match self {
            Self::Sessions(p) => sessions::write(&p, pool, out).await,
            Self::Transcript(p) => transcript::write(&p, pool, store, out).await,
        }
    }
}

/// Why an export stopped after its first byte (the response's status is gone by then: the
/// stream ends early, and the detail goes to the logs).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error(
        "a stored segment ({0}) is not in the transcript store (TRANSCRIPT_BUCKET, else \
         TRANSCRIPT_DATA_DIR) or does not inflate to its recorded size"
    )]
    Segment(String),
    #[error("encoding: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("the reader went away")]
    Closed,
    #[error("the export's writer stopped: {0}")]
    Stopped(String),
}

/// A chunk of an export, or why it stopped.
pub type Chunk = Result<Vec<u8>, ExportError>;

/// The writing end: bytes gathered into chunks of [`CHUNK_BYTES`], each sent when full.
pub struct Chunks {
    tx: mpsc::Sender<Chunk>,
    buf: Vec<u8>,
}

impl Chunks {
    pub fn new(tx: mpsc::Sender<Chunk>) -> Self {
        Self {
            tx,
            buf: Vec::with_capacity(CHUNK_BYTES),
        }
    }

    /// The buffer to append to; call [`Chunks::flush_full`] after.
    pub fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Send the buffer if it holds a chunk's worth.
    pub async fn flush_full(&mut self) -> Result<(), ExportError> {
        if self.buf.len() >= CHUNK_BYTES {
            self.send().await?;
        }
        Ok(())
    }

    /// Append `bytes`, sending each chunk as it fills: a whole segment (up to 16 MiB decoded)
    /// goes out in [`CHUNK_BYTES`] pieces, never as one chunk.
    pub async fn push(&mut self, mut bytes: &[u8]) -> Result<(), ExportError> {
        while !bytes.is_empty() {
            let room = CHUNK_BYTES.saturating_sub(self.buf.len()).max(1);
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            self.buf.extend_from_slice(now);
            self.flush_full().await?;
            bytes = rest;
        }
        Ok(())
    }

    async fn send(&mut self) -> Result<(), ExportError> {
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES));
        self.tx
            .send(Ok(chunk))
            .await
            .map_err(|_| ExportError::Closed)
    }

    /// Send what is left.
    pub async fn finish(&mut self) -> Result<(), ExportError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.send().await
    }
}

/// Write `plan` in a task of its own; the chunks come out of the returned channel, which closes
/// at the end. A failure is logged and sent as the last item (the reader stops there), a panic
/// of the writer too: the channel closes without an error only when the export is whole.
pub fn start(plan: Plan, pool: PgPool, store: Store) -> mpsc::Receiver<Chunk> {
    let (tx, rx) = mpsc::channel(CHANNEL_CHUNKS);
    let mut out = Chunks::new(tx.clone());
    let org = plan.org_id();
    let writer = tokio::spawn(async move {
        match plan.write(&pool, &store, &mut out).await {
            Ok(()) => out.finish().await,
            Err(e) => Err(e),
        }
    });
    // The watcher holds a sender until the writer is done, so the channel cannot close first.
    tokio::spawn(async move {
        let failed = match writer.await {
            Ok(Ok(())) | Ok(Err(ExportError::Closed)) => None,
            Ok(Err(e)) => Some(e),
            Err(panicked) => Some(ExportError::Stopped(panicked.to_string())),
        };
        if let Some(e) = failed {
            tracing::error!(org, error = %e, "export stopped");
            let _ = tx.send(Err(e)).await;
        }
    });
    rx
}

/// The chunks of `rx` as a stream of bytes (for an HTTP body).
pub fn stream(
    rx: mpsc::Receiver<Chunk>,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static {
    futures::stream::unfold(rx, |mut rx| async move {
        let next = rx.recv().await?;
        Some((
            next.map(bytes::Bytes::from).map_err(std::io::Error::other),
            rx,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_large_write_leaves_in_chunks_of_at_most_64_kib() {
        let (tx, mut rx) = mpsc::channel(1024);
        let mut out = Chunks::new(tx);
        out.push(b"head\n").await.unwrap();
        out.push(&vec![b'x'; 1024 * 1024]).await.unwrap();
        out.finish().await.unwrap();
        drop(out);
        let mut sizes = Vec::new();
        while let Some(chunk) = rx.recv().await {
            sizes.push(chunk.unwrap().len());
        }
        assert!(sizes.iter().all(|n| *n <= CHUNK_BYTES), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 1024 * 1024 + 5);
        assert_eq!(sizes.len(), (1024 * 1024 + 5_usize).div_ceil(CHUNK_BYTES));
    }
}
