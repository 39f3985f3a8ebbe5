//! `GET /api/repos/{owner}/{name}/images?path={document}&src={reference}`: an image a synced
//! document references, served from the sync API's own origin so the web console shows it under
//! its strict Content-Security-Policy (issue 31 point 6).
//!
//! Who may read the document may read its images: the read API's tokens and tenant, and the
//! image must be one the document at `path` references as written (`src`, relative: see
//! `sync::parse::images`), resolved to a file of the repository. The first view fetches it from
//! the repository at the synced commit with the installation token (the directory listings the
//! last plan kept, then one tree level per folder not kept, then the blob), refuses it past
//! [`MAX_IMAGE_BYTES`] (known from the tree, before any byte is fetched) or when its bytes are not
//! a raster image (PNG, JPEG, GIF, WebP, AVIF) or an SVG, and keeps it by blob SHA; what a
//! reference came to is kept too, so every later view is one query.
//!
//! The answer is the image's bytes with its type, `nosniff`, a sandboxing Content-Security-Policy
//! (an SVG opened on its own runs nothing) and its blob SHA as the `ETag` (`304` when it matches).
//! Refusals are the read API's envelope: `404 image_not_found`, `413 image_too_large`, `415
//! image_type_unsupported`.

use sqlx::PgPool;

use super::super::error::{ApiError, db_failure};
use super::params::{Params, repo_path};
use super::repos::Repo;
use syncplane_engine::sync::parse::images;
use syncplane_github::{EntryKind, GithubClient, GithubError};

/// An image's bytes at most.
pub(crate) const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// The query parameters of the route.
pub(crate) const PARAMS: &[&str] = &["path", "src"];

/// The Content-Security-Policy an image is served with: nothing of its own runs or loads.
pub(crate) const IMAGE_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

/// An image found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub content_type: String,
    pub bytes: Vec<u8>,
    pub blob_sha: String,
}

/// What a reference came to at a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Found,
    Missing,
    TooLarge,
    Unsupported,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Found => "found",
            Self::Missing => "missing",
            Self::TooLarge => "too_large",
            Self::Unsupported => "unsupported",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "found" => Self::Found,
            "too_large" => Self::TooLarge,
            "unsupported" => Self::Unsupported,
            _ => Self::Missing,
        }
    }

    fn refusal(self) -> ApiError {
        match self {
            Self::TooLarge => ApiError::ImageTooLarge,
            Self::Unsupported => ApiError::ImageTypeUnsupported,
            Self::Found | Self::Missing => ApiError::ImageNotFound,
        }
    }
}

/// The image type of `bytes` by their content (never by a file name).
pub(crate) fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let starts = |p: &[u8]| bytes.starts_with(p);
    if starts(b"\x89PNG\r\n\x1a\n") {
        return Some("image/png");
    }
    if starts(b"\xff\xd8\xff") {
        return Some("image/jpeg");
    }
    if starts(b"GIF87a") || starts(b"GIF89a") {
        return Some("image/gif");
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return Some("image/webp");
    }
    if bytes.len() >= 12 && &bytes[4..8] == b"ftyp" && matches!(&bytes[8..12], b"avif" | b"avis") {
        return Some("image/avif");
    }
    // SVG is text: an `<svg` element before anything but a BOM, an XML declaration, comments
    // and a doctype.
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]);
    let head = head.trim_start_matches('\u{feff}').trim_start();
    let lower = head.to_ascii_lowercase();
    if (lower.starts_with("<svg")
        || lower.starts_with("<?xml")
        || lower.starts_with("<!--")
        || lower.starts_with("<!doctype svg"))
        && lower.contains("<svg")
    {
        return Some("image/svg+xml");
    }
    None
}

