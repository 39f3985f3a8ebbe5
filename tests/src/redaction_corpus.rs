//! Corpora for the device's secret redaction (`syncplane_agent::redact`, issue 20 point 5), as
//! JSON Lines transcripts shaped like an AI coding agent's session log (user prompts, assistant
//! text, tool calls and their results, nested records, JSON inside strings):
//!
//! - [`planted`]: secrets of every rule, `per_rule` generated variants each, in varied contexts
//!   (`.env` files, shell, YAML, code, curl, connection strings) and placements (message text,
//!   tool input, nested tool results, escaped JSON in a string, a `\u` escape inside the secret,
//!   `\/` slashes);
//! - [`ordinary_lines`]: at least `min_bytes` of ordinary code, logs and prose with nothing
//!   secret in it: the repository's own source files (test code aside) and docs read at run time, synthetic logs
//!   with UUIDs, git SHAs and digests, and base64 images; what redaction must leave alone.
//!
//! Both are deterministic for a seed (and, for the ordinary corpus, a checkout).

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::{Value, json};

/// splitmix64: small, stable across versions of everything.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    pub fn chars(&mut self, alphabet: &str, n: usize) -> String {
        let a = alphabet.as_bytes();
        (0..n).map(|_| char::from(a[self.below(a.len())])).collect()
    }
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URLSAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const HEX: &str = "0123456789abcdef";
const DIGITS: &str = "0123456789";

/// One planted secret: the rule that must catch it, the secret itself (absent from every string
/// of the redacted line, raw or JSON-escaped), and the transcript line it sits in.
#[derive(Debug, Clone)]
pub struct Planted {
    pub rule: &'static str,
    pub secret: String,
    pub line: String,
    /// How the text around the secret was printed ([`Shape::name`]; `plain` for [`planted`]).
    pub shape: &'static str,
}

