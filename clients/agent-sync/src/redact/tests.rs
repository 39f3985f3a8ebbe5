//! The ruleset against generated secrets (every rule, at least five variants each, planted in the
//! string values of transcript-like lines: top level, nested objects, arrays, JSON inside a
//! string, a `\u` escape in the middle of the secret) and against ordinary text that must come
//! out as it went in.

use serde_json::{Value, json};

use super::*;

/// splitmix64: a small deterministic generator (no dependency, the same variants every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn from(&mut self, alphabet: &str, n: usize) -> String {
        let a = alphabet.as_bytes();
        (0..n).map(|_| char::from(a[self.below(a.len())])).collect()
    }
    fn alnum(&mut self, n: usize) -> String {
        self.from(ALNUM, n)
    }
    fn hex(&mut self, n: usize) -> String {
        self.from("0123456789abcdef", n)
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URLSAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

/// A secret of rule `id` (variant `k`) and the text it sits in.
fn plant(id: &str, r: &mut Rng, k: usize) -> (String, String) {
    let secret = match id {
        "aws-access-key-id" => format!(
            "{}{}",
            r.pick(&["AKIA", "ASIA", "ABIA", "ACCA"]),
            r.from("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
        ),
        "aws-secret-access-key" => format!("{}{}", r.alnum(20), r.from(B64, 20)),
        "github-token" => match k % 3 {
            0 => format!("github_pat_{}_{}", r.alnum(22), r.alnum(59)),
            _ => format!("gh{}_{}", r.pick(&["p", "o", "u", "s", "r"]), r.alnum(36)),
        },
        "gitlab-token" => format!("glpat-{}", r.from(URLSAFE, 20)),
        "anthropic-api-key" => format!("sk-ant-api03-{}AA", r.from(URLSAFE, 93)),
        "openai-api-key" => match k % 2 {
            0 => format!("sk-proj-{}", r.from(URLSAFE, 156)),
            _ => format!("sk-{}T3BlbkFJ{}", r.alnum(20), r.alnum(20)),
        },
        "openrouter-api-key" => format!("sk-or-v1-{}", r.hex(64)),
        "stripe-key" => format!(
            "{}{}",
            r.pick(&["sk_live_", "rk_live_", "whsec_", "sk_test_"]),
            r.alnum(32)
        ),
        "slack-token" => format!(
            "xox{}-{}-{}-{}",
            r.pick(&["a", "b", "p", "r", "s"]),
            r.from("0123456789", 12),
            r.from("0123456789", 13),
            r.alnum(24)
        ),
        "google-api-key" => format!("AIza{}", r.from(URLSAFE, 35)),
        "twilio-key" => format!("{}{}", r.pick(&["AC", "SK"]), r.hex(32)),
        "twilio-auth-token" => r.hex(32),
        "sendgrid-api-key" => format!("SG.{}.{}", r.from(URLSAFE, 22), r.from(URLSAFE, 43)),
        "supabase-token" => format!("sbp_{}", r.hex(40)),
        "telegram-bot-token" => format!(
            "{}:AA{}",
            r.from("123456789", 9 + k % 2),
            r.from(URLSAFE, 33)
        ),
        "npm-token" => format!("npm_{}", r.alnum(36)),
        "pypi-token" => format!("pypi-AgEIcHlwaS5vcmc{}", r.from(URLSAFE, 60)),
        "jwt" => format!(
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{}.{}",
            r.from(URLSAFE, 40),
            r.from(URLSAFE, 43)
        ),
        "bearer-token" => format!("{}{}", r.alnum(30), r.from("0123456789", 2)),
        "basic-auth" => format!("{}{}==", r.alnum(20), r.from("0123456789", 2)),
        "private-key" => format!(
            "-----BEGIN {}PRIVATE KEY-----\n{}\n{}\n-----END {}PRIVATE KEY-----",
            ["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "][k % 5],
            r.from(B64, 64),
            r.from(B64, 40),
            ["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "][k % 5],
        ),
        "gcp-service-account" => r.hex(40),
        "url-credentials" => format!("{}{}", r.alnum(12), r.from("0123456789", 3)),
        "generic-secret" => format!("{}#{}9", r.alnum(10), r.alnum(4)),
        other => panic!("no generator for rule {other}"),
    };
    let text = context(id, &secret, r, k);
    (secret, text)
}

fn context(id: &str, s: &str, r: &mut Rng, k: usize) -> String {
    let user = r.pick(&["admin", "deploy", "app", "ci"]);
    match id {
        "aws-secret-access-key" => [
            format!("export AWS_SECRET_ACCESS_KEY={s}"),
            format!("aws_secret_access_key = {s}\nregion = eu-west-1"),
            format!("{{\"AccessKeyId\": \"AKIA\", \"SecretAccessKey\": \"{s}\"}}"),
            format!("aws configure set aws_secret_access_key '{s}'"),
            format!("AWS secret: {s}"),
        ][k % 5]
            .clone(),
        "bearer-token" => format!("curl -H 'Authorization: Bearer {s}' https://api.example.com/v1"),
        "basic-auth" => format!("Authorization: Basic {s}"),
        "twilio-auth-token" => {
            let sid = format!("AC{}", r.hex(32));
            [
                format!("client = Client(\"{sid}\", \"{s}\")"),
                format!("curl -u {sid}:{s} https://api.twilio.com/2010-04-01/Accounts"),
                format!("TWILIO_ACCOUNT_SID={sid}\nTWILIO_AUTH_TOKEN={s}"),
                format!("twilio:\n  token: {s}\n  sid: {sid}"),
                format!("new Twilio('{s}') // for {sid}"),
            ][k % 5]
                .clone()
        }
        "gcp-service-account" => serde_json::to_string_pretty(&json!({
            "type": "service_account", "project_id": "demo-1", "private_key_id": s,
            "client_email": "x@demo-1.iam.gserviceaccount.com"}))
        .unwrap_or_default(),
        "url-credentials" => format!(
            "git remote add origin {}://{user}:{s}@{}/repo.git",
            r.pick(&["https", "postgres", "redis", "amqp", "mysql"]),
            r.pick(&["db.internal", "example.org:5432"])
        ),
        "generic-secret" => [
            format!("password={s}"),
            format!("DB_PASSWORD: \"{s}\""),
            format!("api_key = '{s}'"),
            format!("client_secret: {s}"),
            format!("{{\"token\": \"{s}\"}}"),
        ][k % 5]
            .clone(),
        _ => [
            format!("Here is the value: {s}"),
            format!("export TOKEN_VALUE=\"{s}\""),
            format!("config:\n  key: {s}\n  other: 1"),
            format!("({s})"),
            format!("line one\n{s}\nline three"),
        ][k % 5]
            .clone(),
    }
}

/// The text at a place of a transcript-like line, by style.
fn line_with(text: &str, style: usize) -> String {
    let v = match style % 4 {
        0 => json!({"type": "assistant", "uuid": "9a1f", "message": {"role": "assistant",
            "content": [{"type": "text", "text": text}]}}),
        1 => json!({"type": "assistant", "message": {"content": [{"type": "tool_use",
            "name": "Bash", "input": {"command": text, "timeout": 120000}}]}}),
        2 => json!({"type": "user", "message": {"content": [{"type": "tool_result",
            "content": [{"type": "text", "text": text}], "is_error": false}]}}),
        _ => json!({"type": "user", "toolUseResult": {
            "stdout": json!({"log": [text], "n": 1.5e3}).to_string()}}),
    };
    v.to_string()
}

/// Every string of a JSON document, recursively (keys too).
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

fn assert_gone(redactor: &Redactor, id: &str, secret: &str, line: &str) {
    let out = redactor.redact_line(line);
    let escaped = json::encode(secret);
    let escaped = &escaped[1..escaped.len() - 1];
    let doc: Value = serde_json::from_str(&out.text).expect("the redacted line is JSON");
    let mut all = Vec::new();
    strings(&doc, &mut all);
    for s in all.iter().map(String::as_str).chain([out.text.as_ref()]) {
        assert!(
            !s.contains(secret) && !s.contains(escaped),
            "{id}: secret {secret:?} survived in {line}\n -> {}",
            out.text
        );
    }
    let placeholder = format!("[REDACTED:{id}]");
    assert!(
        out.text.contains(&placeholder),
        "{id}: no {placeholder} in {}",
        out.text
    );
    assert!(
        out.hits.iter().any(|(r, n)| *r == id && *n >= 1),
        "{id}: {:?}",
        out.hits
    );
}

#[test]
fn every_rule_removes_five_generated_variants_planted_in_json_string_values() {
    let redactor = Redactor::new();
    let mut r = Rng(20);
    for id in rule_ids() {
        for k in 0..8 {
            let (secret, text) = plant(id, &mut r, k);
            assert_gone(&redactor, id, &secret, &line_with(&text, k));
        }
    }
}

#[test]
fn a_secret_split_across_json_escapes_is_removed() {
    let redactor = Redactor::new();
    let mut r = Rng(7);
    for id in rule_ids().filter(|id| !matches!(*id, "private-key" | "gcp-service-account")) {
        for k in 0..5 {
            let (secret, text) = plant(id, &mut r, k);
            let line = line_with(&text, k % 3);
            // The secret's third character written as a \u escape, and its slashes as \/.
            let c = secret.as_bytes()[2];
            let hidden = format!("{}\\u{:04x}{}", &secret[..2], c, &secret[3..]);
            let line = line.replacen(&secret, &hidden, 1).replace('/', "\\/");
            assert!(!line.contains(&secret), "{id}: not hidden: {line}");
            assert_gone(&redactor, id, &secret, &line);
        }
    }
}

#[test]
fn a_service_account_document_as_a_nested_object_loses_its_key_and_key_id() {
    let redactor = Redactor::new();
    let pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n";
    let line = json!({"type": "user", "toolUseResult": {"file": {"type": "service_account",
        "project_id": "demo", "private_key_id": "0123456789abcdef0123456789abcdef01234567",
        "private_key": pem}}})
    .to_string();
    let out = redactor.redact_line(&line);
    assert!(!out.text.contains("0123456789abcdef"), "{}", out.text);
    assert!(!out.text.contains("MIIEvQ"), "{}", out.text);
    assert!(out.text.contains("[REDACTED:gcp-service-account]"));
    assert!(out.text.contains("[REDACTED:private-key]"));
}

#[test]
fn a_member_named_like_a_secret_loses_a_random_value_but_keeps_an_ordinary_one() {
    let redactor = Redactor::new();
    let line = r#"{"env":{"DB_PASSWORD":"Xk9#mP2$vL7q","API_KEY":"a8Fq2LmZ0pRt7YwE","password":"hunter","token_count":"12","secret_name":"prod_db_password_v2"}}"#;
    let out = redactor.redact_line(line);
    assert_eq!(
        out.text,
        r#"{"env":{"DB_PASSWORD":"[REDACTED:generic-secret]","API_KEY":"[REDACTED:generic-secret]","password":"hunter","token_count":"12","secret_name":"prod_db_password_v2"}}"#
    );
    assert_eq!(out.hits, vec![("generic-secret", 2)]);
}

#[test]
fn a_weak_password_in_prose_passes_and_a_random_one_is_redacted() {
    let redactor = Redactor::new();
    for ordinary in [
        "the password=hunter example is famous",
        "password: Option<String>, token: &str",
        "let secret = config.secret_key.clone();",
        "api_key=${OPENAI_API_KEY}",
        "password = os.environ[\"DB_PASSWORD\"]",
        "secretsmanager:GetSecretValue on arn:aws:secretsmanager:eu-west-1:123456789012:secret:x",
        "token: nextPageToken2",
        "\"ServiceToken\": \"arn:aws:lambda:us-east-1:123456789012:function:Migrate\"",
    ] {
        let line = line_with(ordinary, 0);
        assert_eq!(
            redactor.redact_line(&line).text,
            line.as_str(),
            "{ordinary}"
        );
    }
    let line = line_with("mysql -u root password=Xk9#mP2$vL7q", 0);
    let out = redactor.redact_line(&line);
    assert!(
        out.text.contains("password=[REDACTED:generic-secret]"),
        "{}",
        out.text
    );
}

#[test]
fn ordinary_text_comes_out_as_it_went_in_and_borrowed() {
    let redactor = Redactor::new();
    let image: String = Rng(3).from(B64, 8192);
    let ordinary = [
        "fn main() { let key = map.get(&id).unwrap_or_default(); println!(\"{key}\"); }",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Dev <dev@example.com>",
        "session 550e8400-e29b-41d4-a716-446655440000 started at 2026-12-01T10:00:00Z",
        "2026-12-01T10:00:00.123Z INFO ingest: POST /api/agent-sessions 200 in 12ms",
        "See https://docs.rs/regex/latest/regex/ and git@github.com:org/repo.git",
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "The task-runner and the disk-usage tool; sklearn's sk-learn style, SKU 12",
        "Bearer tokens are checked first; the bearer of bad news",
        "Le mot de passe est stocké chiffré — 密码 — пароль, ça va? 🚀",
        "ASIA and AKIA are prefixes; AC/DC; SG. Bernstein; eyJ is base64 of {\"",
        &image,
    ];
    for (i, text) in ordinary.iter().enumerate() {
        let line = line_with(text, i);
        let out = redactor.redact_line(&line);
        assert!(matches!(out.text, Cow::Borrowed(_)), "{text}: {}", out.text);
        assert!(out.hits.is_empty());
        let image_line = json!({"type": "image", "source": {"type": "base64",
            "media_type": "image/png", "data": image}})
        .to_string();
        assert_eq!(redactor.redact_line(&image_line).text, image_line.as_str());
    }
}

#[test]
fn a_line_that_is_not_json_is_redacted_as_one_string() {
    let redactor = Redactor::new();
    let key = "AKIAIOSFODNN7EXAMPLQ";
    let line = format!("not json {{ export AWS_ACCESS_KEY_ID={key} and \"half");
    let out = redactor.redact_line(&line);
    assert_eq!(
        out.text,
        "not json { export AWS_ACCESS_KEY_ID=[REDACTED:aws-access-key-id] and \"half"
    );
    assert_eq!(out.hits, vec![("aws-access-key-id", 1)]);
    let plain = "just a log line, no secret";
    assert_eq!(redactor.redact_line(plain).text, plain);
}

#[test]
fn non_ascii_text_around_a_secret_is_kept_and_the_rest_of_the_line_byte_for_byte() {
    let redactor = Redactor::new();
    let token = format!("ghp_{}", Rng(9).alnum(36));
    let line = format!(
        "{{\"n\": 1.50e3, \"t\":  \"clé 🔑: {token} — fin\", \"x\": [\"\\u00e9t\\u00e9\"], \"big\": 123456789012345678901234567890}}"
    );
    let out = redactor.redact_line(&line);
    assert_eq!(
        out.text,
        "{\"n\": 1.50e3, \"t\":  \"clé 🔑: [REDACTED:github-token] — fin\", \"x\": [\"\\u00e9t\\u00e9\"], \"big\": 123456789012345678901234567890}"
    );
}

#[test]
fn overlapping_finds_become_one_placeholder_of_the_more_specific_rule() {
    let redactor = Redactor::new();
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    let line = line_with(&format!("Authorization: Bearer {jwt}"), 1);
    let out = redactor.redact_line(&line);
    assert!(out.text.contains("Bearer [REDACTED:jwt]"), "{}", out.text);
    assert_eq!(out.hits, vec![("jwt", 1)]);
    let key = format!("sk-ant-api03-{}", Rng(4).from(URLSAFE, 90));
    let line = line_with(&format!("ANTHROPIC_API_KEY={key}"), 0);
    let out = redactor.redact_line(&line);
    assert!(
        out.text.contains("[REDACTED:anthropic-api-key]"),
        "{}",
        out.text
    );
    assert_eq!(out.hits, vec![("anthropic-api-key", 1)]);
}

#[test]
fn redaction_is_deterministic_and_idempotent() {
    let redactor = Redactor::new();
    let mut r = Rng(11);
    for id in rule_ids() {
        let (_, text) = plant(id, &mut r, 0);
        let line = line_with(&text, 2);
        let once = redactor.redact_line(&line).text.into_owned();
        assert_eq!(redactor.redact_line(&line).text, once.as_str());
        assert_eq!(redactor.redact_line(&once).text, once.as_str(), "{id}");
    }
}

/// The three shapes a stranger's suite found leaking (issue 31): a Twilio auth token beside its
/// account SID, a Telegram bot token in a URL path and in request logs, and a PEM block as a
/// file-reading tool prints it (numbered lines, inside a JSON string with `\n` escapes).
#[test]
fn secrets_rendered_by_tools_in_unexpected_shapes_are_removed() {
    let redactor = Redactor::new();
    let mut r = Rng(31);
    let sid = format!("AC{}", r.hex(32));
    let twilio = r.hex(32);
    let bot = format!("{}:AA{}", r.from("123456789", 10), r.from(URLSAFE, 33));
    let body: Vec<String> = (0..6).map(|_| r.from(B64, 64)).collect();
    let pem = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
        body.join("\n")
    );
    let numbered = |text: &str, arrow: &str| {
        text.lines()
            .enumerate()
            .map(|(i, l)| format!("{:>6}{arrow}{l}", i + 1))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let read_result = |text: String| {
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": "toolu_01", "content": text}]}})
        .to_string()
    };
    let cases: Vec<(&str, &str, String)> = vec![
        (
            "twilio-auth-token",
            &twilio,
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Write",
                "input": {"file_path": "/app/sms.py", "content": format!(
                    "from twilio.rest import Client\n\nclient = Client(\"{sid}\", \"{twilio}\")\n")}}]}})
            .to_string(),
        ),
        (
            "twilio-auth-token",
            &twilio,
            line_with(&format!("curl -X POST https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages.json -u {sid}:{twilio}"), 1),
        ),
        (
            "telegram-bot-token",
            &bot,
            line_with(&format!("requests.post(\"https://api.telegram.org/bot{bot}/sendMessage\", data=payload)"), 1),
        ),
        (
            "telegram-bot-token",
            &bot,
            line_with(&format!("DEBUG:urllib3.connectionpool:https://api.telegram.org:443 \"POST /bot{bot}/sendMessage HTTP/1.1\" 200 None\nDEBUG:urllib3.connectionpool:https://api.telegram.org:443 \"POST /bot{bot}/getUpdates?offset=1 HTTP/1.1\" 200 None"), 3),
        ),
        ("private-key", &body[2], read_result(numbered(&pem, "→"))),
        ("private-key", &body[4], read_result(numbered(&pem, "\t"))),
        (
            "private-key",
            &body[0],
            // The same, inside a JSON document that is itself a string (a `cat` of a .jsonl).
            line_with(&json!({"content": numbered(&pem, "→")}).to_string(), 3),
        ),
    ];
    for (id, secret, line) in cases {
        assert_gone(&redactor, id, secret, &line);
        if id == "twilio-auth-token" {
            assert_gone(&redactor, "twilio-key", &sid, &line);
        }
    }
}

#[test]
fn a_token_after_an_escaped_line_break_in_escaped_text_is_found() {
    let redactor = Redactor::new();
    let token = format!("ghp_{}", Rng(5).alnum(36));
    // A log that quotes JSON: the token follows `\n` written as two characters.
    let text = json!({"msg": format!("first\nGITHUB_TOKEN\n{token}")}).to_string();
    assert_gone(&redactor, "github-token", &token, &line_with(&text, 0));
    assert_gone(
        &redactor,
        "github-token",
        &token,
        &line_with(&json!({"s": text}).to_string(), 0),
    );
}
