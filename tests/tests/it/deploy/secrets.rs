//! Secrets by reference (issue 13 point 3) against the moto emulator on loopback, which serves
//! Secrets Manager and SSM Parameter Store: `<NAME>_SECRET_ARN` and `<NAME>_PARAMETER` resolve to
//! the values the plain variables would have held, an RDS-managed JSON secret gives the database
//! password, and a missing secret is an error naming the setting, never carrying a value.

use std::collections::BTreeMap;

use aws_sdk_ssm::types::ParameterType;
use shared::config::from_lookup;
use shared::config::secrets::{Resolved, SecretStores, resolve};

fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| "http://127.0.0.1:4566".into())
}

fn emulator() -> SecretStores {
    SecretStores::emulator(&endpoint())
}

fn unique(name: &str) -> String {
    format!("syncplane-test/{name}-{}", uuid::Uuid::new_v4())
}

/// A Secrets Manager secret of this test's own; returns its ARN.
async fn secret(value: &str) -> String {
    let created = emulator()
        .secrets_manager()
        .create_secret()
        .name(unique("secret"))
        .secret_string(value)
        .send()
        .await
        .expect("the emulator serves Secrets Manager (scripts/services.sh starts it)");
    created.arn().unwrap().to_owned()
}

/// An SSM SecureString parameter of this test's own; returns its name.
async fn parameter(value: &str) -> String {
    let name = format!("/{}", unique("param"));
    emulator()
        .ssm()
        .put_parameter()
        .name(&name)
        .value(value)
        .r#type(ParameterType::SecureString)
        .send()
        .await
        .expect("the emulator serves SSM");
    name
}