/// A secret of `rule`, variant `k`; `None` for a rule this generator does not know.
pub fn secret(rule: &str, r: &mut Rng, k: usize) -> Option<String> {
    Some(match rule {
        "aws-access-key-id" => format!(
            "{}{}{}",
            ["AKIA", "ASIA", "AKIA", "ABIA", "ACCA"][k % 5],
            r.chars(UPPER, 4),
            r.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 12)
        ),
        "aws-secret-access-key" => format!(
            "{}/{}+{}",
            r.chars(ALNUM, 14),
            r.chars(B64, 12),
            r.chars(ALNUM, 12)
        ),
        "github-token" => match k % 6 {
            5 => format!("github_pat_11{}_{}", r.chars(ALNUM, 20), r.chars(ALNUM, 59)),
            i => format!(
                "{}{}",
                ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"][i],
                r.chars(ALNUM, 36)
            ),
        },
        "gitlab-token" => format!("glpat-{}", r.chars(URLSAFE, 20 + k % 3)),
        "anthropic-api-key" => format!(
            "sk-ant-{}-{}",
            ["api03", "admin01", "api03", "oat01", "api03"][k % 5],
            r.chars(URLSAFE, 95)
        ),
        "openai-api-key" => match k % 3 {
            0 => format!("sk-proj-{}", r.chars(URLSAFE, 156)),
            1 => format!("sk-{}T3BlbkFJ{}", r.chars(ALNUM, 20), r.chars(ALNUM, 20)),
            _ => format!("sk-svcacct-{}", r.chars(URLSAFE, 120)),
        },
        "openrouter-api-key" => format!("sk-or-v1-{}", r.chars(HEX, 64)),
        "stripe-key" => {
            let n = 24 + r.below(76);
            let prefix = ["sk_live_", "rk_live_", "whsec_", "sk_live_51", "rk_live_51"][k % 5];
            format!("{prefix}{}", r.chars(ALNUM, n))
        }
        "slack-token" => format!(
            "xox{}-{}-{}-{}",
            ["b", "p", "a", "r", "s"][k % 5],
            r.chars(DIGITS, 11),
            r.chars(DIGITS, 13),
            r.chars(ALNUM, 24)
        ),
        "google-api-key" => format!("AIzaSy{}", r.chars(URLSAFE, 33)),
        "twilio-key" => format!("{}{}", ["AC", "SK"][k % 2], r.chars(HEX, 32)),
        "twilio-auth-token" => r.chars(HEX, 32),
        "sendgrid-api-key" => format!("SG.{}.{}", r.chars(URLSAFE, 22), r.chars(URLSAFE, 43)),
        "supabase-token" => match k % 3 {
            2 => format!("sb_secret_{}", r.chars(URLSAFE, 32)),
            _ => format!("sbp_{}", r.chars(HEX, 40)),
        },
        "telegram-bot-token" => format!(
            "{}:AA{}",
            r.chars("123456789", 8 + k % 3),
            r.chars(URLSAFE, 33)
        ),
        "npm-token" => format!("npm_{}", r.chars(ALNUM, 36)),
        "pypi-token" => {
            let n = 50 + r.below(120);
            format!("pypi-AgEIcHlwaS5vcmc{}", r.chars(URLSAFE, n))
        }
        "jwt" => {
            let n = 60 + r.below(100);
            let header = r.chars(URLSAFE, 30);
            format!(
                "eyJ{header}.eyJ{}.{}",
                r.chars(URLSAFE, n),
                r.chars(URLSAFE, 43)
            )
        }
        "bearer-token" => format!("{}{}", r.chars(ALNUM, 24), r.chars(DIGITS, 4)),
        "basic-auth" => format!("{}{}=", r.chars(ALNUM, 23), r.chars(DIGITS, 4)),
        "private-key" => pem(r, k),
        "gcp-service-account" => r.chars(HEX, 40),
        "url-credentials" => format!(
            "{}{}{}",
            r.chars(ALNUM, 10),
            r.pick(&["!", "~", "."]),
            r.chars(DIGITS, 3)
        ),
        "generic-secret" => format!(
            "{}{}{}%{}",
            r.chars(ALNUM, 6),
            r.chars(DIGITS, 2),
            r.pick(&["#", "$", "!"]),
            r.chars(ALNUM, 8)
        ),
        _ => return None,
    })
}

fn pem(r: &mut Rng, k: usize) -> String {
    let kind = ["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA "][k % 6];
    let body: Vec<String> = (0..4 + r.below(10)).map(|_| r.chars(B64, 64)).collect();
    format!(
        "-----BEGIN {kind}PRIVATE KEY-----\n{}\n{}==\n-----END {kind}PRIVATE KEY-----\n",
        body.join("\n"),
        r.chars(B64, 22)
    )
}

