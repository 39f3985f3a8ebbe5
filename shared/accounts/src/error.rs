//! The one error type of a token check. Each surface maps it onto its own (the ingest function's
//! `unauthenticated` and `database_unreachable`); what failed inside goes to the log here, with
//! its context, never into an answer.

use crate::kind::TokenKind;

#[derive(Debug, thiserror::Error)]
pub enum AccountsError {
    /// No bearer token of the kind, or one that is unknown or revoked.
    #[error("no valid {0:?} token")]
    Unauthenticated(TokenKind),
    /// The database does not answer (a surface answers 503 and the client tries again).
    #[error("the database does not answer")]
    DatabaseUnreachable,
    /// Any other database failure, logged where it happened.
    #[error("the token could not be checked")]
    Failed,
}

/// A database error of a token check, logged with `context`.
pub(crate) fn failed(context: &'static str) -> impl FnOnce(sqlx::Error) -> AccountsError {
    move |e| {
        if syncplane_core::db::is_unreachable(&e) {
            tracing::warn!(error = %e, context, "accounts: the database does not answer");
            return AccountsError::DatabaseUnreachable;
        }
        tracing::error!(error = %e, context, "accounts: database failure");
        AccountsError::Failed
    }
}
