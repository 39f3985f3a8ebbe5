//! What GitHub says in an error answer's body: its `message`, read only to recognise a few
//! documented cases (a suspended installation, a secondary rate limit), never passed on.

/// Whether the body's `message` (or, failing JSON, the raw text) mentions `needle`,
/// case-insensitively.
pub(crate) fn message_mentions(body: &[u8], needle: &str) -> bool {
    let text = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    text.to_ascii_lowercase().contains(needle)
}