/// The text around a secret `s` of `rule`, variant `k`.
fn context(rule: &str, s: &str, r: &mut Rng, k: usize) -> String {
    let host = r.pick(&[
        "db.internal",
        "10.0.3.7:5432",
        "cache.prod.example.net",
        "localhost",
    ]);
    let v = k % 5;
    match rule {
        "aws-secret-access-key" => [
            format!("[default]\naws_access_key_id = AKIA{}\naws_secret_access_key = {s}\n", r.chars(UPPER, 16)),
            format!("export AWS_SECRET_ACCESS_KEY=\"{s}\""),
            format!("{{\"Credentials\": {{\"SecretAccessKey\": \"{s}\", \"Expiration\": \"2026-12-01\"}}}}"),
            format!("env:\n  AWS_SECRET_ACCESS_KEY: {s}\n"),
            format!("aws secret key is {s}"),
        ][v].clone(),
        "gcp-service-account" => serde_json::to_string_pretty(&json!({"type": "service_account",
            "project_id": format!("proj-{}", r.chars(DIGITS, 5)), "private_key_id": s,
            "client_email": "sync@proj.iam.gserviceaccount.com", "client_id": r.chars(DIGITS, 21)}))
        .unwrap_or_default(),
        "twilio-auth-token" => {
            let sid = format!("AC{}", r.chars(HEX, 32));
            [
                format!("client = Client(\"{sid}\", \"{s}\")"),
                format!("curl -u {sid}:{s} https://api.twilio.com/2010-04-01/Accounts.json"),
                format!("TWILIO_ACCOUNT_SID={sid}\nTWILIO_AUTH_TOKEN={s}\n"),
                format!("const client = twilio('{sid}', '{s}');"),
                format!("twilio:\n  account_sid: {sid}\n  auth_token: {s}\n"),
            ][v]
                .clone()
        }
        "url-credentials" => [
            format!("DATABASE_URL=postgres://app:{s}@{host}/app"),
            format!("git clone https://oauth2:{s}@gitlab.example.com/team/repo.git"),
            format!("redis://:{s}@{host}/0"),
            format!("amqp://deploy:{s}@{host}:5672/vhost"),
            format!("mongodb+srv://admin:{s}@cluster0.mongodb.net/test"),
        ][v].clone(),
        "bearer-token" => [
            format!("curl -H \"Authorization: Bearer {s}\" https://api.example.com/v1/me"),
            format!("headers = {{'Authorization': 'Bearer {s}'}}"),
            format!("> Authorization: bearer {s}\n< HTTP/1.1 200 OK"),
            format!("fetch(url, {{headers: {{Authorization: `Bearer {s}`}}}})"),
            format!("BEARER {s}"),
        ][v].clone(),
        "basic-auth" => [
            format!("Authorization: Basic {s}"),
            format!("-H 'authorization: basic {s}'"),
            format!("{{\"Authorization\": \"Basic {s}\"}}"),
            format!("> Authorization: Basic {s}"),
            format!("headers['Authorization'] = 'Basic {s}'"),
        ][v].clone(),
        "generic-secret" => [
            format!("DB_PASSWORD={s}"),
            format!("spring.datasource.password: {s}"),
            format!("client_secret = \"{s}\""),
            format!("{{\"apiKey\": \"{s}\", \"region\": \"eu\"}}"),
            format!("mysql --password='{s}' -h {host}"),
        ][v].clone(),
        _ => [
            format!("export SERVICE_TOKEN={s}"),
            format!("I found this in the config: `{s}` — should it be rotated?"),
            format!("settings:\n  credential: {s}\n  retries: 3"),
            format!("const client = new Client(\"{s}\");"),
            format!("Line 12: {s}\nLine 13: ok"),
        ][v].clone(),
    }
}

/// A transcript line with `text` at the place `style` picks.
fn transcript_line(text: &str, style: usize, r: &mut Rng) -> Value {
    let uuid = uuid(r);
    match style % 5 {
        0 => json!({"type": "user", "uuid": uuid, "message": {"role": "user", "content": text}}),
        1 => json!({"type": "assistant", "uuid": uuid, "message": {"role": "assistant",
            "content": [{"type": "text", "text": "Let me check."},
                        {"type": "tool_use", "id": "toolu_01", "name": "Bash",
                         "input": {"command": text, "description": "run it"}}]}}),
        2 => json!({"type": "user", "uuid": uuid, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01",
             "content": [{"type": "text", "text": text}]}]},
            "toolUseResult": {"stdout": text, "stderr": "", "interrupted": false}}),
        3 => json!({"type": "user", "uuid": uuid, "toolUseResult": {
            "file": {"filePath": "/home/dev/app/.env", "content": json!({"lines": [text]}).to_string()}}}),
        _ => json!({"type": "assistant", "uuid": uuid, "message": {"content": [
            {"type": "thinking", "thinking": format!("The user pasted:\n{text}\nI should not repeat it.")}]}}),
    }
}

