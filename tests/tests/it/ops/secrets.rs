//! §3: no filter setting exposes a secret. Every function binary runs at `RUST_LOG=trace` for one
//! invocation through a stand-in of the Lambda Runtime API (so lambda_runtime's own logging, which
//! dumped the raw event, is the real one), with secrets in its environment and its event; the
//! output must show none of them.

use serde_json::{Value, json};
use shared::accounts::tokens;
use syncplane_tests::apigw;
use syncplane_tests::processes::{self, Invocation};

use super::Env;

/// A fresh random secret with a recognisable prefix.
fn secret(prefix: &str) -> String {
    format!("{prefix}{:032x}", rand::random::<u128>())
}

struct Secrets {
    api_token: String,
    webhook_secret: String,
    db_password: String,
}

impl Secrets {
    fn new() -> Self {
        Self {
            api_token: secret("apitoken"),
            webhook_secret: secret("whsecret"),
            db_password: secret("pgpass"),
        }
    }
}

/// The environment of a deployed function at trace level: secrets set, jobs inline.
fn function_vars(e: &Env, s: &Secrets) -> Vec<(String, String)> {
    let mut vars = e.vars();
    let mut url = url::Url::parse(e.db.url().expose()).unwrap();
    // Postgres on loopback trusts the connection; the password is there to be kept secret.
    url.set_password(Some(&s.db_password)).unwrap();
    vars.retain(|(k, _)| k != "DATABASE_URL");
    vars.extend(
        [
            ("DATABASE_URL", url.to_string()),
            ("SYNC_API_TOKEN", s.api_token.clone()),
            ("GITHUB_WEBHOOK_SECRET", s.webhook_secret.clone()),
            ("SYNC_SCHEDULER", "1".to_owned()),
            ("RUST_LOG", "trace".to_owned()),
        ]
        .map(|(k, v)| (k.to_owned(), v)),
    );
    vars
}

/// Every secret, checked against everything the process wrote.
fn assert_no_secret(function: &str, inv: &Invocation, secrets: &[String]) {
    let output = format!("{}\n{}", inv.output.stdout, inv.output.stderr);
    // The test only means something if trace logging was on inside lambda_runtime.
    assert!(
        output.contains("New event arrived"),
        "{function}: lambda_runtime's trace events are missing: {}",
        tail(&output)
    );
    for s in secrets {
        assert!(!s.is_empty());
        assert!(
            !output.contains(s.as_str()),
            "{function}: a secret ({}...) is in the logs",
            &s[..8.min(s.len())]
        );
    }
    assert!(
        !output.contains("raw JSON event received"),
        "{function}: the raw invocation event was logged"
    );
}

/// The end of what a process wrote (trace output is long).
fn tail(text: &str) -> &str {
    let from = text.len().saturating_sub(4000);
    let from = (from..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    &text[from..]
}

fn answered(function: &str, inv: &Invocation) -> Value {
    let body = inv.response.as_ref().unwrap_or_else(|| {
        panic!(
            "{function} did not answer (error: {:?}): {}",
            inv.error,
            tail(&inv.output.stderr)
        )
    });
    serde_json::from_slice(body).expect("a JSON response")
}

/// A middle line of the App's private key (the PEM's armour lines are not secret).
fn key_line(e: &Env) -> String {
    let pem = e.gh.private_key_pem();
    let lines: Vec<&str> = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    lines[lines.len() / 2].to_owned()
}

#[tokio::test]
async fn every_function_at_trace_keeps_its_secrets_out_of_the_logs() {
    let e = Env::new().await;
    let s = Secrets::new();
    let vars = function_vars(&e, &s);
    let (_, user) = syncplane_tests::provisioned::acme_and_ada(&e.db.pool).await;
    let device = tokens::issue_device_token(&e.db.pool, user, Some("laptop"))
        .await
        .unwrap()
        .token;

    let mut invocations = Vec::new();

    // sync-api: a manual sync of one repository (calls GitHub with installation tokens).
    let event = e.manual_sync_event(&s.api_token);
    let inv = processes::invoke("sync-api", &vars, &event).await;
    let reply = answered("sync-api", &inv);
    assert_eq!(reply["statusCode"], 202, "{reply}");
    invocations.push(("sync-api", inv));

    // webhook: a signed push for the other repository.
    let event = e.signed_push_event(&s.webhook_secret, "0f1e2d3c-0000-4000-8000-000000000099");
    let signature = event["headers"]["x-hub-signature-256"]
        .as_str()
        .and_then(|v| v.strip_prefix("sha256="))
        .expect("signed")
        .to_owned();
    let inv = processes::invoke("webhook", &vars, &event).await;
    let reply = answered("webhook", &inv);
    let status = reply["statusCode"].as_u64().unwrap_or(0);
    assert!((200..300).contains(&status), "webhook answered {reply}");
    invocations.push(("webhook", inv));

    // ingest: the hello call with a device token.
    let device_bearer = format!("Bearer {device}");
    let event = apigw::event(
        "GET",
        "/api/agent-sessions/hello",
        &[("authorization", &device_bearer)],
        None,
    );
    let inv = processes::invoke("ingest", &vars, &event).await;
    answered("ingest", &inv);
    invocations.push(("ingest", inv));

    // tick: the schedule runs a due full sync inline.
    let event = json!({
        "version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event", "source": "aws.events", "account": "000000000000",
        "time": "2026-11-30T12:00:00Z", "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:000000000000:rule/syncplane-tick"],
        "detail": {}
    });
    let inv = processes::invoke("tick", &vars, &event).await;
    answered("tick", &inv);
    invocations.push(("tick", inv));

    // worker: one SQS message carrying a repository job.
    let job = json!({"kind": "sync.repo", "tenant": "default", "trigger": "manual",
                     "repository": {"githubId": null, "owner": "acme", "name": "handbook"}});
    let event = json!({"Records": [{
        "messageId": "0b7b8b3e-0000-4000-8000-000000000001",
        "receiptHandle": "receipt-1",
        "body": job.to_string(),
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:syncplane-jobs",
        "awsRegion": "us-east-1"
    }]});
    let inv = processes::invoke("worker", &vars, &event).await;
    let reply = answered("worker", &inv);
    assert_eq!(reply["batchItemFailures"], json!([]), "{reply}");
    invocations.push(("worker", inv));

    let mut secrets = vec![
        s.api_token.clone(),
        s.webhook_secret.clone(),
        s.db_password.clone(),
        signature,
        device.clone(),
        key_line(&e),
    ];
    let tokens = e.gh.issued_tokens();
    assert!(!tokens.is_empty(), "the functions called GitHub");
    secrets.extend(tokens);
    for (function, inv) in &invocations {
        assert_no_secret(function, inv, &secrets);
    }
}
