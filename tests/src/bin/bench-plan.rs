//! Planning from the docs subtree (issue 10): what a change costs in GitHub requests and bytes,
//! against the fake GitHub and a real Postgres, beside a shallow clone of the same content
//! (prints figures; not a test).
//!
//! `cargo run --profile perf -p syncplane-tests --features tools --bin bench-plan`
//!
//! Requests and bytes are counted from the fake's log (response bodies as sent), leaving out the
//! token exchange and the repository lookup; what is left is the sync's own reads.
//! 1. A push outside the docs scope of a 50,000-file monorepo with 200 documents.
//!    Target: <= 2 requests, <= 8 KiB received, no document row written.
//! 2. A one-document change in a 2,000-document repository, and in the monorepo of 1.
//!    Target: <= 5 requests, and >= 100x fewer bytes than a shallow clone of the same content.
//! 3. A monorepo whose whole tree passes GitHub's recursive limit (100,000 entries) with a
//!    200-document docs folder: it syncs, and a one-document change costs as in 2.
//!
//! The shallow clone: the bench writes the same files into a real git repository on disk and runs
//! `git clone --depth 1 --no-local file://...`; the figure is the size of the pack the clone
//! received (`.git/objects/pack/*.pack`), protocol framing not included.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use shared::config::SyncConfig;
use shared::github::{ClientOptions, GithubClient, RepoInfo};
use shared::sync::{RepoOutcome, sync_repository};
use syncplane_tests::db::TestDb;
use syncplane_tests::fake_github::{Change, Endpoint, FakeGithub};

type Files = Vec<(String, Vec<u8>)>;

/// A deterministic generator (xorshift64*), so every run builds the same repositories.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "the",
    "service",
    "request",
    "deploy",
    "cluster",
    "token",
    "install",
    "configure",
    "query",
    "index",
    "schema",
    "migration",
    "release",
    "version",
    "handler",
    "worker",
    "queue",
    "message",
    "retry",
    "timeout",
    "limit",
    "budget",
    "cache",
    "storage",
    "bucket",
    "region",
    "replica",
    "failover",
    "backup",
    "restore",
    "audit",
    "policy",
    "role",
    "permission",
    "secret",
    "rotate",
    "metric",
    "trace",
    "log",
    "alert",
    "dashboard",
    "latency",
    "throughput",
    "error",
    "status",
    "client",
    "server",
    "endpoint",
    "route",
    "payload",
    "header",
    "body",
    "stream",
    "batch",
    "record",
    "field",
    "value",
    "default",
    "option",
    "flag",
    "feature",
    "rollout",
    "canary",
    "when",
    "then",
    "each",
    "every",
    "before",
    "after",
    "during",
    "unless",
    "because",
    "so",
    "a",
    "an",
    "of",
    "to",
    "in",
    "for",
    "with",
    "on",
    "by",
    "from",
    "is",
    "are",
    "be",
    "can",
    "must",
    "should",
    "may",
    "never",
    "always",
    "only",
    "also",
    "first",
    "next",
    "last",
    "new",
    "old",
    "small",
    "large",
    "fast",
    "slow",
    "safe",
    "stable",
    "team",
    "owner",
    "review",
    "merge",
    "branch",
    "commit",
    "build",
    "test",
    "check",
    "lint",
    "format",
    "package",
    "module",
    "crate",
];

const SYLLABLES: &[&str] = &[
    "ka", "lo", "mer", "ti", "van", "sor", "pe", "dru", "qui", "nal", "bex", "cor", "fi", "gam",
    "hul", "jor", "ke", "lin", "mo", "nev", "ost", "pra", "ru", "sil", "tor", "ux", "vel", "wy",
];

/// Prose words: the common words above, and one time in four a word of a long tail (names,
/// identifiers, jargon), so the text compresses about as much as real documentation.
fn word(rng: &mut Rng) -> String {
    if rng.below(4) > 0 {
        return WORDS[rng.below(WORDS.len())].to_owned();
    }
    let id = rng.below(3000);
    let mut w = String::new();
    let mut n = id;
    for _ in 0..(2 + id % 3) {
        w.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
    }
    w
}

