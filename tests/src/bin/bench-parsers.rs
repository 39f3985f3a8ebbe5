//! `bench-parsers`: peak memory and CPU time per hostile document, for every parser fed by
//! repository content or by clients (issue 12 §1; figures, not a test).
//!
//! The cases are the worst ones the property tests and the issue's probe corpus found: alias
//! bombs (the probe's 10, 15 and 100 KB), billion laughs, table bombs, deep nesting, pathological
//! emphasis and links, long lines, many CODEOWNERS patterns, ingest bodies at the decoded cap.
//! Each runs through the entry point the engine or the ingest handler uses
//! (`parse_document`, `parse_codeowners`, `bound_and_decode` + `strict_json::check` +
//! `batch::parse`) in a child process of its own (this binary re-executed with the case name), so
//! the peak RSS (VmHWM) printed is that document's alone; CPU time is getrusage around the parse.
//! Target: under 64 MiB peak RSS and 50 ms of CPU per document.
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-parsers [-- CASE]`

use std::io::Write;
use std::process::Command;

use flate2::Compression;
use flate2::write::GzEncoder;
use shared::ingest::decode::bound_and_decode;
use shared::ingest::{MAX_DECODED_BYTES, batch, strict_json};
use shared::sync::parse::{MAX_INPUT_BYTES, parse_codeowners, parse_document};

const TARGET_PEAK_RSS_KIB: u64 = 64 * 1024;
const TARGET_CPU_MS: f64 = 50.0;

enum Input {
    Document {
        path: &'static str,
        text: String,
    },
    CodeOwners(String),
    /// A gzip body as sent, and the size it inflates to.
    Ingest {
        wire: Vec<u8>,
        decoded: usize,
    },
}

type Case = (&'static str, fn() -> Input);

const CASES: &[Case] = &[
    ("frontmatter: probe alias bomb 10 KB", || {
        md(alias_bomb(1_500))
    }),
    ("frontmatter: probe alias bomb 15 KB", || {
        md(alias_bomb(2_200))
    }),
    ("frontmatter: probe alias bomb 100 KB", || {
        md(alias_bomb(14_500))
    }),
    ("frontmatter: alias bomb just under the budget", || {
        md(alias_bomb(98))
    }),
    ("frontmatter: billion laughs 10 levels", || {
        md(billion_laughs(10, 10))
    }),
    ("frontmatter: 250 KB of keys", || {
        let keys: String = (0..20_000).map(|i| format!("key{i}: v{i}\n")).collect();
        md(fenced(&keys))
    }),
    ("frontmatter: 250 KB flat list", || {
        md(fenced(&format!("k: [{}]", "1, ".repeat(80_000))))
    }),
    ("frontmatter: 250 KB string", || {
        md(fenced(&format!("k: {}", "x".repeat(250_000))))
    }),
    ("frontmatter: flow nesting at the depth cap", || {
        md(fenced(&format!(
            "k: {}1{}",
            "[".repeat(256),
            "]".repeat(256)
        )))
    }),
    ("frontmatter: block nesting", || {
        md(fenced(&format!("k: {}x", "- ".repeat(100_000))))
    }),
    ("markdown: table bomb 1000 columns", || {
        md(table_bomb(1_000, 100_000))
    }),
    ("markdown: table at comrak's own cell cap", || {
        md(table_bomb(100, 5_001))
    }),
    ("markdown: table just under the node budget", || {
        md(table_bomb(40, 4_000))
    }),
    ("markdown: deep blockquote", || md("> ".repeat(120_000))),
    ("markdown: deep list", || md("- ".repeat(120_000))),
    ("markdown: indented list ladder", || {
        md((0..700)
            .map(|i| format!("{}- x\n", " ".repeat(i * 2)))
            .collect())
    }),
    ("markdown: nested emphasis", || {
        md(format!("{}a{}", "*".repeat(100_000), "*".repeat(100_000)))
    }),
    (
        "markdown: unclosed emphasis",
        || md("*a _b ".repeat(40_000)),
    ),
    ("markdown: nested links", || {
        md(format!("{}a{}", "[".repeat(50_000), "](u)".repeat(50_000)))
    }),
    ("markdown: unclosed links", || md("[a](".repeat(60_000))),
    ("markdown: images and brackets", || {
        md("![[a]".repeat(50_000))
    }),
    ("markdown: reference definitions", || {
        md(format!(
            "{}{}",
            "[a]: u\n".repeat(18_000),
            "[a]".repeat(40_000)
        ))
    }),
    ("markdown: footnotes", || {
        md(format!(
            "{}\n\n{}",
            "[^a]".repeat(30_000),
            "[^a]: b\n".repeat(10_000)
        ))
    }),
    ("markdown: backtick runs", || {
        md((1..700).map(|n| format!("{} a ", "`".repeat(n))).collect())
    }),
    ("markdown: 64k duplicate headings", || {
        md("# a\n".repeat(64_000))
    }),
    ("markdown: one 256 KB line", || md("word ".repeat(52_000))),
    ("markdown: html and entities", || {
        md("<div>&amp;<span a='".repeat(13_000))
    }),
    ("markdown: autolinks", || md("www.a.com ".repeat(26_000))),
    ("markdown: ordinary 256 KB document", || md(ordinary())),
    ("mdx: unclosed braces", || mdx("{".repeat(MAX_INPUT_BYTES))),
    ("mdx: unclosed tags", || mdx("<a b={".repeat(40_000))),
    ("mdx: tags and expressions", || {
        mdx("<A x={1}>{y}</A> ".repeat(15_000))
    }),
    ("mdx: backticks and comments", || {
        mdx("`{/* <!-- ".repeat(25_000))
    }),
    ("mdx: ordinary 256 KB document", || Input::Document {
        path: "docs/ordinary.mdx",
        text: ordinary(),
    }),
    ("codeowners: 50k rules", || {
        Input::CodeOwners("/docs/ @org/team a@b.co\n".repeat(10_000))
    }),
    ("codeowners: 50k invalid lines", || {
        Input::CodeOwners("!x @-a\n".repeat(37_000))
    }),
    ("codeowners: one 256 KB token", || {
        Input::CodeOwners(format!("* @{}", "a".repeat(MAX_INPUT_BYTES - 4)))
    }),
    ("ingest: 4 MiB of valid events", || ingest(valid_events())),
    ("ingest: 4 MiB of empty event objects", || {
        ingest(envelope_with("events", "{}"))
    }),
    ("ingest: 4 MiB of event scalars", || {
        ingest(envelope_with("events", "0"))
    }),
    ("ingest: 4 MiB of tokenEvents scalars", || {
        ingest(envelope_with("tokenEvents", "0"))
    }),
    ("ingest: 4 MiB of unknown-field scalars", || {
        ingest(envelope_with("unknownField", "0"))
    }),
    ("ingest: 4 MiB of keys", || {
        let keys: String = (0..300_000).map(|i| format!("\"k{i}\":0,")).collect();
        ingest(format!("{{{keys}\"computeTargetId\":\"t\"}}").into_bytes())
    }),
    ("ingest: nesting at the recursion limit", || {
        ingest(format!("{{\"x\":{}0{}}}", "[".repeat(126), "]".repeat(126)).into_bytes())
    }),
    ("ingest: gzip bomb", || {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
        for _ in 0..64 {
            encoder
                .write_all(&[b' '; 1 << 20])
                .expect("writing to a Vec");
        }
        Input::Ingest {
            wire: encoder.finish().expect("writing to a Vec"),
            decoded: 64 << 20,
        }
    }),
];