/// `per_rule` planted secrets for every rule in `rules`; a rule the generator does not know is in
/// the second list (so a test can demand that it is empty).
pub fn planted<'a>(
    rules: impl IntoIterator<Item = &'a str>,
    seed: u64,
    per_rule: usize,
) -> (Vec<Planted>, Vec<String>) {
    let mut r = Rng(seed);
    let (mut out, mut unknown) = (Vec::new(), Vec::new());
    for rule in rules {
        let Some(id) = syncplane_agent::redact::rule_ids().find(|id| *id == rule) else {
            unknown.push(rule.to_owned());
            continue;
        };
        for k in 0..per_rule {
            let Some(secret) = secret(id, &mut r, k) else {
                unknown.push(rule.to_owned());
                break;
            };
            let text = context(id, &secret, &mut r, k);
            let mut line = transcript_line(&text, k, &mut r).to_string();
            if k % 7 == 6 {
                line = hide(&line, &secret);
            }
            out.push(Planted {
                rule: id,
                secret,
                line,
                shape: "plain",
            });
        }
    }
    (out, unknown)
}

/// How a tool prints the text it read, ran or wrote (issue 31: a secret survives rendering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A file-reading tool's listing: `     12→line`.
    ReadArrow,
    /// `cat -n`: `    12\tline`.
    ReadTab,
    /// A JSON document inside a string (a `.jsonl` read, a request body logged): escaped twice.
    EscapedJson,
    /// Each line behind a log prefix.
    LogLines,
    /// The text as a string literal in code an edit or write tool shows (`\n` escapes).
    CodeLiteral,
    /// A Markdown table, a line per row.
    Table,
    /// A YAML block scalar (`run: |`).
    YamlBlock,
    /// A URL path segment (`/bot<token>/sendMessage` for a Telegram token).
    UrlPath,
    /// A query string value.
    QueryString,
    /// `curl -u user:<secret>` and `https://user:<secret>@host`.
    BasicAuth,
    /// A line of an env file among others.
    EnvFile,
}

impl Shape {
    pub const ALL: [Shape; 11] = [
        Shape::ReadArrow,
        Shape::ReadTab,
        Shape::EscapedJson,
        Shape::LogLines,
        Shape::CodeLiteral,
        Shape::Table,
        Shape::YamlBlock,
        Shape::UrlPath,
        Shape::QueryString,
        Shape::BasicAuth,
        Shape::EnvFile,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Shape::ReadArrow => "read-arrow",
            Shape::ReadTab => "read-tab",
            Shape::EscapedJson => "escaped-json",
            Shape::LogLines => "log-lines",
            Shape::CodeLiteral => "code-literal",
            Shape::Table => "table",
            Shape::YamlBlock => "yaml-block",
            Shape::UrlPath => "url-path",
            Shape::QueryString => "query-string",
            Shape::BasicAuth => "basic-auth",
            Shape::EnvFile => "env-file",
        }
    }

    /// Whether the shape wraps a whole snippet (any rule) or places a bare secret (a secret
    /// whose format alone names it).
    fn wraps(self) -> bool {
        !matches!(
            self,
            Shape::UrlPath | Shape::QueryString | Shape::BasicAuth | Shape::EnvFile
        )
    }
}

/// Rules whose secret needs the words around it (a name, a header, a scheme) to be one.
fn needs_context(rule: &str) -> bool {
    matches!(
        rule,
        "aws-secret-access-key"
            | "gcp-service-account"
            | "url-credentials"
            | "basic-auth"
            | "bearer-token"
            | "generic-secret"
            | "private-key"
            | "twilio-auth-token"
    )
}

