//! Diff and fetch (spec "One repository", step 4): only new or changed blobs are fetched, 8 in
//! flight, within a 64 MiB budget per pass.

use std::collections::HashMap;

use bytes::Bytes;
use futures::StreamExt;

use crate::sync::selection::PlannedFile;
use syncplane_github::{GithubClient, GithubError};

/// Blob requests in flight at once (spec "Limits").
pub const BLOBS_IN_FLIGHT: usize = 8;
/// Bytes fetched per pass at most; files past it wait for the next pass. It also bounds the
/// memory one repository's sync holds.
pub const FETCH_BUDGET_BYTES: u64 = 64 * 1024 * 1024;

/// The result of fetching a pass's blobs.
#[derive(Debug, Default)]
pub struct Fetched {
    /// path → content of every blob that arrived.
    pub blobs: HashMap<String, Bytes>,
    /// Paths whose fetch failed with a per-repository error.
    pub failed: Vec<String>,
    /// Paths left for the next pass because the budget was spent.
    pub deferred: Vec<String>,
    /// A run-stopping error, if one happened (the pass must write nothing).
    pub run_stop: Option<GithubError>,
}

/// Fetch `files` (in the order given) with [`BLOBS_IN_FLIGHT`] requests in flight, taking files
/// while their sizes fit [`FETCH_BUDGET_BYTES`].
pub(crate) async fn fetch_blobs(
    client: &GithubClient,
    owner: &str,
    name: &str,
    files: &[&PlannedFile],
) -> Fetched {
    fetch_blobs_within(client, owner, name, files, FETCH_BUDGET_BYTES).await
}

/// [`fetch_blobs`] with an explicit byte budget.
pub async fn fetch_blobs_within(
    client: &GithubClient,
    owner: &str,
    name: &str,
    files: &[&PlannedFile],
    budget_bytes: u64,
) -> Fetched {
    let mut out = Fetched::default();
    let mut budget = budget_bytes;
    let mut take = Vec::with_capacity(files.len());
    for file in files {
        // The first file is always taken, so a pass always makes progress.
        if file.size <= budget || take.is_empty() {
            budget = budget.saturating_sub(file.size);
            take.push(*file);
        } else {
            out.deferred.push(file.path.clone());
        }
    }
    // Owned values in each future: borrowed ones trip rustc's higher-ranked `Send` inference
    // when the whole sync is spawned on a multi-threaded runtime.
    let mut results = futures::stream::iter(take.into_iter().cloned())
        .map(|file| {
            let (client, owner, name) = (client.clone(), owner.to_owned(), name.to_owned());
            async move {
                let result = client.blob(&owner, &name, &file.blob_sha).await;
                (file, result)
            }
        })
        .buffer_unordered(BLOBS_IN_FLIGHT);
    while let Some((file, result)) = results.next().await {
        match result {
            Ok(bytes) => {
                out.blobs.insert(file.path.clone(), bytes);
            }
            Err(e) if e.is_run_stopping() => {
                out.run_stop = Some(e);
                // Stop issuing requests: the run is over.
                break;
            }
            Err(e) => {
                tracing::warn!(path = %file.path, error = %e, "blob fetch failed");
                out.failed.push(file.path.clone());
            }
        }
    }
    out
}
