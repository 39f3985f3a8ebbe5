//! The one error type of the archive: what completing or creating an upload came to when it is
//! not success. The HTTP surfaces map each variant to their own status and code (the ingest
//! routes: `syncplane_ingest::error`); the worker decides on it for an S3 notification.

use super::position::FileState;
use super::segment::Mismatch;
use super::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// No upload intent has this id.
    #[error("no such upload")]
    UnknownUpload,
    /// The segment does not start at the file's acknowledged offset, or its generation is
    /// behind (contract: `409 offset_mismatch`, with the file's state).
    #[error("the segment does not start at the acknowledged offset")]
    OffsetMismatch(FileState),
    /// Nothing is stored under the upload's key yet (`409 upload_missing`).
    #[error("nothing is stored for this upload yet")]
    UploadMissing,
    /// The intent ran out before it was completed (`410 upload_expired`).
    #[error("the upload intent expired")]
    UploadExpired,
    /// What is stored is not what the intent said (`400` with the check's code; the object was
    /// deleted, nothing was recorded).
    #[error("stored segment rejected: {0}")]
    BadSegment(Mismatch),
    /// The object store failed (`503 store_unavailable`); the detail is in the error.
    #[error(transparent)]
    Store(StoreError),
    /// The database failed (`500`).
    #[error("archive database failure: {0}")]
    Db(#[from] sqlx::Error),
}

impl From<StoreError> for ArchiveError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}