fn md(text: String) -> Input {
    Input::Document {
        path: "docs/hostile.md",
        text,
    }
}

fn mdx(text: String) -> Input {
    Input::Document {
        path: "docs/hostile.mdx",
        text,
    }
}

fn fenced(yaml: &str) -> String {
    format!("---\n{yaml}\n---\n# Body\n")
}

/// The issue's probe: one anchor of `n` scalars aliased `n` times.
fn alias_bomb(n: usize) -> String {
    fenced(&format!(
        "a: &a [{}]\nb: [{}]",
        vec!["x"; n].join(","),
        vec!["*a"; n].join(",")
    ))
}

fn billion_laughs(depth: usize, fanout: usize) -> String {
    let mut yaml = format!("l0: &l0 [{}]\n", vec!["lol"; fanout].join(","));
    for level in 1..=depth {
        let alias = format!("*l{}", level - 1);
        yaml.push_str(&format!(
            "l{level}: &l{level} [{}]\n",
            vec![alias.as_str(); fanout].join(",")
        ));
    }
    fenced(&yaml)
}

fn table_bomb(columns: usize, rows: usize) -> String {
    let text = format!(
        "{}|\n{}|\n{}",
        "|a".repeat(columns),
        "|-".repeat(columns),
        "x\n".repeat(rows)
    );
    text[..text.len().min(MAX_INPUT_BYTES)].to_owned()
}

