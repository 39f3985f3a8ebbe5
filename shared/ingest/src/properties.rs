//! Hostile client bodies against the ingest parsers' bounds (issue 12 §1): gzip bombs, deep
//! nesting, many keys and duplicate keys, through the same steps the handler runs (decode,
//! [`strict_json::check`], [`batch::parse`]). A fixed seed and a modest case count here;
//! `scripts/fuzz.sh` runs the same properties with many more cases.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use http::HeaderMap;
use proptest::prelude::*;

use super::decode::{InflateError, bound_and_decode, inflate_bounded};
use super::{IngestError, MAX_DECODED_BYTES, MAX_WIRE_BYTES, batch, strict_json};
use syncplane_core::testing::check_property;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(data).expect("writing to a Vec");
    encoder.finish().expect("writing to a Vec")
}

fn gzip_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::CONTENT_ENCODING,
        http::HeaderValue::from_static("gzip"),
    );
    headers
}

#[test]
fn properties_inflation_stops_one_byte_past_any_limit_with_bounded_capacity() {
    check_property((0usize..300_000, 0usize..300_000), |(size, limit)| {
        let body = gzip(&vec![b'0'; size]);
        let mut out = Vec::new();
        let result = inflate_bounded(&body, limit, &mut out);
        if size > limit {
            prop_assert_eq!(result, Err(InflateError::TooLarge));
            prop_assert_eq!(out.len(), limit + 1);
        } else {
            prop_assert_eq!(result, Ok(()));
            prop_assert_eq!(out.len(), size);
        }
        prop_assert!(out.capacity() <= limit + 1);
        Ok(())
    });
}

/// A JSON body nested `depth` deep with `open`, inside an envelope field.
fn nested(open: &str, close: &str, depth: usize) -> String {
    format!(
        "{{\"computeTargetId\":\"t\",\"x\":{}0{}}}",
        open.repeat(depth),
        close.repeat(depth)
    )
}

#[test]
fn properties_deep_nesting_is_a_400_past_the_recursion_limit_never_a_crash() {
    let shapes = prop::sample::select(&[("[", "]"), ("{\"a\":", "}")][..]);
    check_property((shapes, 1usize..100_000), |((open, close), depth)| {
        let body = nested(open, close, depth);
        let checked = strict_json::check(body.as_bytes());
        // serde_json allows 128 levels; the envelope is one of them.
        prop_assert_eq!(checked.is_ok(), depth < 127, "depth {}", depth);
        if checked.is_ok() {
            prop_assert!(batch::parse(body.as_bytes()).is_err(), "not a valid batch");
        }
        Ok(())
    });
}

#[test]
fn properties_many_keys_are_checked_in_linear_time_and_a_repeat_is_refused() {
    check_property((1usize..20_000, any::<bool>()), |(keys, repeat)| {
        let mut body = String::from("{\"computeTargetId\":\"t\"");
        for i in 0..keys {
            body.push_str(&format!(",\"k{i}\":{i}"));
        }
        if repeat {
            body.push_str(&format!(",\"k{}\":0", keys / 2));
        }
        body.push('}');
        prop_assert_eq!(strict_json::check(body.as_bytes()).is_err(), repeat);
        Ok(())
    });
}

/// Pieces of JSON and of the envelope's field names, so the soup reaches the schema parse.
const JSON_PIECES: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "0",
    "-1",
    "1e999",
    "2.5",
    "null",
    "true",
    "\"s\"",
    "\"\\u0000\"",
    "\"\\ud800\"",
    "\"schemaVersion\":2",
    "\"batchId\":\"b\"",
    "\"mode\":\"backfill\"",
    "\"computeTargetId\":\"t\"",
    "\"sessionCount\":1",
    "\"sessions\":",
    "\"sessionId\":\"s\"",
    "\"updatedAt\":\"2026-01-01T00:00:00Z\"",
    "\"events\":",
    "\"seq\":",
    "\"ts\":",
    "\"kind\":",
    "\"chunk\":",
    "\"tokenEvents\":",
    " ",
];

