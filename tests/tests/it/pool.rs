//! The database pool under cancellation: a request whose future is dropped (a client that hangs
//! up on `syncplane serve`, a timeout, an aborted task such as the local indexer at shutdown)
//! must not hand its connection back inside a transaction. sqlx 0.9.0 did when the drop came
//! while `BEGIN` was on the wire (transact-rs/sqlx#4393): the next borrower's statements ran in a
//! transaction nothing would commit, holding their locks (a transcript search benchmark hung on
//! its own rate-limit row). 0.9.1 rolls it back.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use sqlx::postgres::PgPoolOptions;
use syncplane_tests::db::TestDb;

/// Whether the session of `conn` is inside an explicit transaction: a transaction id taken by
/// one statement is still the session's at the next (each statement outside a transaction is a
/// transaction of its own).
async fn in_transaction(conn: &mut sqlx::PgConnection) -> bool {
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut *conn)
        .await
        .expect("take a transaction id");
    sqlx::query_scalar("SELECT pg_current_xact_id_if_assigned() IS NOT NULL")
        .fetch_one(conn)
        .await
        .expect("session state")
}

#[tokio::test]
async fn a_transaction_dropped_while_its_begin_is_in_flight_leaves_no_transaction_open() {
    let db = TestDb::empty().await;
    // One connection: the next borrower gets the very connection the dropped BEGIN used.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(db.url().expose())
        .await
        .expect("pool");
    let mut fresh = pool.acquire().await.expect("acquire");
    assert!(
        !in_transaction(&mut fresh).await,
        "the check says no for a connection outside a transaction"
    );
    // And yes for one left inside a transaction behind sqlx's back (what the bug left).
    sqlx::raw_sql("BEGIN")
        .execute(&mut *fresh)
        .await
        .expect("begin");
    assert!(
        in_transaction(&mut fresh).await,
        "the check says yes inside a transaction"
    );
    sqlx::raw_sql("ROLLBACK")
        .execute(&mut *fresh)
        .await
        .expect("rollback");
    drop(fresh);
    for round in 0..20 {
        let mut conn = pool.acquire().await.expect("acquire");
        {
            let mut begin = pin!(sqlx::Connection::begin(&mut *conn));
            // Polled once: BEGIN is written and the answer not yet read; then dropped.
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(tx) = begin.as_mut().poll(&mut cx) {
                drop(tx);
            }
        }
        drop(conn);
        let mut conn = pool.acquire().await.expect("acquire again");
        assert!(
            !in_transaction(&mut conn).await,
            "round {round}: the pool handed out a connection inside a transaction"
        );
    }
}
