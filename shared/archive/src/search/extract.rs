//! What of a transcript line is searchable: the text people wrote or read (user prompts,
//! assistant text, tool calls and their inputs, tool results), never JSON keys, ids, signatures
//! or inline images; with the line's role, its tool and its time.
//!
//! Lines are the tools' JSON Lines (Claude Code: `{"type":"assistant","message":{"role":…,
//! "content":[{"type":"text","text":…},{"type":"tool_use","name":"Bash","input":{…}}]},
//! "timestamp":…}`; Codex: `{"type":"response_item","payload":{…}}`). Role: a line that carries
//! a tool call or a tool result is `tool`, else the message's role when it is `user` or
//! `assistant`. A line that is not JSON is indexed as it is, with no role.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

/// Keys whose values are never searchable: ids, signatures, bookkeeping.
const SKIPPED_KEYS: &[&str] = &[
    "id",
    "uuid",
    "parentUuid",
    "leafUuid",
    "sessionId",
    "session_id",
    "tool_use_id",
    "toolUseID",
    "call_id",
    "requestId",
    "request_id",
    "messageId",
    "signature",
    "type",
    "role",
    "timestamp",
    "version",
    "userType",
    "cwd",
    "gitBranch",
    "model",
    "stop_reason",
    "stop_sequence",
    "usage",
    "media_type",
    "encrypted_content",
];
/// A string with no whitespace longer than this is a blob (base64, an image), not text.
const MAX_UNBROKEN_BYTES: usize = 512;
/// Longest tool name kept.
const MAX_TOOL_NAME: usize = 128;

/// Who a line is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "user" => Some(Self::User),
            "assistant" => Some(Self::Assistant),
            "tool" => Some(Self::Tool),
            _ => None,
        }
    }
}

/// A line's searchable text and facets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub role: Option<Role>,
    pub tool_name: Option<String>,
    pub at: Option<DateTime<Utc>>,
    pub text: String,
}

/// Reads a segment's lines in order, remembering each tool call's name so that its result,
/// later in the segment, is found by the tool's name too.
#[derive(Debug, Default)]
pub struct Extractor {
    tool_names: HashMap<String, String>,
}

impl Extractor {
    /// The entry of one line (without its `\n`).
    pub fn line(&mut self, line: &[u8]) -> Entry {
        match serde_json::from_slice::<Value>(line) {
            Ok(v @ Value::Object(_)) => self.record(&v),
            _ => Entry {
                role: None,
                tool_name: None,
                at: None,
                text: String::from_utf8_lossy(line).trim().replace('\0', " "),
            },
        }
    }

    fn record(&mut self, v: &Value) -> Entry {
        let message = v.get("message").or_else(|| v.get("payload")).unwrap_or(v);
        let mut facts = Facts::default();
        self.walk(v, &mut facts, 0);
        let role = if facts.tool_call || facts.tool_result {
            Some(Role::Tool)
        } else {
            message
                .get("role")
                .or_else(|| v.get("type"))
                .and_then(Value::as_str)
                .and_then(Role::parse)
        };
        let at = v
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
        Entry {
            role,
            tool_name: facts.tool_name,
            at,
            text: facts.text,
        }
    }

    fn walk(&mut self, v: &Value, facts: &mut Facts, depth: usize) {
        if depth > 64 {
            return;
        }
        match v {
            Value::String(s) => facts.push(s),
            Value::Array(items) => {
                for item in items {
                    self.walk(item, facts, depth + 1);
                }
            }
            Value::Object(map) => {
                // A call's tool name is a facet (the `tool` filter), not text.
                let call = self.note_tool(map, facts);
                for (k, x) in map {
                    let skipped = SKIPPED_KEYS.contains(&k.as_str()) || call && k == "name";
                    if !skipped && !is_inline_image(x) {
                        self.walk(x, facts, depth + 1);
                    }
                }
            }
            Value::Number(_) | Value::Bool(_) | Value::Null => {}
        }
    }

