//! Typed configuration, read and validated once at start (docs/configuration.md).
//!
//! Every error names the variable (or the `TENANTS_FILE` field) and the rule it broke, so an
//! operator can fix a deployment from the first log line. Values are read through a lookup
//! function rather than `std::env` directly, so tests can build a configuration from a map
//! without touching the process environment. Loading has no side effect: a function's start-up
//! installs what the configuration says (`start` at the crate root).
//!
//! A leaf folder, one concern per file; nothing here imports a module above it:
//!
//! - `error`: [`ConfigError`], the one error type;
//! - `names`: the domain values ([`Secret`], [`TenantId`], [`RepoName`], [`RepoPattern`],
//!   [`SearchLanguage`]);
//! - `values`: one setting's value parsed (numbers, switches, URLs, the database password);
//! - `pem`: the GitHub App key checked at start;
//! - `sync`: `SYNC_CONFIG`, validated against the engine's limits (`crate::limits`);
//! - `tenant`: one tenant's configuration; `env`: the one tenant of the environment;
//!   `tenants`: `TENANTS_FILE`;
//! - [`secrets`]: secrets given by reference, resolved at cold start;
//! - [`metrics`]: the metric settings (emitting them is the crate root's `metrics`);
//! - [`transcripts`]: the transcript lane's settings (store, upload TTL, rate limit);
//! - this file: the process [`Config`] and the process-wide settings (jobs, scheduler, ingest).

mod env;
mod error;
pub mod metrics;
mod names;
mod pem;
pub mod secrets;
mod sync;
mod tenant;
mod tenants;
pub mod transcripts;
mod values;

use std::path::Path;

use url::Url;

pub use error::ConfigError;
pub use names::{RepoName, RepoPattern, SearchLanguage, Secret, TenantId, is_repo_name_part};
pub use sync::{SyncConfig, parse_sync_config};
pub use tenant::{
    DEFAULT_GITHUB_API_URL, DEFAULT_TENANT, GithubAppConfig, ReadConfig, TenantConfig,
};
pub use values::DEFAULT_RATE_LIMIT_WAIT_BUDGET_SECS;

use values::{parse_bool, parse_count};

pub(crate) const DEFAULT_INGEST_RATE_LIMIT_PER_MINUTE: u32 = 120;

/// Ingest batches one process works on at once, unless `INGEST_MAX_IN_FLIGHT` says otherwise:
/// one per CPU. A batch keeps a core busy (parse here, upsert in Postgres), and measured on two
/// cores (`bench-ingest-load`) a third or fourth at once only lengthened every batch.
pub fn default_ingest_max_in_flight() -> u32 {
    std::thread::available_parallelism()
        .map_or(2, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .clamp(1, 1_000)
}

/// How background jobs run (docs/design.md "Jobs").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobsBackend {
    /// Run the job in the calling process before returning.
    Inline,
    /// Send the job to this SQS queue; the worker function runs it.
    Sqs { queue_url: String },
}

/// The whole process configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub tenants: Vec<TenantConfig>,
    pub jobs: JobsBackend,
    /// `AWS_ENDPOINT_URL_SQS`: an emulator's address; the SDK reads it too.
    pub sqs_endpoint: Option<String>,
    /// `SYNC_SCHEDULER`: on when deployed (running inside Lambda), off locally, unless set.
    pub scheduler_enabled: bool,
    pub ingest_rate_limit_per_minute: u32,
    /// `INGEST_MAX_IN_FLIGHT`: batches one process works on at once (`ingest::admission`).
    pub ingest_max_in_flight: u32,
    /// `SYNC_METRICS`, `SYNC_METRICS_NAMESPACE` ([`metrics`]; emitted by the crate root's `metrics`).
    pub metrics: metrics::Settings,
    /// `TRANSCRIPT_*`, `AWS_ENDPOINT_URL_S3` ([`transcripts`]).
    pub transcripts: transcripts::TranscriptSettings,
    /// `SYNCPLANE_LOCAL`: this process is part of a local run ([`local_run`]).
    pub local_run: bool,
}