/// The reference's image, from the cache or fetched once from the repository.
pub async fn fetch(
    pool: &PgPool,
    client: Option<&GithubClient>,
    repo: &Repo,
    params: &Params,
) -> Result<Image, ApiError> {
    let doc_path = repo_path(params.required("path")?, false)?;
    let src = params.required("src")?;
    let commit = repo
        .head_commit_sha
        .as_deref()
        .ok_or(ApiError::ImageNotFound)?;
    if let Some(known) = cached(pool, repo.id, commit, &doc_path, src).await? {
        return known;
    }
    let source = document_source(pool, repo.id, &doc_path).await?;
    if !images::references(&doc_path, &source)
        .iter()
        .any(|r| r == src)
    {
        return Err(ApiError::ImageNotFound);
    }
    let image_path = images::resolve(&doc_path, src).ok_or(ApiError::ImageNotFound)?;
    let key = Key {
        repo: repo.id,
        commit,
        doc_path: &doc_path,
        src,
        image_path: &image_path,
    };
    // The same file, referenced by another document (or written otherwise) at this commit.
    if let Some((outcome, blob)) = by_image_path(pool, &key).await? {
        record(pool, &key, outcome, blob.as_deref()).await?;
        return cached(pool, repo.id, commit, &doc_path, src)
            .await?
            .unwrap_or(Err(ApiError::ImageNotFound));
    }
    let client = client.ok_or(ApiError::GithubNotConfigured)?;
    let (outcome, image) = from_github(pool, client, repo, &key).await?;
    record(
        pool,
        &key,
        outcome,
        image.as_ref().map(|i| i.blob_sha.as_str()),
    )
    .await?;
    image.ok_or_else(|| outcome.refusal())
}

struct Key<'a> {
    repo: i64,
    commit: &'a str,
    doc_path: &'a str,
    src: &'a str,
    image_path: &'a str,
}

type Cached = Option<Result<Image, ApiError>>;

/// A kept reference: its outcome, and the blob's SHA, type and bytes when found.
type KeptRow = (String, Option<String>, Option<String>, Option<Vec<u8>>);

async fn cached(
    pool: &PgPool,
    repo: i64,
    commit: &str,
    doc_path: &str,
    src: &str,
) -> Result<Cached, ApiError> {
    let row: Option<KeptRow> = sqlx::query_as(
        "SELECT d.outcome, d.blob_sha, b.content_type, b.bytes
           FROM document_images d LEFT JOIN image_blobs b ON b.blob_sha = d.blob_sha
          WHERE d.repo_id = $1 AND d.commit_sha = $2 AND d.doc_path = $3 AND d.src = $4",
    )
    .bind(repo)
    .bind(commit)
    .bind(doc_path)
    .bind(src)
    .fetch_optional(pool)
    .await
    .map_err(db_failure("read an image"))?;
    Ok(row.map(|(outcome, blob, content_type, bytes)| {
        match (Outcome::parse(&outcome), blob, content_type, bytes) {
            (Outcome::Found, Some(blob_sha), Some(content_type), Some(bytes)) => Ok(Image {
                content_type,
                bytes,
                blob_sha,
            }),
            (outcome, ..) => Err(outcome.refusal()),
        }
    }))
}

/// The stored source of the document (or README) at `path`.
async fn document_source(pool: &PgPool, repo: i64, path: &str) -> Result<String, ApiError> {
    let source: Option<Option<String>> = sqlx::query_scalar(
        "SELECT source FROM documents WHERE repo_id = $1 AND path = $2
         UNION ALL SELECT source FROM readmes WHERE repo_id = $1 AND path = $2 LIMIT 1",
    )
    .bind(repo)
    .bind(path)
    .fetch_optional(pool)
    .await
    .map_err(db_failure("read a document's source"))?;
    match source {
        None => Err(ApiError::DocumentNotFound),
        // Synced before sources were kept: its images are not known yet.
        Some(None) => Err(ApiError::ImageNotFound),
        Some(Some(s)) => Ok(s),
    }
}