fn numbered(text: &str, sep: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| format!("{:>6}{sep}{l}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `snippet` (text holding `secret`, a secret of `rule`) as `shape` prints it; `None` where the
/// shape places a bare secret and the rule's secret is no secret without its words.
fn render(shape: Shape, rule: &str, secret: &str, snippet: &str, r: &mut Rng) -> Option<String> {
    if !shape.wraps() && needs_context(rule) {
        return None;
    }
    let file = format!("// settings\nimport os\n{snippet}\nexport default config;");
    Some(match shape {
        Shape::ReadArrow => numbered(&file, "→"),
        Shape::ReadTab => numbered(&file, "\t"),
        Shape::EscapedJson => json!({"path": "logs/request.jsonl",
            "body": json!({"settings": {"value": snippet, "retries": 3}}).to_string()})
        .to_string(),
        Shape::LogLines => snippet
            .lines()
            .enumerate()
            .map(|(i, l)| {
                format!(
                    "2026-12-01T10:00:0{}.{:03}Z DEBUG app::config: {l}",
                    i % 10,
                    r.below(1000)
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Shape::CodeLiteral => format!(
            "const SAMPLE = {};\nconsole.log(SAMPLE.length);",
            serde_json::to_string(snippet).unwrap_or_default()
        ),
        Shape::Table => {
            let rows: Vec<String> = snippet
                .lines()
                .enumerate()
                .map(|(i, l)| format!("| {} | {} |", i + 1, l.replace('|', "\\|")))
                .collect();
            format!("| # | line |\n|---|---|\n{}", rows.join("\n"))
        }
        Shape::YamlBlock => format!(
            "jobs:\n  deploy:\n    steps:\n      - run: |\n{}",
            snippet
                .lines()
                .map(|l| format!("          {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        ),
        Shape::UrlPath if rule == "telegram-bot-token" => format!(
            "POST https://api.telegram.org/bot{secret}/sendMessage\nDEBUG:urllib3.connectionpool:https://api.telegram.org:443 \"POST /bot{secret}/getUpdates?timeout=30 HTTP/1.1\" 200 None"
        ),
        Shape::UrlPath => format!(
            "GET https://api.example.com/v1/keys/{secret}/usage HTTP/1.1\n> Host: api.example.com\n< HTTP/1.1 200 OK"
        ),
        Shape::QueryString => format!(
            "2026-12-01 10:00:00,123 DEBUG https://api.example.com:443 \"GET /v1/data?k={secret}&page=2 HTTP/1.1\" 200 512"
        ),
        Shape::BasicAuth => format!(
            "curl -sS -u deploy:{secret} https://ci.example.com/api/json\ngit clone https://x-access-token:{secret}@github.com/acme/app.git"
        ),
        Shape::EnvFile => format!(
            "# .env.production\nNODE_ENV=production\nSERVICE_CREDENTIAL={secret}\nPORT=8080\n"
        ),
    })
}

/// Tool call ids as Claude Code writes them (`toolu_01` and 22 base62 characters), a few reused:
/// the independent scanner takes them for high-entropy strings, and each one it reports is
/// documented (tests/fixtures/redaction/detect-secrets-accepted.json).
pub const TOOL_IDS: [&str; 3] = [
    "toolu_01A09q90qw90lq917835lq9a",
    "toolu_01XJ8mV2nKcQhVz5bEwT3pLd",
    "toolu_016YxwPq4sZ2gHb9cN7rT1Ue",
];

/// Where a rendered text goes in a transcript: a file read's result, a command's output, a
/// written file, a message.
fn shaped_line(shape: Shape, text: &str, r: &mut Rng, k: usize) -> Value {
    let uuid = uuid(r);
    let tool_id = TOOL_IDS[k % TOOL_IDS.len()];
    match shape {
        Shape::ReadArrow | Shape::ReadTab => json!({"type": "user", "uuid": uuid,
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": tool_id, "content": text}]},
            "toolUseResult": {"type": "text", "file": {"filePath": "/home/dev/app/config.ts",
                "numLines": text.lines().count()}}}),
        Shape::CodeLiteral => json!({"type": "assistant", "uuid": uuid, "message": {"content": [
            {"type": "tool_use", "id": tool_id, "name": "Write",
             "input": {"file_path": "/home/dev/app/sample.ts", "content": text}}]}}),
        _ => transcript_line(text, k, r),
    }
}

/// Every rule of `rules` in every [`Shape`] that can hold its secret, the context around the
/// secret varied (`variants` per rule and shape); rules the generator does not know are in the
/// second list.
pub fn rendered<'a>(
    rules: impl IntoIterator<Item = &'a str>,
    seed: u64,
    variants: usize,
) -> (Vec<Planted>, Vec<String>) {
    let mut r = Rng(seed);
    let (mut out, mut unknown) = (Vec::new(), Vec::new());
    for rule in rules {
        let Some(id) = syncplane_agent::redact::rule_ids().find(|id| *id == rule) else {
            unknown.push(rule.to_owned());
            continue;
        };
        for shape in Shape::ALL {
            for k in 0..variants {
                let Some(secret) = secret(id, &mut r, k) else {
                    unknown.push(rule.to_owned());
                    return (out, unknown);
                };
                let snippet = context(id, &secret, &mut r, k);
                let Some(text) = render(shape, id, &secret, &snippet, &mut r) else {
                    break;
                };
                out.push(Planted {
                    rule: id,
                    line: shaped_line(shape, &text, &mut r, k).to_string(),
                    secret,
                    shape: shape.name(),
                });
            }
        }
    }
    (out, unknown)
}

/// The line with the secret's fifth character as a `\u` escape and every `/` as `\/` (both are
/// valid JSON for the same string).
fn hide(line: &str, secret: &str) -> String {
    let Some(c) = secret.chars().nth(4).filter(char::is_ascii_alphanumeric) else {
        return line.replace('/', "\\/");
    };
    let hidden = format!("{}\\u{:04x}{}", &secret[..4], u32::from(c), &secret[5..]);
    line.replace(secret, &hidden).replace('/', "\\/")
}

/// Whether `secret` survives anywhere in `line` (raw, or in any string decoded, or JSON-escaped
/// inside a string). A secret of several lines (a PEM block) survives when any of its lines of
/// 16 characters or more does, whatever a tool printed around them.
pub fn survives(line: &str, secret: &str) -> bool {
    let mut all = vec![line.to_owned()];
    if let Ok(v) = serde_json::from_str::<Value>(line) {
        strings(&v, &mut all);
        // A JSON document inside a string, decoded once more.
        for s in all.clone() {
            if let Ok(inner) = serde_json::from_str::<Value>(&s) {
                strings(&inner, &mut all);
            }
        }
    }
    pieces(secret).iter().any(|piece| {
        let escaped = serde_json::to_string(piece).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        all.iter().any(|s| s.contains(piece) || s.contains(escaped))
    })
}

/// The parts of `secret` that must not survive: itself, or for several lines each line of 16
/// characters or more but the PEM armour.
pub fn pieces(secret: &str) -> Vec<&str> {
    if !secret.contains('\n') {
        return vec![secret];
    }
    secret
        .lines()
        .map(str::trim)
        .filter(|l| l.len() >= 16 && !l.starts_with("-----"))
        .collect()
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push(k.clone());
            strings(x, out);
        }),
        _ => {}
    }
}

fn uuid(r: &mut Rng) -> String {
    let h = r.chars(HEX, 32);
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..]
    )
}

/// The repository's root (this crate's parent directory).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

const TEXT_EXTENSIONS: &[&str] = &[
    "rs", "md", "sql", "toml", "yaml", "yml", "sh", "json", "txt", "py",
];
/// Not ordinary: the redaction's own rules and tests, and these corpora (secrets by design).
const SECRET_SOURCES: &[&str] = &[
    "clients/agent-sync/src/redact",
    "tests/src/redaction_corpus.rs",
];
const SKIPPED_DIRS: &[&str] = &["target", "node_modules"];

/// Not the repository's text either: what tools install into a checkout. A hidden directory
/// (`.git`, `.venv-sam` of `scripts/tools.sh`, `.aws-sam`, `.syncplane`) or any Python virtual
/// environment holds thousands of third-party files, AWS's documented example keys among them;
/// CI installs the SAM CLI into `.venv-sam` before the tests run, so counting them made the
/// ordinary corpus depend on what was installed.
fn installed_here(name: &str, path: &Path) -> bool {
    name.starts_with('.') || SKIPPED_DIRS.contains(&name) || path.join("pyvenv.cfg").exists()
}

/// Test code is not ordinary either: it holds credentials on purpose (GitHub's documented
/// example token, PEM fixtures, `postgres://app:<password>@` URLs for the log scrubber's tests),
/// which redaction rightly removes. Test directories are skipped and a Rust file is cut at its
/// first `#[cfg(test)]` (where this codebase puts its unit tests).
fn test_code(rel: &str) -> bool {
    rel.starts_with("tests/") || rel.contains("/tests/") || rel.ends_with("tests.rs")
}

fn production_part(rel: &str, text: String) -> String {
    match text.find("#[cfg(test)]") {
        Some(at) if rel.ends_with(".rs") => text[..at].to_owned(),
        _ => text,
    }
}

/// The repository's text files but test code, path order: (relative path, text).
pub fn sources(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            let name = entry.file_name().to_string_lossy().into_owned();
            if SECRET_SOURCES.iter().any(|s| rel.starts_with(s)) || test_code(&rel) {
                continue;
            }
            if path.is_dir() {
                if !installed_here(&name, &path) {
                    dirs.push(path);
                }
            } else if path
                .extension()
                .is_some_and(|e| TEXT_EXTENSIONS.contains(&e.to_string_lossy().as_ref()))
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                let text = production_part(&rel, text);
                out.push((rel, text));
            }
        }
    }
    out.sort();
    out
}