impl Config {
    pub fn tenant(&self, id: &str) -> Option<&TenantConfig> {
        self.tenants.iter().find(|t| t.id.as_str() == id)
    }
}

/// Read the configuration from the process environment.
pub fn from_env() -> Result<Config, ConfigError> {
    from_lookup(|name| std::env::var(name).ok())
}

/// Read the configuration from the process environment, with secrets given by reference
/// (`<NAME>_SECRET_ARN`, `<NAME>_PARAMETER`: [`secrets`]) fetched at the first call (cold
/// start) and kept for the life of the execution environment.
pub async fn from_env_resolved() -> Result<Config, ConfigError> {
    static RESOLVED: tokio::sync::OnceCell<secrets::Resolved> = tokio::sync::OnceCell::const_new();
    let env = |name: &str| std::env::var(name).ok();
    let resolved = RESOLVED
        .get_or_try_init(|| secrets::resolve(&env, secrets::SecretStores::from_env))
        .await?;
    from_lookup(resolved.overlay(env))
}

/// Read the configuration through `lookup` (the environment, or a map in tests).
pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
    let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());

    let tenants = match get("TENANTS_FILE") {
        Some(path) => tenants::tenants_from_file(Path::new(&path), &get)?,
        None => vec![env::tenant_from_env(&get)?],
    };
    let jobs = jobs_backend(&get)?;

    let local = local_run(&lookup);
    let deployed = get("AWS_LAMBDA_FUNCTION_NAME").is_some() && !local;
    let scheduler_enabled = match get("SYNC_SCHEDULER") {
        None => deployed,
        Some(v) => parse_bool("SYNC_SCHEDULER", &v)?,
    };

    let ingest_rate_limit_per_minute = match get("INGEST_RATE_LIMIT_PER_MINUTE") {
        None => DEFAULT_INGEST_RATE_LIMIT_PER_MINUTE,
        Some(v) => parse_count("INGEST_RATE_LIMIT_PER_MINUTE", &v, 1_000_000)?,
    };
    let ingest_max_in_flight = match get("INGEST_MAX_IN_FLIGHT") {
        None => default_ingest_max_in_flight(),
        Some(v) => parse_count("INGEST_MAX_IN_FLIGHT", &v, 1_000)?,
    };

    Ok(Config {
        tenants,
        jobs,
        sqs_endpoint: get("AWS_ENDPOINT_URL_SQS"),
        scheduler_enabled,
        ingest_rate_limit_per_minute,
        ingest_max_in_flight,
        metrics: metrics::Settings::from_lookup(&get)?,
        transcripts: transcripts::TranscriptSettings::from_lookup(&get)?,
        local_run: local,
    })
}

/// `SYNCPLANE_LOCAL`, the one rule every reader uses (issue 21 point 20): `scripts/local.sh` sets
/// it to `1` to say "this is a local run". Unset, blank, `0`, `false`, `off` or `no` (any case,
/// spaces trimmed) mean not local; any other value means local. A local run is never "deployed"
/// for the scheduler's and the metrics' defaults, its inline jobs draw no start-up warning, and
/// `syncplane ingest demo` may provision the public sample token.
pub fn local_run(lookup: impl Fn(&str) -> Option<String>) -> bool {
    lookup("SYNCPLANE_LOCAL").is_some_and(|v| {
        !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "" | "0" | "false" | "off" | "no"
        )
    })
}