/// A large but ordinary document: frontmatter, headings, lists, tables, code, links.
fn ordinary() -> String {
    let mut text = String::from("---\ntitle: Ordinary\ntags: [a, b]\n---\n");
    let section = "## Section\n\nSome *text* with `code`, a [link](https://example.com) and <b>html</b>.\n\n- item one\n- item two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nfn main() {}\n```\n\n> quoted\n\n";
    while text.len() + section.len() <= MAX_INPUT_BYTES {
        text.push_str(section);
    }
    text
}

/// An envelope with one session whose `field` is an array of `item` filling the decoded cap.
fn envelope_with(field: &str, item: &str) -> Vec<u8> {
    let head = format!(
        "{{\"schemaVersion\":2,\"batchId\":\"b\",\"mode\":\"backfill\",\"computeTargetId\":\"t\",\"sessionCount\":1,\"sessions\":[{{\"sessionId\":\"s\",\"updatedAt\":\"2026-01-01T00:00:00Z\",\"dataRevision\":\"r\",\"agent\":\"a\",\"{field}\":["
    );
    let tail = "]}]}";
    let room = MAX_DECODED_BYTES - head.len() - tail.len();
    let count = (room + 1) / (item.len() + 1);
    let mut json = head;
    json.push_str(&vec![item; count].join(","));
    json.push_str(tail);
    json.into_bytes()
}

/// 200 sessions of minimal valid events filling the decoded cap (repeated sessions, so the
/// gzip body fits the wire cap).
fn valid_events() -> Vec<u8> {
    let per_session = MAX_DECODED_BYTES / 200 - 200;
    let mut events = String::new();
    for seq in 0.. {
        let event = format!("{{\"seq\":{seq},\"ts\":\"2026-01-01T00:00:00Z\",\"kind\":\"a\"}}");
        if events.len() + event.len() + 1 > per_session {
            break;
        }
        if seq > 0 {
            events.push(',');
        }
        events.push_str(&event);
    }
    let sessions: Vec<String> = (0..200)
        .map(|i| format!("{{\"sessionId\":\"s{i:03}\",\"updatedAt\":\"2026-01-01T00:00:00Z\",\"dataRevision\":\"r\",\"agent\":\"a\",\"events\":[{events}]}}"))
        .collect();
    format!(
        "{{\"schemaVersion\":2,\"batchId\":\"b\",\"mode\":\"backfill\",\"computeTargetId\":\"t\",\"sessionCount\":200,\"sessions\":[{}]}}",
        sessions.join(",")
    )
    .into_bytes()
}

/// The body as a client sends it: gzip (the JSON itself is dropped before measuring).
fn ingest(json: Vec<u8>) -> Input {
    Input::Ingest {
        wire: gzip(&json),
        decoded: json.len(),
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(data).expect("writing to a Vec");
    encoder.finish().expect("writing to a Vec")
}

/// Runs one case: builds the input, resets the peak RSS, then parses it between two CPU
/// readings. Prints `input bytes \t rss before (KiB) \t peak rss (KiB) \t cpu ms \t outcome`.
fn run_case(name: &str) {
    let Some((_, build)) = CASES.iter().find(|(case, _)| *case == name) else {
        eprintln!("bench-parsers: no case named {name:?}");
        std::process::exit(2);
    };
    let input = build();
    let bytes = match &input {
        Input::Document { text, .. } | Input::CodeOwners(text) => text.len(),
        Input::Ingest { decoded, .. } => *decoded,
    };
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::CONTENT_ENCODING,
        http::HeaderValue::from_static("gzip"),
    );
    // "5" resets VmHWM to the current RSS (Linux 4.0+): the peak is then the parse's alone, on top
    // of the process and its input, not the building of the input.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before = status_kib("VmRSS");
    let cpu_before = cpu_ms();
    let outcome = match &input {
        Input::Document { path, text } => match parse_document(path, text.as_bytes()) {
            Ok(doc) => format!(
                "stored: {} headings, {} B body, {} B frontmatter; {}",
                doc.headings.len(),
                doc.body.len(),
                doc.frontmatter.to_string().len(),
                doc.warnings.first().map_or("no warning", String::as_str)
            ),
            Err(refusal) => format!("refused: {refusal}"),
        },
        Input::CodeOwners(text) => match parse_codeowners(text.as_bytes()) {
            Ok((rules, warnings)) => format!("{} rules, {} warnings", rules.len(), warnings.len()),
            Err(refusal) => format!("refused: {refusal}"),
        },
        Input::Ingest { wire, .. } => ingest_outcome(&headers, wire),
    };
    let cpu = cpu_ms() - cpu_before;
    let peak = status_kib("VmHWM");
    let short: String = outcome.chars().take(110).collect();
    println!("{bytes}\t{rss_before}\t{peak}\t{cpu:.1}\t{short}");
}