fn sentence(rng: &mut Rng) -> String {
    let n = 8 + rng.below(14);
    let words: Vec<String> = (0..n).map(|_| word(rng)).collect();
    let mut s = words.join(" ");
    if let Some(first) = s.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    s.push('.');
    s
}

/// A documentation page of about 4 KB: frontmatter, headings, prose, a code block, links.
fn document(rng: &mut Rng, id: usize) -> Vec<u8> {
    let mut s = format!(
        "---\ntitle: {}\nowner: team-{}\n---\n# {}\n\n",
        sentence(rng),
        rng.below(40),
        sentence(rng)
    );
    for section in 0..4 {
        s.push_str(&format!("## {}\n\n", sentence(rng)));
        for _ in 0..(3 + rng.below(3)) {
            s.push_str(&sentence(rng));
            s.push(' ');
        }
        s.push_str(&format!(
            "\n\nSee [{}](../page-{}.md#s{section}).\n\n",
            WORDS[rng.below(WORDS.len())],
            rng.below(5000)
        ));
        if section == 2 {
            s.push_str(&format!(
                "```sh\nsyncplane sync --repo acme/r{id} --timeout {}\n```\n\n",
                rng.below(900)
            ));
        }
    }
    s.into_bytes()
}

/// A source file of a few hundred bytes.
fn source(rng: &mut Rng, id: usize) -> Vec<u8> {
    let mut s = format!("// Module {id}\npub fn f{id}(x: u64) -> u64 {{\n");
    for _ in 0..(3 + rng.below(6)) {
        s.push_str(&format!(
            "    // {}\n    let x = x.wrapping_mul({}).rotate_left({});\n",
            sentence(rng),
            rng.next() % 1_000_003,
            rng.below(63)
        ));
    }
    s.push_str("    x\n}\n");
    s.into_bytes()
}

fn common_files(rng: &mut Rng) -> Files {
    vec![
        ("README.md".into(), document(rng, 0)),
        (
            ".github/CODEOWNERS".into(),
            b"* @acme/eng\n/docs/ @acme/docs\n".to_vec(),
        ),
        (
            ".github/workflows/ci.yml".into(),
            b"on: push\njobs: {}\n".to_vec(),
        ),
        (
            "Cargo.toml".into(),
            b"[workspace]\nmembers = [\"services/*\"]\n".to_vec(),
        ),
        (".gitignore".into(), b"target/\n".to_vec()),
    ]
}

/// `docs` documents in `sections` folders of the docs folder.
fn docs_folder(rng: &mut Rng, docs: usize, sections: usize) -> Files {
    (0..docs)
        .map(|i| {
            (
                format!("docs/section-{:02}/page-{i:05}.md", i % sections),
                document(rng, i),
            )
        })
        .collect()
}

/// `code` source files below services/*/src/*/ (about 25 files a folder).
fn code(rng: &mut Rng, code: usize) -> Files {
    (0..code)
        .map(|i| {
            (
                format!(
                    "services/svc-{:03}/src/mod-{:02}/f{i:06}.rs",
                    i / 2500,
                    (i / 25) % 100
                ),
                source(rng, i),
            )
        })
        .collect()
}

fn client(gh: &FakeGithub, installation: u64) -> GithubClient {
    GithubClient::with_options(&gh.app_config(installation), ClientOptions::default())
        .expect("client")
}

/// A repository on the fake, synced once, ready to measure.
struct Bench {
    db: TestDb,
    gh: FakeGithub,
    client: GithubClient,
    info: RepoInfo,
    full_name: String,
}

