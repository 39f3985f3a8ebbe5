//! Row snapshots that prove nothing was written: every row's (table, key, xmin) in the sync
//! tables and the shared installation token table. Any insert, update or delete changes the
//! snapshot (an update gives the row a new xmin).

use sqlx::PgPool;

/// (table, row key, xmin).
pub type RowVersion = (String, String, String);

pub async fn row_versions(pool: &PgPool) -> Vec<RowVersion> {
    sqlx::query_as(
        "SELECT 'repos', github_id::text, xmin::text FROM repos
         UNION ALL SELECT 'documents', repo_id || ':' || path, xmin::text FROM documents
         UNION ALL SELECT 'readmes', repo_id::text, xmin::text FROM readmes
         UNION ALL SELECT 'code_owners', repo_id || ':' || line, xmin::text FROM code_owners
         UNION ALL SELECT 'tokens', installation_id::text, xmin::text FROM github_installation_tokens
         ORDER BY 1, 2",
    )
    .fetch_all(pool)
    .await
    .expect("row versions")
}

/// Rows written between two snapshots: new or changed versions, plus rows gone.
pub fn changed(before: &[RowVersion], after: &[RowVersion]) -> usize {
    let b: std::collections::HashSet<_> = before.iter().collect();
    after.iter().filter(|r| !b.contains(r)).count() + before.len().saturating_sub(after.len())
}