async fn by_image_path(
    pool: &PgPool,
    key: &Key<'_>,
) -> Result<Option<(Outcome, Option<String>)>, ApiError> {
    let row: Option<(String, Option<String>)> = sqlx::query_as(
        "SELECT outcome, blob_sha FROM document_images
          WHERE repo_id = $1 AND commit_sha = $2 AND image_path = $3 LIMIT 1",
    )
    .bind(key.repo)
    .bind(key.commit)
    .bind(key.image_path)
    .fetch_optional(pool)
    .await
    .map_err(db_failure("look up an image"))?;
    Ok(row.map(|(o, b)| (Outcome::parse(&o), b)))
}

/// Keep what the reference came to, and forget the rows of the repository's older commits (and
/// the blobs no row names any more).
async fn record(
    pool: &PgPool,
    key: &Key<'_>,
    outcome: Outcome,
    blob: Option<&str>,
) -> Result<(), ApiError> {
    let mut tx = pool.begin().await.map_err(db_failure("record an image"))?;
    sqlx::query(
        "INSERT INTO document_images (repo_id, commit_sha, doc_path, src, image_path, outcome, blob_sha)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
    )
    .bind(key.repo)
    .bind(key.commit)
    .bind(key.doc_path)
    .bind(key.src)
    .bind(key.image_path)
    .bind(outcome.as_str())
    .bind(blob)
    .execute(&mut *tx)
    .await
    .map_err(db_failure("record an image"))?;
    let stale = sqlx::query("DELETE FROM document_images WHERE repo_id = $1 AND commit_sha <> $2")
        .bind(key.repo)
        .bind(key.commit)
        .execute(&mut *tx)
        .await
        .map_err(db_failure("forget old images"))?;
    if stale.rows_affected() > 0 {
        sqlx::query(
            "DELETE FROM image_blobs b
              WHERE NOT EXISTS (SELECT 1 FROM document_images d WHERE d.blob_sha = b.blob_sha)",
        )
        .execute(&mut *tx)
        .await
        .map_err(db_failure("forget old images"))?;
    }
    tx.commit().await.map_err(db_failure("record an image"))
}

/// The file at `key.image_path` at the synced commit: its tree entry (the last plan's listings
/// first, then one tree level per folder), then its bytes unless a blob of that SHA is kept.
async fn from_github(
    pool: &PgPool,
    client: &GithubClient,
    repo: &Repo,
    key: &Key<'_>,
) -> Result<(Outcome, Option<Image>), ApiError> {
    let (folder, name) = key
        .image_path
        .rsplit_once('/')
        .unwrap_or(("", key.image_path));
    let Some(tree) = folder_tree(pool, client, repo, key.commit, folder).await? else {
        return Ok((Outcome::Missing, None));
    };
    let Some(listing) = level(client, repo, &tree).await? else {
        return Ok((Outcome::Missing, None));
    };
    let Some(entry) = listing
        .entries
        .iter()
        .find(|e| e.path == name && e.kind == EntryKind::Blob)
    else {
        return Ok((Outcome::Missing, None));
    };
    if entry.size.unwrap_or(u64::MAX) > MAX_IMAGE_BYTES {
        return Ok((Outcome::TooLarge, None));
    }
    if let Some(kept) = kept_blob(pool, &entry.sha).await? {
        return Ok((Outcome::Found, Some(kept)));
    }
    let bytes = client
        .blob(&repo.owner, &repo.name, &entry.sha)
        .await
        .map_err(ApiError::Github)?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Ok((Outcome::TooLarge, None));
    }
    let Some(content_type) = sniff(&bytes) else {
        return Ok((Outcome::Unsupported, None));
    };
    let image = Image {
        content_type: content_type.to_owned(),
        bytes: bytes.to_vec(),
        blob_sha: entry.sha.clone(),
    };
    sqlx::query(
        "INSERT INTO image_blobs (blob_sha, content_type, bytes, size_bytes) VALUES ($1, $2, $3, $4)
         ON CONFLICT (blob_sha) DO NOTHING",
    )
    .bind(&image.blob_sha)
    .bind(&image.content_type)
    .bind(&image.bytes)
    .bind(i32::try_from(image.bytes.len()).unwrap_or(i32::MAX))
    .execute(pool)
    .await
    .map_err(db_failure("keep an image"))?;
    Ok((Outcome::Found, Some(image)))
}