fn env(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> + Clone + use<> {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    move |k| map.get(k).cloned()
}

async fn resolved(lookup: &(impl Fn(&str) -> Option<String> + Clone)) -> Resolved {
    resolve(lookup, || async { emulator() }).await.unwrap()
}

/// A real key: configuration parses the App key at start.
const PEM: &str = include_str!("../../../fixtures/keys/app.pem");

#[tokio::test]
async fn references_resolve_to_the_values_the_plain_variables_would_hold() {
    let webhook = parameter("new-secret,old-secret").await;
    let lookup = env(&[
        (
            "DATABASE_URL",
            "postgres://app@db.internal:5432/syncplane".into(),
        ),
        (
            "DATABASE_PASSWORD_SECRET_ARN",
            secret(r#"{"username":"app","password":"s3cr:t/pw"}"#).await,
        ),
        ("GITHUB_APP_ID", "12".into()),
        ("GITHUB_INSTALLATION_ID", "34".into()),
        ("GITHUB_APP_PRIVATE_KEY_SECRET_ARN", secret(PEM).await),
        ("GITHUB_WEBHOOK_SECRET_PARAMETER", webhook),
        ("SYNC_API_TOKEN_SECRET_ARN", secret("api-token-value").await),
        (
            "SYNC_READ_TOKEN_PARAMETER",
            parameter("read-token-value").await,
        ),
    ]);
    let resolved = resolved(&lookup).await;
    assert_eq!(
        resolved.get("SYNC_READ_TOKEN").map(|s| s.expose()),
        Some("read-token-value"),
        "every secret variable takes a reference, the read token too"
    );
    let debug = format!("{resolved:?}");
    assert!(debug.contains("SYNC_API_TOKEN") && !debug.contains("api-token-value"));

    let config = from_lookup(resolved.overlay(lookup)).unwrap();
    let tenant = &config.tenants[0];
    assert_eq!(
        tenant.sync_api_token.as_ref().map(|t| t.expose()),
        Some("api-token-value")
    );
    let secrets: Vec<&str> = tenant.webhook_secrets.iter().map(|s| s.expose()).collect();
    assert_eq!(
        secrets,
        ["new-secret", "old-secret"],
        "a rotation pair, as plain"
    );
    let github = tenant.github.as_ref().unwrap();
    assert_eq!(github.private_key_pem.expose(), PEM);
    let url: sqlx::postgres::PgConnectOptions = tenant.database_url.expose().parse().unwrap();
    assert_eq!(url.get_host(), "db.internal");
    assert!(
        tenant.database_url.expose().contains("s3cr%3At%2Fpw"),
        "the RDS secret's password field, URL-encoded into DATABASE_URL"
    );
}

#[tokio::test]
async fn a_missing_secret_is_an_error_naming_the_setting() {
    let lookup = env(&[
        ("DATABASE_URL", "postgres://app@db/x".into()),
        (
            "SYNC_API_TOKEN_SECRET_ARN",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:nope-AbCdEf".into(),
        ),
    ]);
    let err = resolve(&lookup, || async { emulator() }).await.unwrap_err();
    assert_eq!(err.variable, "SYNC_API_TOKEN_SECRET_ARN");
    assert!(err.problem.contains("ResourceNotFoundException"), "{err}");
    assert!(!err.to_string().contains('\n'), "one line");

    let lookup = env(&[(
        "GITHUB_WEBHOOK_SECRET_PARAMETER",
        "/syncplane/absent".into(),
    )]);
    let err = resolve(&lookup, || async { emulator() }).await.unwrap_err();
    assert_eq!(err.variable, "GITHUB_WEBHOOK_SECRET_PARAMETER");
    assert!(err.problem.contains("ParameterNotFound"), "{err}");
}

#[tokio::test]
async fn a_reference_beside_a_plain_value_is_refused_before_any_request() {
    let lookup = env(&[
        ("SYNC_API_TOKEN", "plain-token".into()),
        ("SYNC_API_TOKEN_PARAMETER", "/syncplane/token".into()),
    ]);
    let err = resolve(&lookup, || async {
        panic!("no store is built when the settings are inconsistent")
    })
    .await
    .unwrap_err();
    assert_eq!(err.variable, "SYNC_API_TOKEN_PARAMETER");
    assert!(!err.to_string().contains("plain-token"));
}

#[tokio::test]
async fn without_references_no_store_is_contacted() {
    let lookup = env(&[("DATABASE_URL", "postgres://app:pw@db/x".into())]);
    let resolved = resolve(&lookup, || async {
        panic!("local runs with plain variables never reach AWS")
    })
    .await
    .unwrap();
    assert_eq!(format!("{resolved:?}"), "{}");
}

/// The AWS environment a deployed function has, pointed at the emulator.
fn aws_vars() -> Vec<(String, String)> {
    [
        ("AWS_ENDPOINT_URL", endpoint()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_ACCESS_KEY_ID", "testing".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "testing".to_owned()),
    ]
    .map(|(k, v)| (k.to_owned(), v))
    .to_vec()
}

#[tokio::test]
async fn function_binaries_resolve_their_references_from_the_aws_environment_at_cold_start() {
    use syncplane_tests::processes;

    let e = crate::ops::Env::new().await;
    let api_token = format!("tok{:032x}", rand::random::<u128>());
    let webhook_secret = format!("whs{:032x}", rand::random::<u128>());
    // The App key from Secrets Manager, the API token too, the webhook secret from SSM: the
    // plain variables are not set at all.
    let mut vars: Vec<(String, String)> = e
        .vars()
        .into_iter()
        .filter(|(k, _)| k != "GITHUB_APP_PRIVATE_KEY")
        .collect();
    vars.extend(aws_vars());
    vars.extend([
        (
            "GITHUB_APP_PRIVATE_KEY_SECRET_ARN".to_owned(),
            secret(&e.gh.private_key_pem()).await,
        ),
        (
            "SYNC_API_TOKEN_SECRET_ARN".to_owned(),
            secret(&api_token).await,
        ),
        (
            "GITHUB_WEBHOOK_SECRET_PARAMETER".to_owned(),
            parameter(&webhook_secret).await,
        ),
        ("RUST_LOG".to_owned(), "info".to_owned()),
    ]);

    // sync-api takes the token it read from Secrets Manager (and used the App key: a sync ran).
    let event = e.manual_sync_event(&api_token);
    let inv = processes::invoke("sync-api", &vars, &event).await;
    let body = inv.response.as_deref().unwrap_or_else(|| {
        panic!(
            "sync-api did not answer ({:?}): {}",
            inv.error, inv.output.stderr
        )
    });
    let reply: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(reply["statusCode"], 202, "{reply} {}", inv.output.stderr);
    assert!(inv.output.stderr.contains("secret resolved by reference"));
    for secret in [&api_token, &webhook_secret] {
        assert!(!inv.output.stderr.contains(secret.as_str()), "never logged");
    }

    // webhook verifies with the secret it read from SSM.
    let event = e.signed_push_event(&webhook_secret, "0f1e2d3c-0000-4000-8000-0000000000a1");
    let inv = processes::invoke("webhook", &vars, &event).await;
    let body = inv.response.as_deref().unwrap_or_else(|| {
        panic!(
            "webhook did not answer ({:?}): {}",
            inv.error, inv.output.stderr
        )
    });
    let reply: serde_json::Value = serde_json::from_slice(body).unwrap();
    let status = reply["statusCode"].as_u64().unwrap_or(0);
    assert!(
        (200..300).contains(&status),
        "{reply} {}",
        inv.output.stderr
    );
}