    /// A tool call (`tool_use`, `function_call`) names its tool; a result names its call.
    /// Whether `map` is a call.
    fn note_tool(&mut self, map: &serde_json::Map<String, Value>, facts: &mut Facts) -> bool {
        let kind = map.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "tool_use" | "function_call" | "server_tool_use" => {
                facts.tool_call = true;
                if let Some(name) = map.get("name").and_then(Value::as_str) {
                    // A facet, stored as it is shown: no control characters (Postgres text
                    // holds no NUL).
                    let name: String = name
                        .chars()
                        .filter(|c| !c.is_control())
                        .take(MAX_TOOL_NAME)
                        .collect();
                    let id = map.get("id").or_else(|| map.get("call_id"));
                    if let Some(id) = id.and_then(Value::as_str) {
                        self.tool_names.insert(id.to_owned(), name.clone());
                    }
                    facts.tool_name.get_or_insert(name);
                }
                return true;
            }
            "tool_result" | "function_call_output" => {
                facts.tool_result = true;
                let id = map.get("tool_use_id").or_else(|| map.get("call_id"));
                if let Some(name) = id
                    .and_then(Value::as_str)
                    .and_then(|i| self.tool_names.get(i))
                {
                    facts.tool_name.get_or_insert_with(|| name.clone());
                }
            }
            _ => {}
        }
        false
    }
}

/// `{"type":"image","source":{"type":"base64","data":…}}` and its kin.
fn is_inline_image(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("base64")
        || v.get("type").and_then(Value::as_str) == Some("image")
}

#[derive(Default)]
struct Facts {
    text: String,
    tool_call: bool,
    tool_result: bool,
    tool_name: Option<String>,
}

impl Facts {
    fn push(&mut self, s: &str) {
        let s = s.trim();
        if s.is_empty() || is_blob(s) {
            return;
        }
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        // Postgres text holds no NUL (a JSON `\u0000` decodes to one).
        self.text
            .extend(s.chars().map(|c| if c == '\0' { ' ' } else { c }));
    }
}

/// A long run with no whitespace: base64, a data URL, a minified bundle.
fn is_blob(s: &str) -> bool {
    s.len() > MAX_UNBROKEN_BYTES
        && !s
            .bytes()
            .take(MAX_UNBROKEN_BYTES + 1)
            .any(|b| b.is_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(line: &str) -> Entry {
        Extractor::default().line(line.as_bytes())
    }

    #[test]
    fn a_prompt_is_the_users_text_without_keys_or_ids() {
        let e = entry(
            r#"{"type":"user","uuid":"9f1c","sessionId":"s-1","timestamp":"2026-11-02T10:00:00.000Z","message":{"role":"user","content":"why does the TLS handshake fail?"}}"#,
        );
        assert_eq!(e.role, Some(Role::User));
        assert_eq!(e.text, "why does the TLS handshake fail?");
        assert_eq!(e.at.unwrap().to_rfc3339(), "2026-11-02T10:00:00+00:00");
    }

    #[test]
    fn a_tool_call_and_its_result_are_the_tools_with_its_name() {
        let mut x = Extractor::default();
        let call = x.line(br#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Running the tests."},{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"cargo test --locked"}}]}}"#);
        assert_eq!(call.role, Some(Role::Tool));
        assert_eq!(call.tool_name.as_deref(), Some("Bash"));
        assert_eq!(call.text, "Running the tests.\ncargo test --locked");
        let result = x.line(br#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"error: connect ECONNREFUSED 127.0.0.1:5432"}]}}"#);
        assert_eq!(result.role, Some(Role::Tool));
        assert_eq!(result.tool_name.as_deref(), Some("Bash"));
        assert!(!result.text.contains("toolu_01"), "ids are not text");
    }

    #[test]
    fn images_signatures_and_blobs_are_not_text_and_bad_json_is_kept_as_it_is() {
        let e = entry(&format!(
            r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"hmm","signature":"EqQBCkYIBxgCKkB"}},{{"type":"image","source":{{"type":"base64","data":"{}"}}}}]}}}}"#,
            "A".repeat(2000)
        ));
        assert_eq!(e.text, "hmm");
        let raw = entry("not json at all <b>");
        assert_eq!((raw.role, raw.text.as_str()), (None, "not json at all <b>"));
    }
}