const LEVELS: &[&str] = &["INFO", "DEBUG", "WARN", "INFO", "ERROR", "TRACE"];
const TARGETS: &[&str] = &[
    "ingest",
    "sync_api",
    "worker::jobs",
    "agent_sync::lane",
    "sqlx::query",
    "hyper::server",
];
const ROUTES: &[&str] = &[
    "/api/agent-sessions",
    "/api/agent-sessions/hello",
    "/api/agent-sessions/transcripts/state",
    "/graphql",
    "/healthz",
];
const COMMANDS: &[&str] = &[
    "cargo test -p shared --lib",
    "git status --short",
    "git log --oneline -20",
    "ls -la src/",
    "rg -n 'fn main' .",
    "cargo clippy --workspace -- -D warnings",
    "docker compose ps",
    "kubectl get pods -n sync",
];

/// Synthetic logs: timestamps, levels, request ids (UUIDs), commit SHAs, digests, durations.
fn log_block(r: &mut Rng, lines: usize) -> String {
    let mut out = String::new();
    for i in 0..lines {
        let line = match r.below(5) {
            0 => format!(
                "2026-12-01T{:02}:{:02}:{:02}.{:03}Z {} {}: {} {} {} in {}ms request_id={}",
                r.below(24),
                r.below(60),
                r.below(60),
                r.below(1000),
                r.pick(LEVELS),
                r.pick(TARGETS),
                r.pick(&["GET", "POST", "PUT"]),
                r.pick(ROUTES),
                r.pick(&["200", "201", "204", "409", "429", "503"]),
                r.below(900),
                uuid(r)
            ),
            1 => format!(
                "commit {}\nAuthor: Dev {} <dev{}@example.com>\n\n    fix: handle retry #{}",
                r.chars(HEX, 40),
                i,
                i,
                r.below(999)
            ),
            2 => format!(
                "{}  {}  target/release/bundle-{}.tar.zst",
                r.chars(HEX, 64),
                r.below(1 << 30),
                r.chars(HEX, 7)
            ),
            3 => format!(
                "test {}::{}_{} ... {} ({}.{:02}s) session={} offset={}",
                r.pick(TARGETS),
                r.pick(&["tick", "backoff", "segment", "cursor"]),
                r.pick(&["works", "retries", "holds"]),
                r.pick(&["ok", "ok", "FAILED", "ignored"]),
                r.below(9),
                r.below(100),
                uuid(r),
                r.below(1 << 24)
            ),
            _ => format!(
                "{} | {:>6} | pid {} | mem {} KiB | cpu {}.{}% | {}",
                r.pick(&["web", "worker", "db"]),
                r.pick(LEVELS),
                r.below(65536),
                r.below(1 << 20),
                r.below(100),
                r.below(10),
                r.pick(&[
                    "connection accepted",
                    "checkpoint complete",
                    "vacuum finished",
                    "pool exhausted, waiting"
                ])
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A few consecutive lines of a source file, from a random place.
fn excerpt(r: &mut Rng, text: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let start = r.below(lines.len());
    let n = 1 + r.below(max_lines);
    lines[start..(start + n).min(lines.len())].join("\n")
}

/// At least `min_bytes` of ordinary transcript lines (code, logs, prose, images), from `seed`
/// and the repository's own files read now.
pub fn ordinary_lines(seed: u64, min_bytes: usize) -> Vec<String> {
    let sources = sources(&repo_root());
    let docs: Vec<&(String, String)> = sources.iter().filter(|(p, _)| p.ends_with(".md")).collect();
    let mut r = Rng(seed);
    let (mut out, mut total) = (Vec::new(), 0usize);
    while total < min_bytes && !sources.is_empty() {
        let (path, text) = &sources[r.below(sources.len())];
        let prose = docs
            .get(r.below(docs.len().max(1)))
            .map_or("", |(_, t)| t.as_str());
        let uuid = uuid(&mut r);
        let line = match r.below(20) {
            0..=4 => json!({"type": "user", "uuid": uuid, "message": {"role": "user",
                "content": excerpt(&mut r, prose, 6)}}),
            5..=8 => json!({"type": "assistant", "uuid": uuid, "message": {"role": "assistant",
                "content": [{"type": "text", "text": excerpt(&mut r, prose, 12)}]}}),
            9..=10 => json!({"type": "assistant", "uuid": uuid, "message": {"content": [
                {"type": "tool_use", "id": format!("toolu_{}", r.chars(ALNUM, 24)), "name": "Read",
                 "input": {"file_path": format!("/home/dev/syncplane/{path}")}}]}}),
            11..=14 => json!({"type": "user", "uuid": uuid, "message": {"content": [
                {"type": "tool_result", "tool_use_id": format!("toolu_{}", r.chars(ALNUM, 24)),
                 "content": excerpt(&mut r, text, 60)}]},
                "toolUseResult": {"type": "text", "file": {"filePath": path, "numLines": 60}}}),
            15..=16 => json!({"type": "assistant", "uuid": uuid, "message": {"content": [
                {"type": "tool_use", "name": "Bash", "input": {"command": r.pick(COMMANDS)}}]}}),
            17..=18 => {
                let n = 3 + r.below(40);
                json!({"type": "user", "uuid": uuid, "toolUseResult": {"stdout": log_block(&mut r, n),
                    "stderr": "", "interrupted": false}})
            }
            _ => image_line(&mut r, uuid),
        };
        let line = line.to_string();
        total += line.len() + 1;
        out.push(line);
    }
    out
}

fn image_line(r: &mut Rng, uuid: String) -> Value {
    let bytes: Vec<u8> = (0..2048 + r.below(12_000))
        .map(|_| r.next_u64() as u8)
        .collect();
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    json!({"type": "user", "uuid": uuid, "message": {"content": [{"type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": data}}]}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_tools_install_into_the_checkout_is_not_ordinary_text() {
        let root = std::env::temp_dir().join(format!("corpus-{}", std::process::id()));
        let write = |rel: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "text\n").unwrap();
        };
        write("src/lib.rs");
        write(".venv-sam/lib/python3/site-packages/botocore/docs.md");
        write("venv/pyvenv.cfg");
        write("venv/lib/keys.py");
        write("target/debug/build/out.rs");
        let found: Vec<String> = sources(&root).into_iter().map(|(p, _)| p).collect();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(found, vec!["src/lib.rs".to_owned()]);
    }
}
