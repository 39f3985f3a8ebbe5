//! `bench-redact`: the device's secret redaction (issue 20 point 5 and its targets) over the
//! generated corpora of `syncplane_tests::redaction_corpus`: CPU per MB for redaction alone and
//! for redaction plus zstd level 3 (segments as the transcript lane makes them; target ≤ 20 ms/MB
//! together), the share of ordinary lines changed (target ≤ 0.1%), planted secrets missed
//! (target 0: plain placements and every shape of `redaction_corpus::rendered`) and peak RSS
//! (target ≤ 64 MiB). Figures, not a test.
//!
//! The ordinary corpus is written to a temporary file first and streamed line by line, as the lane
//! reads a transcript, so the peak RSS is redaction's (VmHWM is reset before the passes).
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-redact [-- ORDINARY_MB [PER_RULE [SEED]]]`
//! (`BENCH_REDACT_SHOW=1`: print the surroundings of each placeholder put in an ordinary line).

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use syncplane_agent::redact::{Redactor, rule_ids};
use syncplane_tests::bench::{Row, print_table};
use syncplane_tests::redaction_corpus::{ordinary_lines, planted, rendered, survives};

/// What the lane puts in one segment at most before compressing it (well under the caps).
const SEGMENT_BYTES: usize = 4 << 20;
const TARGET_MS_PER_MB: f64 = 20.0;
const TARGET_CHANGED_SHARE: f64 = 0.001;
const TARGET_PEAK_RSS_KIB: u64 = 64 * 1024;

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

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[derive(Default)]
struct Pass {
    lines: u64,
    bytes: u64,
    changed: u64,
    compressed: u64,
    cpu_ms: f64,
    hits: Vec<(&'static str, usize)>,
}

/// Around each placeholder of a changed ordinary line (redacted text: nothing secret is printed).
fn show_placeholders(text: &str) {
    for (at, _) in text.match_indices("[REDACTED:") {
        let from = text.floor_char_boundary(at.saturating_sub(60));
        let to = text.ceil_char_boundary((at + 60).min(text.len()));
        println!("changed: …{}…", &text[from..to]);
    }
}

/// Stream the corpus file through the redactor (and zstd when `compress`).
fn pass(redactor: &Redactor, path: &Path, compress: bool, show: bool) -> std::io::Result<Pass> {
    let mut reader = BufReader::new(std::fs::File::open(path)?);
    let mut line = String::new();
    let mut segment: Vec<u8> = Vec::with_capacity(if compress {
        SEGMENT_BYTES + (1 << 20)
    } else {
        0
    });
    let mut p = Pass::default();
    let start = cpu_ms();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let text = line.strip_suffix('\n').unwrap_or(&line);
        p.lines += 1;
        p.bytes += line.len() as u64;
        let out = redactor.redact_line(text);
        if out.text != text {
            p.changed += 1;
            if show {
                show_placeholders(&out.text);
            }
            for (rule, n) in out.hits {
                match p.hits.iter_mut().find(|(r, _)| *r == rule) {
                    Some(h) => h.1 += n,
                    None => p.hits.push((rule, n)),
                }
            }
        }
        if compress {
            segment.extend_from_slice(out.text.as_bytes());
            segment.push(b'\n');
            if segment.len() >= SEGMENT_BYTES {
                p.compressed += zstd::bulk::compress(&segment, 3)?.len() as u64;
                segment.clear();
            }
        }
    }
    if compress && !segment.is_empty() {
        p.compressed += zstd::bulk::compress(&segment, 3)?.len() as u64;
    }
    p.cpu_ms = cpu_ms() - start;
    Ok(p)
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (mb, per_rule, seed) = (arg(0, 12), arg(1, 20) as usize, arg(2, 20));

    let t = Instant::now();
    let cpu = cpu_ms();
    let redactor = Redactor::new();
    let build_ms = cpu_ms() - cpu;
    let ids: Vec<&str> = rule_ids().collect();

    let dir = std::env::temp_dir().join(format!("bench-redact-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("ordinary.jsonl");
    {
        let lines = ordinary_lines(seed, (mb as usize) << 20);
        let mut w = BufWriter::new(std::fs::File::create(&path)?);
        for l in &lines {
            w.write_all(l.as_bytes())?;
            w.write_all(b"\n")?;
        }
        w.flush()?;
    }
    let (mut secrets, mut unknown) = planted(ids.iter().copied(), seed, per_rule);
    // Every rule again in every shape tools print text in (issue 31), two contexts each.
    let (shaped, unknown_shaped) = rendered(ids.iter().copied(), seed, 2);
    let shaped_count = shaped.len();
    secrets.extend(shaped);
    unknown.extend(unknown_shaped);
    let generated_s = t.elapsed().as_secs_f64();

    // The corpus was built in memory and written out: hand its heap back, so what follows is the
    // streaming passes' footprint.
    // SAFETY: malloc_trim only releases free heap pages; no pointer is touched.
    unsafe {
        libc::malloc_trim(0);
    }
    // "5" resets VmHWM to the current RSS (Linux 4.0+): the peak from here is the passes'.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before = status_kib("VmRSS");
    let show = std::env::var("BENCH_REDACT_SHOW").is_ok_and(|v| v == "1");
    let alone = pass(&redactor, &path, false, show)?;
    let with_zstd = pass(&redactor, &path, true, false)?;

    let (mut missed, mut misnamed) = (Vec::new(), 0usize);
    let cpu = cpu_ms();
    for p in &secrets {
        let out = redactor.redact_line(&p.line);
        if survives(&out.text, &p.secret) {
            missed.push(p.rule);
        } else if !out.text.contains(&format!("[REDACTED:{}]", p.rule)) {
            misnamed += 1;
        }
    }
    let planted_ms = cpu_ms() - cpu;
    let peak = status_kib("VmHWM");
    let _ = std::fs::remove_dir_all(&dir);

    let mib = alone.bytes as f64 / f64::from(1u32 << 20);
    let alone_per_mb = alone.cpu_ms / mib;
    let both_per_mb = with_zstd.cpu_ms / mib;
    let share = alone.changed as f64 / alone.lines.max(1) as f64;
    let mut hits = alone.hits.clone();
    hits.sort_by_key(|h| std::cmp::Reverse(h.1));
    let rows = vec![
        Row::info("rules", ids.len()),
        Row::info("ruleset build, CPU ms", format!("{build_ms:.1}")),
        Row::info("corpora generated in, s", format!("{generated_s:.1}")),
        Row::info("ordinary corpus, MiB", format!("{mib:.1}")),
        Row::info("ordinary corpus, lines", alone.lines),
        Row::info("redaction alone, CPU ms/MiB", format!("{alone_per_mb:.2}")),
        Row::target(
            "redaction + zstd 3, CPU ms/MiB",
            format!("{both_per_mb:.2}"),
            "<= 20",
            both_per_mb <= TARGET_MS_PER_MB,
        ),
        Row::info(
            "zstd ratio (redacted / compressed)",
            format!(
                "{:.2}",
                alone.bytes as f64 / with_zstd.compressed.max(1) as f64
            ),
        ),
        Row::check(
            "ordinary lines changed",
            format!("{} ({:.4}%)", alone.changed, share * 100.0),
            "<= 0.1%",
            share <= TARGET_CHANGED_SHARE,
        ),
        Row::info("ordinary hits by rule", format!("{hits:?}")),
        Row::info(
            "planted secrets (plain + as tools render them)",
            format!("{} + {shaped_count}", secrets.len() - shaped_count),
        ),
        Row::check(
            "rules without a generator",
            format!("{unknown:?}"),
            "none",
            unknown.is_empty(),
        ),
        Row::check(
            "planted secrets missed",
            format!("{} {missed:?}", missed.len()),
            "0",
            missed.is_empty(),
        ),
        Row::check(
            "planted, placeholder names another rule",
            misnamed,
            "0",
            misnamed == 0,
        ),
        Row::info("planted corpus, CPU ms", format!("{planted_ms:.1}")),
        Row::info("RSS before the passes, KiB", rss_before),
        Row::target(
            "peak RSS, KiB",
            peak,
            "<= 65536",
            peak <= TARGET_PEAK_RSS_KIB,
        ),
    ];
    if !print_table("bench-redact (one thread)", &rows) {
        std::process::exit(1);
    }
    Ok(())
}