#[test]
fn properties_any_body_through_every_step_is_an_answer_never_a_panic() {
    let soup = prop::collection::vec(prop::sample::select(JSON_PIECES), 0..3000);
    check_property((soup, any::<bool>()), |(pieces, gzipped)| {
        let json = pieces.concat().into_bytes();
        let (headers, wire) = if gzipped {
            (gzip_headers(), gzip(&json))
        } else {
            (HeaderMap::new(), json)
        };
        let decoded = match bound_and_decode(&headers, &wire) {
            Ok(decoded) => decoded,
            Err(error) => {
                prop_assert!(matches!(error, IngestError::PayloadTooLarge));
                prop_assert!(wire.len() > MAX_WIRE_BYTES);
                return Ok(());
            }
        };
        prop_assert!(decoded.len() <= MAX_DECODED_BYTES);
        if strict_json::check(&decoded).is_ok() {
            let _ = batch::parse(&decoded);
        }
        Ok(())
    });
}

#[test]
fn a_body_inflating_to_the_decoded_cap_is_read_and_one_byte_more_or_a_gzip_bomb_is_413() {
    let at_cap = gzip(&vec![b' '; MAX_DECODED_BYTES]);
    assert!(at_cap.len() <= MAX_WIRE_BYTES);
    assert_eq!(
        bound_and_decode(&gzip_headers(), &at_cap)
            .ok()
            .map(|decoded| decoded.len()),
        Some(MAX_DECODED_BYTES)
    );
    let one_more = gzip(&vec![b' '; MAX_DECODED_BYTES + 1]);
    assert!(matches!(
        bound_and_decode(&gzip_headers(), &one_more),
        Err(IngestError::PayloadTooLarge)
    ));
    let bomb = gzip(&vec![b' '; 8 * MAX_DECODED_BYTES]);
    assert!(bomb.len() <= MAX_WIRE_BYTES, "{} bytes", bomb.len());
    assert!(matches!(
        bound_and_decode(&gzip_headers(), &bomb),
        Err(IngestError::PayloadTooLarge)
    ));
}

/// An envelope of one session whose `field` holds `good` valid items and then `bad`.
fn session_with(field: &str, good: &str, count: usize, bad: &str) -> String {
    let mut items = vec![good; count];
    items.push(bad);
    format!(
        "{{\"schemaVersion\":2,\"batchId\":\"b\",\"mode\":\"backfill\",\"computeTargetId\":\"t\",\"sessionCount\":1,\"sessions\":[{{\"sessionId\":\"s\",\"updatedAt\":\"2026-01-01T00:00:00Z\",\"dataRevision\":\"r\",\"agent\":\"a\",\"{field}\":[{},{}]}}]}}",
        items.join(","),
        ["{}"; 3].join(",")
    )
}

#[test]
fn properties_arrays_of_objects_are_refused_at_their_first_bad_item_by_its_path() {
    let fields = prop::sample::select(
        &[
            (
                "events",
                "{\"seq\":1,\"ts\":\"2026-01-01T00:00:00Z\",\"kind\":\"k\"}",
            ),
            (
                "tokenEvents",
                "{\"ts\":\"2026-01-01T00:00:00Z\",\"inputTokens\":1,\"outputTokens\":2}",
            ),
            ("artifactRefs", "{\"kind\":\"file\",\"ref\":\"a.rs\"}"),
        ][..],
    );
    let bad = prop::sample::select(&["0", "[]", "\"s\"", "{}", "{\"kind\":5}"][..]);
    check_property(
        (fields, 0usize..2000, bad),
        |((field, good), count, bad)| {
            // Distinct seqs are not needed: the first bad item ends the parse before that check.
            let body = session_with(field, good, count, bad);
            prop_assert!(strict_json::check(body.as_bytes()).is_ok());
            let error = batch::parse(body.as_bytes()).err().map(|e| e.to_string());
            let at = format!("sessions[0].{field}[{count}]");
            prop_assert!(
                error.as_deref().is_some_and(|e| e.starts_with(&at)),
                "{error:?} does not name {at}"
            );
            Ok(())
        },
    );
}