impl Bench {
    async fn new(full_name: &str, files: &Files) -> Self {
        let db = TestDb::new().await;
        let gh = FakeGithub::start().await;
        gh.set_rate_limit(1_000_000, 1_000_000, std::time::Duration::from_secs(3600));
        let installation = gh.add_installation("acme");
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_slice()))
            .collect();
        gh.add_repo(installation, full_name, &refs);
        let client = client(&gh, installation);
        let (owner, name) = full_name.split_once('/').expect("owner/name");
        let info = client.repo(owner, name).await.expect("repository");
        Self {
            db,
            gh,
            client,
            info,
            full_name: full_name.to_owned(),
        }
    }

    /// Sync once; the fake's log then holds this sync's requests only.
    async fn sync(&self) -> RepoOutcome {
        self.gh.reset_log();
        sync_repository(
            &self.db.pool,
            &self.client,
            &SyncConfig::default(),
            &self.info,
        )
        .await
        .expect("sync")
    }

    /// Requests and bytes received of the last sync, token exchange and lookups left out.
    fn cost(&self) -> Cost {
        let reads: Vec<_> = self
            .gh
            .requests()
            .into_iter()
            .filter(|r| {
                !matches!(
                    r.endpoint,
                    Endpoint::AccessToken | Endpoint::Repo | Endpoint::InstallationRepos
                )
            })
            .collect();
        let mut counted: Vec<(String, usize)> = Vec::new();
        for r in &reads {
            let kind = match r.endpoint {
                Endpoint::Branch => "head".to_owned(),
                Endpoint::Tree if r.path.contains("recursive") => "tree recursive".to_owned(),
                Endpoint::Tree => "tree level".to_owned(),
                Endpoint::Blob => "blob".to_owned(),
                other => format!("{other:?}"),
            };
            match counted.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, n)) => *n += 1,
                None => counted.push((kind, 1)),
            }
        }
        let kinds = counted
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        Cost {
            requests: reads.len(),
            bytes: reads.iter().map(|r| r.bytes).sum(),
            kinds,
        }
    }

    async fn document_rows(&self) -> Vec<(String, String)> {
        sqlx::query_as("SELECT path, xmin::text FROM documents ORDER BY path")
            .fetch_all(&self.db.pool)
            .await
            .expect("documents")
    }

    fn push(&self, changes: &[Change]) {
        self.gh.push(&self.full_name, changes);
    }
}

struct Cost {
    requests: usize,
    bytes: u64,
    kinds: String,
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} requests ({}), {:.1} KiB received",
            self.requests,
            self.kinds,
            self.bytes as f64 / 1024.0
        )
    }
}

/// Bytes of the pack a `git clone --depth 1` of `files` receives.
fn shallow_clone_bytes(files: &Files) -> u64 {
    let root = std::env::temp_dir().join(format!("bench-plan-{}", uuid::Uuid::new_v4()));
    let source = root.join("source");
    for (path, content) in files {
        let file = source.join(path);
        std::fs::create_dir_all(file.parent().expect("a file has a folder")).expect("mkdir");
        std::fs::write(&file, content).expect("write file");
    }
    git(&source, &["init", "-q", "-b", "main"]);
    git(&source, &["add", "-A"]);
    git(
        &source,
        &[
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=bench@example.com",
            "commit",
            "-q",
            "-m",
            "content",
        ],
    );
    let url = format!("file://{}", source.display());
    let clone = root.join("clone");
    git(
        &root,
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            "--no-local",
            &url,
            &clone.to_string_lossy(),
        ],
    );
    let bytes = pack_bytes(&clone.join(".git/objects/pack"));
    let _ = std::fs::remove_dir_all(&root);
    bytes
}

fn pack_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("pack folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pack"))
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum()
}

fn git(dir: &PathBuf, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?} failed");
}

fn edited(files: &mut Files, path: &str, rng: &mut Rng) -> Change {
    let content = document(rng, 424_242);
    if let Some(f) = files.iter_mut().find(|(p, _)| p == path) {
        f.1 = content.clone();
    }
    Change::Put(path.to_owned(), content)
}