/// `JOBS_BACKEND` (`inline` unless set) and, for `sqs`, `SQS_QUEUE_URL`.
fn jobs_backend(get: &impl Fn(&str) -> Option<String>) -> Result<JobsBackend, ConfigError> {
    match get("JOBS_BACKEND").as_deref().map(str::trim) {
        None | Some("inline") => Ok(JobsBackend::Inline),
        Some("sqs") => {
            let queue_url = get("SQS_QUEUE_URL").ok_or_else(|| {
                ConfigError::new("SQS_QUEUE_URL", "required when JOBS_BACKEND=sqs")
            })?;
            Url::parse(&queue_url)
                .map_err(|e| ConfigError::new("SQS_QUEUE_URL", format!("not a URL: {e}")))?;
            Ok(JobsBackend::Sqs { queue_url })
        }
        Some(other) => Err(ConfigError::new(
            "JOBS_BACKEND",
            format!("must be 'inline' or 'sqs', got '{other}'"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        from_lookup(|k| map.get(k).cloned())
    }

    const DB: (&str, &str) = ("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/x");
    /// A real RSA key (PKCS#1), the one the fake GitHub trusts.
    const KEY: &str = include_str!("../../../../tests/fixtures/keys/app.pem");

    #[test]
    fn missing_database_url_names_the_variable() {
        let err = cfg(&[]).unwrap_err();
        assert_eq!(err.variable, "DATABASE_URL");
    }

    #[test]
    fn defaults_follow_the_spec() {
        let c = cfg(&[DB]).unwrap();
        let s = &c.tenants[0].sync;
        assert_eq!(s.max_docs_per_repo, 2000);
        assert_eq!(s.max_file_bytes, 262_144);
        assert_eq!(s.interval_minutes, 60);
        assert!(!s.on_startup);
        assert_eq!(c.jobs, JobsBackend::Inline);
        assert!(!c.scheduler_enabled, "scheduler is off locally by default");
        assert_eq!(c.ingest_rate_limit_per_minute, 120);
        assert_eq!(c.ingest_max_in_flight, default_ingest_max_in_flight());
        assert!(c.tenants[0].github.is_none());
    }

    #[test]
    fn scheduler_defaults_on_inside_lambda_and_can_be_overridden() {
        let on = cfg(&[DB, ("AWS_LAMBDA_FUNCTION_NAME", "tick")]).unwrap();
        assert!(on.scheduler_enabled);
        let off = cfg(&[
            DB,
            ("AWS_LAMBDA_FUNCTION_NAME", "tick"),
            ("SYNC_SCHEDULER", "0"),
        ])
        .unwrap();
        assert!(!off.scheduler_enabled);
        let err = cfg(&[DB, ("SYNC_SCHEDULER", "maybe")]).unwrap_err();
        assert_eq!(err.variable, "SYNC_SCHEDULER");
    }

    /// Issue 21 point 20: one rule for `SYNCPLANE_LOCAL`, the same for every reader (the
    /// scheduler's and the metrics' defaults, the inline-jobs warning, `ingest demo`).
    #[test]
    fn syncplane_local_is_one_rule_blank_0_false_off_no_are_unset_any_other_value_is_local() {
        let lambda = ("AWS_LAMBDA_FUNCTION_NAME", "tick");
        for unset in [
            None,
            Some(""),
            Some("  "),
            Some("0"),
            Some("false"),
            Some("OFF"),
            Some("no"),
        ] {
            let pairs: Vec<(&str, &str)> = [DB, lambda]
                .into_iter()
                .chain(unset.map(|v| ("SYNCPLANE_LOCAL", v)))
                .collect();
            let c = cfg(&pairs).unwrap();
            assert!(!c.local_run, "{unset:?}");
            assert!(
                c.scheduler_enabled,
                "{unset:?}: deployed, so the scheduler is on"
            );
            assert!(c.metrics.enabled, "{unset:?}: deployed, so metrics are on");
        }
        for local in ["1", "true", "yes", " 1 ", "anything"] {
            let c = cfg(&[DB, lambda, ("SYNCPLANE_LOCAL", local)]).unwrap();
            assert!(c.local_run, "{local:?}");
            assert!(
                !c.scheduler_enabled,
                "{local:?}: a local run is not deployed"
            );
            assert!(!c.metrics.enabled, "{local:?}");
        }
    }

    #[test]
    fn interval_rules_zero_off_else_at_least_five() {
        let ok0 = cfg(&[DB, ("SYNC_CONFIG", r#"{"sync":{"intervalMinutes":0}}"#)]).unwrap();
        assert_eq!(ok0.tenants[0].sync.interval_minutes, 0);
        let ok5 = cfg(&[DB, ("SYNC_CONFIG", r#"{"sync":{"intervalMinutes":5}}"#)]).unwrap();
        assert_eq!(ok5.tenants[0].sync.interval_minutes, 5);
        let err = cfg(&[DB, ("SYNC_CONFIG", r#"{"sync":{"intervalMinutes":4}}"#)]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG.sync.intervalMinutes");
        assert!(err.problem.contains("at least") || err.problem.contains("between 5"));
    }

    #[test]
    fn max_file_bytes_default_is_also_the_maximum() {
        let err = cfg(&[DB, ("SYNC_CONFIG", r#"{"limits":{"maxFileBytes":262145}}"#)]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG.limits.maxFileBytes");
        let ok = cfg(&[
            DB,
            (
                "SYNC_CONFIG",
                r#"{"limits":{"maxFileBytes":1000,"maxDocsPerRepo":3}}"#,
            ),
        ])
        .unwrap();
        assert_eq!(ok.tenants[0].sync.max_file_bytes, 1000);
        assert_eq!(ok.tenants[0].sync.max_docs_per_repo, 3);
        let err = cfg(&[DB, ("SYNC_CONFIG", r#"{"limits":{"maxDocsPerRepo":0}}"#)]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG.limits.maxDocsPerRepo");
    }

    #[test]
    fn unknown_sync_config_keys_and_bad_json_are_refused() {
        let err = cfg(&[DB, ("SYNC_CONFIG", r#"{"repo":[]}"#)]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG");
        let err = cfg(&[DB, ("SYNC_CONFIG", "{")]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG");
    }

    #[test]
    fn repos_exclude_and_docs_path_overrides() {
        let c = cfg(&[
            DB,
            (
                "SYNC_CONFIG",
                r#"{"repos":["acme/a",{"name":"Acme/B","docsPath":"/handbook/"}],"exclude":["acme/a"]}"#,
            ),
        ])
        .unwrap();
        let s = &c.tenants[0].sync;
        assert!(!s.selects("acme/a"), "exclude wins over repos");
        assert!(s.selects("ACME/b"), "names compare case-insensitively");
        assert!(!s.selects("acme/c"), "not listed");
        assert_eq!(s.docs_path("acme/b"), Some("handbook"));
        let err = cfg(&[DB, ("SYNC_CONFIG", r#"{"repos":["nope"]}"#)]).unwrap_err();
        assert_eq!(err.variable, "SYNC_CONFIG.repos");
        let err = cfg(&[
            DB,
            (
                "SYNC_CONFIG",
                r#"{"repos":[{"name":"a/b","docsPath":"../x"}]}"#,
            ),
        ])
        .unwrap_err();
        assert!(err.variable.ends_with("docsPath"));
    }

    #[test]
    fn exclude_wildcards() {
        let p = RepoPattern::parse("acme/*").unwrap();
        assert!(p.matches("ACME/anything"));
        assert!(!p.matches("other/anything"));
        assert!(RepoPattern::parse("nonsense").is_none());
    }

    #[test]
    fn github_app_settings_are_all_or_nothing() {
        let err = cfg(&[DB, ("GITHUB_APP_ID", "12")]).unwrap_err();
        assert_eq!(err.variable, "GITHUB_INSTALLATION_ID");
        let err = cfg(&[DB, ("GITHUB_APP_ID", "12"), ("GITHUB_INSTALLATION_ID", "3")]).unwrap_err();
        assert_eq!(err.variable, "GITHUB_APP_PRIVATE_KEY");
        let err = cfg(&[
            DB,
            ("GITHUB_APP_ID", "abc"),
            ("GITHUB_INSTALLATION_ID", "3"),
            ("GITHUB_APP_PRIVATE_KEY", KEY),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "GITHUB_APP_ID");
        let err = cfg(&[
            DB,
            ("GITHUB_APP_ID", "1"),
            ("GITHUB_INSTALLATION_ID", "3"),
            ("GITHUB_APP_PRIVATE_KEY", "not a key"),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "GITHUB_APP_PRIVATE_KEY");
        let err = cfg(&[
            DB,
            ("GITHUB_APP_ID", "1"),
            ("GITHUB_INSTALLATION_ID", "3"),
            ("GITHUB_APP_PRIVATE_KEY_FILE", "/nonexistent/key.pem"),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "GITHUB_APP_PRIVATE_KEY_FILE");
        let ok = cfg(&[
            DB,
            ("GITHUB_APP_ID", "1"),
            ("GITHUB_INSTALLATION_ID", "3"),
            ("GITHUB_API_URL", "http://127.0.0.1:9/"),
            ("GITHUB_APP_PRIVATE_KEY", KEY),
        ])
        .unwrap();
        let gh = ok.tenants[0].github.as_ref().unwrap();
        assert_eq!(gh.installation_id, 3);
        assert_eq!(gh.private_key_pem.expose(), KEY);
        assert!(
            !format!("{gh:?}").contains("BEGIN"),
            "the key never reaches Debug output"
        );
    }

    #[test]
    fn the_app_key_is_parsed_at_start_and_a_junk_body_is_refused_naming_its_setting() {
        let app = |key: &str| {
            cfg(&[
                DB,
                ("GITHUB_APP_ID", "1"),
                ("GITHUB_INSTALLATION_ID", "3"),
                ("GITHUB_APP_PRIVATE_KEY", key),
            ])
        };
        app(KEY).unwrap();
        app(include_str!(
            "../../../../tests/fixtures/keys/app.pkcs8.pem"
        ))
        .unwrap();
        // As an environment variable often carries it: one line, "\n" escaped.
        let escaped = app(&KEY.replace('\n', "\\n")).unwrap();
        assert_eq!(
            escaped.tenants[0]
                .github
                .as_ref()
                .unwrap()
                .private_key_pem
                .expose(),
            KEY,
            "\\n is unescaped"
        );
        let junk_body = [
            "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----\nnot base64 at all!\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n",
            "not a key",
        ];
        for junk in junk_body {
            let err = app(junk).unwrap_err();
            assert_eq!(err.variable, "GITHUB_APP_PRIVATE_KEY", "{junk}");
            assert!(
                !err.to_string().contains("bm90"),
                "the key never reaches the message"
            );
        }
        // A truncated copy of a real key: armour and base64 intact, the structure cut short.
        let lines: Vec<&str> = KEY.lines().collect();
        let truncated = [&lines[..5], &lines[lines.len() - 1..]].concat().join("\n");
        assert_eq!(
            app(&truncated).unwrap_err().variable,
            "GITHUB_APP_PRIVATE_KEY"
        );
    }

    #[test]
    fn the_graphql_url_is_optional_and_checked_at_start() {
        let app = [
            DB,
            ("GITHUB_APP_ID", "1"),
            ("GITHUB_INSTALLATION_ID", "3"),
            ("GITHUB_APP_PRIVATE_KEY", KEY),
        ];
        let derived = cfg(&app).unwrap();
        assert_eq!(
            derived.tenants[0].github.as_ref().unwrap().graphql_url,
            None
        );
        let mut set = app.to_vec();
        set.push(("GITHUB_GRAPHQL_URL", "https://ghe.example.com/api/graphql"));
        let c = cfg(&set).unwrap();
        assert_eq!(
            c.tenants[0]
                .github
                .as_ref()
                .unwrap()
                .graphql_url
                .as_ref()
                .map(Url::as_str),
            Some("https://ghe.example.com/api/graphql")
        );
        let mut bad = app.to_vec();
        bad.push(("GITHUB_GRAPHQL_URL", "ftp://x/graphql"));
        assert_eq!(cfg(&bad).unwrap_err().variable, "GITHUB_GRAPHQL_URL");
    }

    #[test]
    fn jobs_backend_sqs_needs_a_queue_url() {
        let err = cfg(&[DB, ("JOBS_BACKEND", "sqs")]).unwrap_err();
        assert_eq!(err.variable, "SQS_QUEUE_URL");
        let err = cfg(&[DB, ("JOBS_BACKEND", "kafka")]).unwrap_err();
        assert_eq!(err.variable, "JOBS_BACKEND");
        let ok = cfg(&[
            DB,
            ("JOBS_BACKEND", "sqs"),
            ("SQS_QUEUE_URL", "http://127.0.0.1:4566/000000000000/jobs"),
        ])
        .unwrap();
        assert!(matches!(ok.jobs, JobsBackend::Sqs { .. }));
    }

    #[test]
    fn webhook_secrets_rotate_and_ingest_limit_is_checked() {
        let c = cfg(&[DB, ("GITHUB_WEBHOOK_SECRET", "new, old")]).unwrap();
        assert_eq!(c.tenants[0].webhook_secrets.len(), 2);
        let err = cfg(&[DB, ("INGEST_RATE_LIMIT_PER_MINUTE", "-1")]).unwrap_err();
        assert_eq!(err.variable, "INGEST_RATE_LIMIT_PER_MINUTE");
        for bad in ["0", "many", "1001"] {
            let err = cfg(&[DB, ("INGEST_MAX_IN_FLIGHT", bad)]).unwrap_err();
            assert_eq!(err.variable, "INGEST_MAX_IN_FLIGHT");
        }
        let c = cfg(&[DB, ("INGEST_MAX_IN_FLIGHT", "8")]).unwrap();
        assert_eq!(c.ingest_max_in_flight, 8);
        let err = cfg(&[("DATABASE_URL", "mysql://x")]).unwrap_err();
        assert_eq!(err.variable, "DATABASE_URL");
    }

    #[test]
    fn database_password_is_spliced_into_the_url() {
        let c = cfg(&[
            ("DATABASE_URL", "postgres://app@db.internal:5432/syncplane"),
            (
                "DATABASE_PASSWORD",
                r#"{"username":"app","password":"p@ss/word"}"#,
            ),
        ])
        .unwrap();
        let url = c.tenants[0].database_url.expose().to_owned();
        assert_eq!(
            url,
            "postgres://app:p%40ss%2Fword@db.internal:5432/syncplane"
        );
        let opts: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
        assert_eq!(opts.get_username(), "app");
        let err = cfg(&[
            ("DATABASE_URL", "postgres://app:old@db/x"),
            ("DATABASE_PASSWORD", "new"),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "DATABASE_PASSWORD");
        assert!(!err.to_string().contains("new") && !err.to_string().contains("old"));
    }

    #[test]
    fn tenants_file_names_the_field() {
        let dir = std::env::temp_dir().join(format!("syncplane-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tenants.json");
        std::fs::write(
            &path,
            r#"{"tenants":[
                {"id":"acme","databaseUrl":"postgres://a@127.0.0.1/a","webhookSecrets":["s1","s2"],
                 "syncConfig":{"sync":{"intervalMinutes":15}}},
                {"id":"beta","databaseUrl":"postgres://b@127.0.0.1/b"}]}"#,
        )
        .unwrap();
        let c = cfg(&[("TENANTS_FILE", path.to_str().unwrap())]).unwrap();
        assert_eq!(c.tenants.len(), 2);
        assert_eq!(c.tenant("acme").unwrap().sync.interval_minutes, 15);
        assert_eq!(c.tenant("acme").unwrap().webhook_secrets.len(), 2);

        std::fs::write(
            &path,
            r#"{"tenants":[{"id":"acme","databaseUrl":"postgres://a@127.0.0.1/a",
                "syncConfig":{"sync":{"intervalMinutes":2}}}]}"#,
        )
        .unwrap();
        let err = cfg(&[("TENANTS_FILE", path.to_str().unwrap())]).unwrap_err();
        assert_eq!(
            err.variable,
            "TENANTS_FILE: tenants[acme].syncConfig.sync.intervalMinutes"
        );

        std::fs::write(
            &path,
            r#"{"tenants":[{"id":"Bad Id","databaseUrl":"postgres://a@h/a"}]}"#,
        )
        .unwrap();
        let err = cfg(&[("TENANTS_FILE", path.to_str().unwrap())]).unwrap_err();
        assert_eq!(err.variable, "TENANTS_FILE");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
