//! Contract step 2, "Bound and decode", and the details clients rely on.

use std::io::Write;
use std::sync::OnceLock;

use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::json;
use shared::ingest::decode::{InflateError, inflate_bounded};
use shared::ingest::{MAX_DECODED_BYTES, MAX_WIRE_BYTES};

use super::support::*;

fn one() -> serde_json::Value {
    batch(vec![session("s1", "r1", "2026-01-01T00:00:00Z")])
}

/// One gzip member of `n` zero bytes, compressed while streaming (never held inflated).
fn zeros_member(n: usize) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::best());
    let block = vec![0u8; 1 << 20];
    let mut left = n;
    while left > 0 {
        let k = left.min(block.len());
        e.write_all(&block[..k]).unwrap();
        left -= k;
    }
    e.finish().unwrap()
}

/// 1 GiB of zeros: sixteen 64 MiB members (multi-member gzip is one stream), about 1 MiB.
fn gib_bomb() -> &'static [u8] {
    static BOMB: OnceLock<Vec<u8>> = OnceLock::new();
    BOMB.get_or_init(|| zeros_member(64 << 20).repeat(16))
}

#[tokio::test]
async fn invalid_json_is_400() {
    let env = env().await;
    let r = env.post_raw(&[], b"{\"schemaVersion\": 2,").await;
    assert_eq!((r.status, r.code()), (400, None));
    assert_eq!(env.written().await, (0, 0));
}

#[tokio::test]
async fn a_body_sent_as_gzip_that_is_not_gzip_is_400() {
    let env = env().await;
    let plain = serde_json::to_vec(&one()).unwrap();
    let r = env.post_raw(&[("content-encoding", "gzip")], &plain).await;
    assert_eq!((r.status, r.code()), (400, None));
    assert_eq!(env.written().await, (0, 0));
}

#[tokio::test]
async fn truncated_gzip_is_400() {
    let env = env().await;
    let gz = gzip(&serde_json::to_vec(&one()).unwrap());
    let r = env
        .post_raw(&[("content-encoding", "gzip")], &gz[..gz.len() - 10])
        .await;
    assert_eq!((r.status, r.code()), (400, None));
    assert_eq!(env.written().await, (0, 0));
}

#[tokio::test]
async fn any_other_encoding_is_415() {
    let env = env().await;
    for enc in ["br", "deflate", "zstd"] {
        let r = env
            .post_raw(
                &[("content-encoding", enc)],
                &serde_json::to_vec(&one()).unwrap(),
            )
            .await;
        assert_eq!(r.status, 415, "{enc}");
    }
    assert_eq!(env.written().await, (0, 0));
}