async fn kept_blob(pool: &PgPool, sha: &str) -> Result<Option<Image>, ApiError> {
    let row: Option<(String, Vec<u8>)> =
        sqlx::query_as("SELECT content_type, bytes FROM image_blobs WHERE blob_sha = $1")
            .bind(sha)
            .fetch_optional(pool)
            .await
            .map_err(db_failure("read a kept image"))?;
    Ok(row.map(|(content_type, bytes)| Image {
        content_type,
        bytes,
        blob_sha: sha.to_owned(),
    }))
}

/// The tree SHA of `folder` at `commit`: the nearest folder the last plan listed (when that plan
/// read the synced commit's root tree: a head that moved without a plan keeps older listings),
/// else the commit itself; then one tree level per folder below it.
async fn folder_tree(
    pool: &PgPool,
    client: &GithubClient,
    repo: &Repo,
    commit: &str,
    folder: &str,
) -> Result<Option<String>, ApiError> {
    let known: Vec<(String, String)> = sqlx::query_as(
        "SELECT t.path, t.sha FROM plan_trees t JOIN repos r ON r.id = t.repo_id
          WHERE t.repo_id = $1
            AND (SELECT root.sha FROM plan_trees root
                  WHERE root.repo_id = $1 AND root.path = '') = r.tree_sha",
    )
    .bind(repo.id)
    .fetch_all(pool)
    .await
    .map_err(db_failure("read the plan's trees"))?;
    let (mut at, mut sha) = known
        .into_iter()
        .filter(|(p, _)| p.is_empty() || folder == p || folder.starts_with(&format!("{p}/")))
        .max_by_key(|(p, _)| p.len())
        .unwrap_or_else(|| (String::new(), commit.to_owned()));
    for seg in folder
        .split('/')
        .filter(|s| !s.is_empty())
        .skip(segments(&at))
    {
        let Some(listing) = level(client, repo, &sha).await? else {
            return Ok(None);
        };
        let Some(next) = listing
            .entries
            .iter()
            .find(|e| e.path == seg && e.kind == EntryKind::Tree)
        else {
            return Ok(None);
        };
        sha = next.sha.clone();
        at = if at.is_empty() {
            seg.to_owned()
        } else {
            format!("{at}/{seg}")
        };
    }
    Ok(Some(sha))
}

/// One tree level (`None`: GitHub has no such tree, as for a commit no longer reachable).
async fn level(
    client: &GithubClient,
    repo: &Repo,
    sha: &str,
) -> Result<Option<syncplane_github::Tree>, ApiError> {
    match client.tree_level(&repo.owner, &repo.name, sha).await {
        Ok(tree) => Ok(Some(tree)),
        Err(GithubError::NotFound) => Ok(None),
        Err(e) => Err(ApiError::Github(e)),
    }
}

fn segments(path: &str) -> usize {
    if path.is_empty() {
        0
    } else {
        path.split('/').count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_type_is_its_bytes_not_its_name() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0...."), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a..."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"\0\0\0\x1cftypavif\0\0"), Some("image/avif"));
        assert_eq!(
            sniff(b"<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>"),
            Some("image/svg+xml")
        );
        assert_eq!(sniff(b"\xef\xbb\xbf<svg></svg>"), Some("image/svg+xml"));
        for not in [
            &b"<html><body>x</body></html>"[..],
            b"plain text",
            b"",
            b"%PDF-1.7",
        ] {
            assert_eq!(sniff(not), None, "{not:?}");
        }
    }
}