/// Target 2: a one-document change, against a shallow clone of the same content.
async fn one_document_change(label: &str, bench: &Bench, files: &mut Files, path: &str) {
    let mut rng = Rng(7);
    let before = bench.document_rows().await;
    bench.push(&[edited(files, path, &mut rng)]);
    let outcome = bench.sync().await;
    let cost = bench.cost();
    let after = bench.document_rows().await;
    let written = after.iter().filter(|r| !before.contains(r)).count();
    let started = Instant::now();
    let clone = shallow_clone_bytes(files);
    println!(
        "{label}: one-document change: {cost}; {written} document row(s) written ({outcome:?})",
        outcome = short(&outcome)
    );
    println!(
        "{label}: shallow clone (git clone --depth 1 --no-local file://, pack received) {:.1} KiB ({:.1} s to build) = {:.0}x the sync's bytes (target >= 100x, requests <= 5)",
        clone as f64 / 1024.0,
        started.elapsed().as_secs_f64(),
        clone as f64 / cost.bytes.max(1) as f64
    );
}

fn short(outcome: &RepoOutcome) -> String {
    match outcome {
        RepoOutcome::Synced(c) => format!(
            "synced: {} added, {} changed, {} removed",
            c.added, c.changed, c.removed
        ),
        other => format!("{other:?}"),
    }
}

async fn initial(label: &str, bench: &Bench) {
    let started = Instant::now();
    let outcome = bench.sync().await;
    println!(
        "{label}: initial sync {:.1} s, {}; {}",
        started.elapsed().as_secs_f64(),
        bench.cost(),
        short(&outcome)
    );
}

async fn monorepo(label: &str, code_files: usize) {
    let mut rng = Rng(42);
    let mut files = common_files(&mut rng);
    files.extend(docs_folder(&mut rng, 200, 10));
    files.extend(code(&mut rng, code_files));
    let built = Instant::now();
    let bench = Bench::new("acme/mono", &files).await;
    let whole = bench
        .client
        .tree(
            "acme",
            "mono",
            &bench.gh.head_tree("acme/mono").expect("head"),
        )
        .await
        .expect("recursive read");
    println!(
        "== {label}: {} files, 200 documents; the whole recursive tree {} ({} entries listed) [{:.1} s to build]",
        files.len(),
        if whole.truncated {
            "is truncated by GitHub's limit"
        } else {
            "fits GitHub's limit"
        },
        whole.entries.len(),
        built.elapsed().as_secs_f64()
    );
    initial(label, &bench).await;

    // Target 1: a push outside the docs scope.
    let before = bench.document_rows().await;
    let change = Change::Put(
        "services/svc-000/src/mod-03/f000077.rs".into(),
        source(&mut rng, 77_777),
    );
    bench.push(std::slice::from_ref(&change));
    if let Change::Put(path, content) = &change
        && let Some(f) = files.iter_mut().find(|(p, _)| p == path)
    {
        f.1 = content.clone();
    }
    let outcome = bench.sync().await;
    let cost = bench.cost();
    let written = bench
        .document_rows()
        .await
        .iter()
        .filter(|r| !before.contains(r))
        .count();
    println!(
        "{label}: push outside the docs scope: {cost}; {written} document rows written; {} (target <= 2 requests, <= 8 KiB, 0 rows)",
        short(&outcome)
    );

    one_document_change(label, &bench, &mut files, "docs/section-03/page-00013.md").await;
}

async fn documentation_repository() {
    let mut rng = Rng(2000);
    let mut files = common_files(&mut rng);
    files.extend(docs_folder(&mut rng, 2000, 50));
    let bench = Bench::new("acme/handbook", &files).await;
    let label = "2,000-document repository";
    println!("== {label}: 50 sections of 40 documents");
    initial(label, &bench).await;
    one_document_change(label, &bench, &mut files, "docs/section-07/page-00007.md").await;
}

#[tokio::main]
async fn main() {
    documentation_repository().await;
    monorepo("monorepo", 50_000).await;
    monorepo("monorepo past the recursive limit", 110_000).await;
}