#[tokio::test]
async fn content_encoding_is_case_insensitive_and_x_gzip_means_gzip() {
    let env = env().await;
    let gz = gzip(&serde_json::to_vec(&one()).unwrap());
    for enc in ["GZIP", "x-gzip", "X-GZip"] {
        let r = env.post_raw(&[("content-encoding", enc)], &gz).await;
        assert_eq!(r.status, 200, "{enc}: {}", r.body);
    }
    let r = env
        .post_raw(
            &[("content-encoding", "Identity")],
            &serde_json::to_vec(&one()).unwrap(),
        )
        .await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn multi_member_gzip_is_one_stream() {
    let env = env().await;
    let json = serde_json::to_vec(&one()).unwrap();
    let (a, b) = json.split_at(json.len() / 2);
    let mut body = gzip(a);
    body.extend(gzip(b));
    let r = env.post_raw(&[("content-encoding", "gzip")], &body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(env.written().await.0, 1);
}

#[tokio::test]
async fn the_header_not_the_envelope_encoding_field_decides_gzip() {
    let env = env().await;
    // Gzip with the envelope saying json: decoded by the header.
    let mut doc = one();
    doc["encoding"] = json!("json");
    let r = env.post_gzip(&doc).await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Plain JSON with the envelope saying gzip: plain, by the (absent) header.
    let mut doc = batch(vec![session("s2", "r1", "2026-01-01T00:00:00Z")]);
    doc["encoding"] = json!("gzip");
    let r = env.post(&doc).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(env.written().await.0, 2);
    // Gzip bytes without the header are not JSON, whatever the envelope would say.
    let mut doc = batch(vec![session("s3", "r1", "2026-01-01T00:00:00Z")]);
    doc["encoding"] = json!("gzip");
    let r = env
        .post_raw(&[], &gzip(&serde_json::to_vec(&doc).unwrap()))
        .await;
    assert_eq!((r.status, r.code()), (400, None));
    assert_eq!(env.written().await.0, 2);
}

#[tokio::test]
async fn exactly_262144_wire_bytes_are_accepted_and_262145_refused() {
    let env = env().await;
    let ok = padded_to(one(), MAX_WIRE_BYTES);
    let r = env.post_raw(&[], &ok).await;
    assert_eq!(r.status, 200, "{}", r.body);

    let env = super::support::env().await;
    let big = padded_to(one(), MAX_WIRE_BYTES + 1);
    let r = env.post_raw(&[], &big).await;
    assert_eq!((r.status, r.code()), (413, None));
    assert_eq!(env.written().await, (0, 0));
}

#[tokio::test]
async fn the_wire_cap_is_checked_before_the_encoding() {
    let env = env().await;
    let big = vec![b'x'; MAX_WIRE_BYTES + 1];
    let r = env.post_raw(&[("content-encoding", "br")], &big).await;
    assert_eq!((r.status, r.code()), (413, None));
    assert_eq!(env.written().await, (0, 0));
}

#[tokio::test]
async fn exactly_4194304_decoded_bytes_are_accepted_and_one_more_refused() {
    let env = env().await;
    let ok = gzip(&padded_to(one(), MAX_DECODED_BYTES));
    assert!(ok.len() <= MAX_WIRE_BYTES);
    let r = env.post_raw(&[("content-encoding", "gzip")], &ok).await;
    assert_eq!(r.status, 200, "{}", r.body);

    let env = super::support::env().await;
    let big = gzip(&padded_to(one(), MAX_DECODED_BYTES + 1));
    let r = env.post_raw(&[("content-encoding", "gzip")], &big).await;
    assert_eq!((r.status, r.code()), (413, None));
    assert_eq!(env.written().await, (0, 0));
}

#[tokio::test]
async fn a_gzip_bomb_is_413_and_inflation_stops_at_the_cap() {
    let env = env().await;
    // 1 GiB of zeros compresses to about 1 MiB: over the wire cap, refused before inflating.
    let r = env
        .post_raw(&[("content-encoding", "gzip")], gib_bomb())
        .await;
    assert_eq!((r.status, r.code()), (413, None));
    // 64 MiB of zeros fits under the wire cap: refused by the decoded cap.
    let small_bomb = zeros_member(64 << 20);
    assert!(small_bomb.len() <= MAX_WIRE_BYTES);
    let r = env
        .post_raw(&[("content-encoding", "gzip")], &small_bomb)
        .await;
    assert_eq!((r.status, r.code()), (413, None));
    assert_eq!(env.written().await, (0, 0));
    assert_eq!(env.counted(TARGET).await, 0, "refused before step 4");

    // The decoder itself, on the whole 1 GiB stream: it stops one byte past the cap and never
    // holds more than the cap plus one byte, so memory stays flat whatever the ratio.
    let mut out = Vec::new();
    assert_eq!(
        inflate_bounded(gib_bomb(), MAX_DECODED_BYTES, &mut out),
        Err(InflateError::TooLarge)
    );
    assert_eq!(out.len(), MAX_DECODED_BYTES + 1);
    assert!(
        out.capacity() <= MAX_DECODED_BYTES + 1,
        "{}",
        out.capacity()
    );
}

#[tokio::test]
async fn duplicate_json_keys_are_400() {
    let env = env().await;
    let body = format!(
        r#"{{"schemaVersion":2,"batchId":"b","mode":"incremental","computeTargetId":"{TARGET}",
            "sessionCount":1,"sessions":[{{"sessionId":"s","sessionId":"t",
            "updatedAt":"2026-01-01T00:00:00Z","dataRevision":"r","agent":"a"}}]}}"#
    );
    let r = env.post_raw(&[], body.as_bytes()).await;
    assert_eq!((r.status, r.code()), (400, None));
    assert_eq!(env.written().await, (0, 0));
}
