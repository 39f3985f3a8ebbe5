//! The plan of a search statement, bound as the handler binds it (`api::read::search::search_sql`
//! and its nine parameters), for the GIN-index test and `bench-read`.

use shared::api::read::search::{RANK_CANDIDATES, Tier, search_sql};
use shared::config::SearchLanguage;
use sqlx::PgExecutor;

/// `EXPLAIN {options}` of the search for one `word`: no repository or path filter, no cursor, a
/// page of 20 (21 rows asked for), [`RANK_CANDIDATES`] candidates, the word as the snippet anchor.
pub async fn explain_search<'e>(
    executor: impl PgExecutor<'e>,
    options: &str,
    language: SearchLanguage,
    tier: Tier,
    excludes: bool,
    word: &str,
) -> Result<Vec<String>, sqlx::Error> {
    let sql = format!("EXPLAIN {options} {}", search_sql(language, tier, excludes));
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(word)
        .bind(None::<Vec<i64>>)
        .bind(None::<String>)
        .bind(None::<f32>)
        .bind(None::<i32>)
        .bind(None::<i64>)
        .bind(21_i64)
        .bind(RANK_CANDIDATES)
        .bind(vec![word])
        .fetch_all(executor)
        .await
}
