//! Realistic Claude Code transcripts for benchmarks (issue 34 "Targets": "realistic Claude Code
//! JSONL: long tool outputs, code, logs"): the tool's record shapes (a prompt, assistant text, a
//! `tool_use` with its input, a `tool_result` with its output), words drawn from a Zipf-like
//! distribution (so a most frequent word exists), code tokens (paths, error codes, identifiers,
//! flags), `Read` listings with `     12→` line numbers, compiler errors and server logs.
//! Deterministic from a seed.

use serde_json::{Value, json};

use crate::redaction_corpus::Rng;

/// Prose words, most frequent first (English stop words left out: the dictionary drops them).
pub const WORDS: &[&str] = &[
    "file",
    "test",
    "error",
    "function",
    "change",
    "run",
    "build",
    "value",
    "line",
    "check",
    "return",
    "update",
    "config",
    "server",
    "request",
    "module",
    "type",
    "query",
    "database",
    "read",
    "write",
    "user",
    "client",
    "handler",
    "path",
    "result",
    "fix",
    "issue",
    "code",
    "output",
    "input",
    "message",
    "cache",
    "field",
    "method",
    "struct",
    "trait",
    "import",
    "package",
    "version",
    "install",
    "deploy",
    "branch",
    "commit",
    "merge",
    "review",
    "rename",
    "refactor",
    "parse",
    "serialize",
    "timeout",
    "retry",
    "connection",
    "handshake",
    "certificate",
    "migration",
    "schema",
    "index",
    "column",
    "table",
    "transaction",
    "lock",
    "thread",
    "async",
    "await",
    "future",
    "stream",
    "buffer",
    "socket",
    "port",
    "header",
    "body",
    "token",
    "secret",
    "session",
    "cookie",
    "route",
    "endpoint",
    "payload",
    "response",
    "status",
    "failure",
    "panic",
    "warning",
    "lint",
    "format",
    "compile",
    "link",
    "binary",
    "release",
    "debug",
    "profile",
    "benchmark",
    "latency",
    "memory",
    "allocation",
    "pointer",
    "reference",
    "lifetime",
    "borrow",
    "closure",
    "iterator",
    "vector",
    "string",
    "integer",
    "boolean",
    "option",
    "default",
    "macro",
    "generic",
    "bound",
    "constraint",
    "plugin",
    "docker",
    "kubernetes",
    "terraform",
    "bucket",
    "queue",
    "worker",
    "scheduler",
    "cron",
    "webhook",
    "signature",
    "digest",
    "encrypt",
    "decrypt",
    "compress",
    "archive",
    "segment",
    "offset",
    "cursor",
    "page",
    "filter",
    "search",
    "snippet",
    "render",
    "template",
    "component",
    "style",
    "layout",
    "button",
    "modal",
    "dialog",
    "state",
];
/// Code tokens a session mentions.
pub const CODE: &[&str] = &[
    "ECONNREFUSED",
    "ETIMEDOUT",
    "ENOENT",
    "EADDRINUSE",
    "src/main.rs",
    "src/lib.rs",
    "shared/src/db.rs",
    "tests/it/main.rs",
    "Cargo.toml",
    "package.json",
    "snake_case_name",
    "parse_config_file",
    "HashMap",
    "BTreeMap",
    "Arc<Mutex<State>>",
    "--locked",
    "--release",
    "--nocapture",
    "--all-features",
    "std::io::Error",
    "tokio::spawn",
    "127.0.0.1:5432",
    "localhost:8080",
    "SIGTERM",
    "E0382",
    "E0599",
    "sha256",
    "utf8",
    "v1.2.3",
    "node_modules",
];
const TOOLS: &[&str] = &["Bash", "Read", "Edit", "Grep", "Write", "Glob", "WebFetch"];

/// Draw a word rank with a Zipf-like skew: rank 0 about 10% of draws.
fn zipf(r: &mut Rng, n: usize) -> usize {
    let u = (r.below(1_000_000) as f64 + 1.0) / 1_000_001.0;
    let rank = ((n as f64 + 1.0).powf(u) - 1.0) as usize;
    rank.min(n - 1)
}

/// `n` words of prose, a code token now and then.
pub fn prose(r: &mut Rng, n: usize) -> String {
    let mut out = String::with_capacity(n * 8);
    for i in 0..n {
        if i > 0 {
            out.push(if i % 13 == 12 { '.' } else { ' ' });
            if i % 13 == 12 {
                out.push(' ');
            }
        }
        if r.below(12) == 0 {
            out.push_str(CODE[r.below(CODE.len())]);
        } else {
            out.push_str(WORDS[zipf(r, WORDS.len())]);
        }
    }
    out
}

/// Between `least` and `least + spread` words of prose.
fn some_prose(r: &mut Rng, least: usize, spread: usize) -> String {
    let n = least + r.below(spread);
    prose(r, n)
}

/// A tool's long output: a `Read` listing, a compiler error, or a server log.
fn tool_output(r: &mut Rng) -> String {
    let lines = 4 + r.below(30);
    let mut out = String::new();
    match r.below(3) {
        0 => {
            for n in 1..=lines {
                out.push_str(&format!(
                    "{n:>6}→    let {} = {}({});\n",
                    ident(r),
                    ident(r),
                    prose(r, 2)
                ));
            }
        }
        1 => {
            for _ in 0..lines / 4 {
                out.push_str(&format!(
                    "error[E0382]: borrow of moved value: `{}`\n  --> {}:{}:{}\n   |\n{} |     {}\n",
                    ident(r),
                    CODE[4 + r.below(4)],
                    r.below(400),
                    r.below(80),
                    r.below(400),
                    prose(r, 6)
                ));
            }
        }
        _ => {
            for i in 0..lines {
                out.push_str(&format!(
                    "2026-11-{:02}T{:02}:{:02}:00Z INFO {} {}\n",
                    1 + r.below(28),
                    r.below(24),
                    i % 60,
                    ident(r),
                    prose(r, 8)
                ));
            }
        }
    }
    out
}

fn ident(r: &mut Rng) -> String {
    format!(
        "{}_{}",
        WORDS[zipf(r, WORDS.len())],
        WORDS[r.below(WORDS.len())]
    )
}

/// One record of a session at `ts` (RFC 3339), the `i`-th: the four shapes in turn, a tool call
/// followed by its result.
pub fn record(r: &mut Rng, session: &str, i: usize, ts: &str) -> Value {
    let id = format!("toolu_{session}_{}", i / 4);
    match i % 4 {
        0 => {
            json!({"type": "user", "uuid": format!("{session}-{i}"), "sessionId": session, "timestamp": ts,
            "message": {"role": "user", "content": some_prose(r, 12, 40)}})
        }
        1 => json!({"type": "assistant", "uuid": format!("{session}-{i}"), "timestamp": ts,
            "message": {"role": "assistant", "model": "claude-opus-4", "content": [
                {"type": "text", "text": some_prose(r, 20, 60)},
                {"type": "tool_use", "id": id, "name": TOOLS[r.below(TOOLS.len())],
                 "input": {"command": format!("cargo test {} -- {}", CODE[15 + r.below(4)], ident(r))}}]}}),
        2 => json!({"type": "user", "uuid": format!("{session}-{i}"), "timestamp": ts,
            "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": tool_output(r)}]}}),
        _ => json!({"type": "assistant", "uuid": format!("{session}-{i}"), "timestamp": ts,
            "message": {"role": "assistant", "content": [
                {"type": "text", "text": some_prose(r, 30, 90)}]}}),
    }
}
