//! `#[derive(FromRow)]` (`shared/row-derive`, re-exported by the floor crate): a row is read into
//! a struct by its fields' names, a flattened field by its own `FromRow` from the same row, a
//! skipped one as its `Default`; what sqlx's own derive does, checked against a real Postgres.

use std::collections::BTreeMap;

use sqlx::types::Json;
use syncplane_tests::db::TestDb;

#[derive(Debug, PartialEq, shared::FromRow)]
struct Label {
    pub(crate) label: String,
}

/// Documentation, visibility, a raw identifier and a type with a comma inside its brackets: each
/// as the derive must read it.
#[derive(Debug, PartialEq, shared::FromRow)]
struct Described {
    /// The column `type`, a keyword in Rust.
    pub r#type: String,
    counts: Json<BTreeMap<String, i64>>,
    maybe: Option<i64>,
    #[row(flatten)]
    label: Label,
    #[row(skip)]
    later: Vec<u8>,
}

#[tokio::test]
async fn a_row_is_read_by_field_names_with_flattened_and_skipped_fields() {
    let db = TestDb::empty().await;
    let row: Described = sqlx::query_as(
        r#"SELECT '{"a": 1, "b": 2}'::jsonb AS counts, 'kind' AS "type", NULL::bigint AS maybe,
                  'outer' AS label, 'not read' AS later"#,
    )
    .fetch_one(&db.pool)
    .await
    .expect("the row reads");
    assert_eq!(
        row,
        Described {
            r#type: "kind".into(),
            counts: Json(BTreeMap::from([("a".into(), 1), ("b".into(), 2)])),
            maybe: None,
            label: Label {
                label: "outer".into()
            },
            later: Vec::new(),
        },
        "columns by name in any order; the skipped field is its default even where a column has its name"
    );
}

#[tokio::test]
async fn a_column_the_struct_names_and_the_row_lacks_is_an_error_not_a_default() {
    let db = TestDb::empty().await;
    let missing = sqlx::query_as::<_, Described>("SELECT 'x' AS label, 1::bigint AS maybe")
        .fetch_one(&db.pool)
        .await;
    assert!(
        matches!(&missing, Err(sqlx::Error::ColumnNotFound(c)) if c == "type"),
        "{missing:?}"
    );
    let wrong_type = sqlx::query_as::<_, Label>("SELECT 1 AS label")
        .fetch_one(&db.pool)
        .await;
    assert!(
        matches!(&wrong_type, Err(sqlx::Error::ColumnDecode { index, .. }) if index.contains("label")),
        "{wrong_type:?}"
    );
}