/// The ingest handler's parsing steps, in its order: bound and decode, the strict JSON check,
/// the schema parse.
fn ingest_outcome(headers: &http::HeaderMap, wire: &[u8]) -> String {
    let decoded = match bound_and_decode(headers, wire) {
        Ok(decoded) => decoded,
        Err(e) => return format!("refused at decode: {} {e}", e.status().as_u16()),
    };
    if let Err(e) = strict_json::check(&decoded) {
        return format!("refused at the JSON check: {e}");
    }
    match batch::parse(&decoded) {
        Ok(batch) => format!(
            "parsed: {} sessions, {} events",
            batch.sessions.len(),
            batch
                .sessions
                .iter()
                .map(|s| s.events.as_ref().map_or(0, Vec::len))
                .sum::<usize>()
        ),
        Err(e) => format!("refused at the schema parse: {} {e}", e.status().as_u16()),
    }
}

/// A `/proc/self/status` figure in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// User plus system CPU time of this process, in milliseconds.
fn cpu_ms() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_SELF is always valid.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, name] = args.as_slice()
        && flag == "--case"
    {
        run_case(name);
        return;
    }
    let only = args.get(1);
    let exe = std::env::current_exe().expect("the benchmark's own path");
    println!(
        "{:<48} {:>9} {:>9} {:>9} {:>8}  outcome",
        "case", "input B", "base MiB", "peak MiB", "cpu ms"
    );
    let (mut worst_peak, mut worst_cpu) = ((0u64, ""), (0f64, ""));
    for (name, _) in CASES
        .iter()
        .filter(|(name, _)| only.is_none_or(|o| name.contains(o.as_str())))
    {
        let output = Command::new(&exe)
            .args(["--case", name])
            .output()
            .expect("running a case");
        let line = String::from_utf8_lossy(&output.stdout);
        let fields: Vec<&str> = line.trim_end().splitn(5, '\t').collect();
        let [bytes, base, peak, cpu, outcome] = fields[..] else {
            println!(
                "{name:<48} FAILED ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
            continue;
        };
        let (base, peak): (u64, u64) = (base.parse().unwrap_or(0), peak.parse().unwrap_or(0));
        let cpu: f64 = cpu.parse().unwrap_or(0.0);
        let mib = |kib: u64| kib as f64 / 1024.0;
        println!(
            "{name:<48} {bytes:>9} {:>9.1} {:>9.1} {cpu:>8.1}  {outcome}",
            mib(base),
            mib(peak)
        );
        if peak > worst_peak.0 {
            worst_peak = (peak, name);
        }
        if cpu > worst_cpu.0 {
            worst_cpu = (cpu, name);
        }
    }
    println!(
        "\nworst peak RSS: {:.1} MiB ({}), target < {} MiB: {}",
        worst_peak.0 as f64 / 1024.0,
        worst_peak.1,
        TARGET_PEAK_RSS_KIB / 1024,
        if worst_peak.0 < TARGET_PEAK_RSS_KIB {
            "met"
        } else {
            "MISSED"
        }
    );
    println!(
        "worst CPU: {:.1} ms ({}), target < {TARGET_CPU_MS} ms: {}",
        worst_cpu.0,
        worst_cpu.1,
        if worst_cpu.0 < TARGET_CPU_MS {
            "met"
        } else {
            "MISSED"
        }
    );
}
