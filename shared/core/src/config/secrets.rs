//! Secrets by reference (docs/configuration.md: `<NAME>_SECRET_ARN` / `<NAME>_PARAMETER`).
//!
//! Deployed functions keep secrets out of plain environment variables: beside each secret variable
//! `NAME` an operator sets `NAME_SECRET_ARN` (AWS Secrets Manager) or `NAME_PARAMETER` (an SSM
//! Parameter Store `SecureString`, read with decryption). They are resolved once, at cold start,
//! and then read exactly as if `NAME` itself had been set; the plain variables stay for local runs.
//! A reference beside a plain value, or both kinds of reference, is an operator error naming the
//! setting. Values never reach a log line or an error message: errors name the variable, the
//! reference (an ARN or parameter name, not secret) and the store's error code.

use std::collections::BTreeMap;
use std::fmt;

use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};

use super::error::ConfigError;
use super::names::Secret;

/// Every variable that holds a secret, and so may be given by reference.
/// `DATABASE_PASSWORD` is the password spliced into `DATABASE_URL` (`config::values`).
pub const SECRET_VARIABLES: &[&str] = &[
    "DATABASE_URL",
    "DATABASE_PASSWORD",
    "GITHUB_APP_PRIVATE_KEY",
    "GITHUB_WEBHOOK_SECRET",
    "SYNC_API_TOKEN",
    "SYNC_READ_TOKEN",
];

/// Suffix of a Secrets Manager reference (`NAME_SECRET_ARN`).
pub const SECRET_ARN_SUFFIX: &str = "_SECRET_ARN";
/// Suffix of an SSM Parameter Store reference (`NAME_PARAMETER`).
pub const PARAMETER_SUFFIX: &str = "_PARAMETER";

/// Where one variable's value is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A Secrets Manager secret id or ARN (its `SecretString`).
    SecretsManager(String),
    /// An SSM parameter name or ARN (a `SecureString`, decrypted).
    Parameter(String),
}

impl Reference {
    /// The setting that carries this reference for `variable`, for error messages.
    pub fn setting(&self, variable: &str) -> String {
        match self {
            Self::SecretsManager(_) => format!("{variable}{SECRET_ARN_SUFFIX}"),
            Self::Parameter(_) => format!("{variable}{PARAMETER_SUFFIX}"),
        }
    }
}

/// The references set in the environment, checked: at most one source per variable.
pub fn references(
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<Vec<(&'static str, Reference)>, ConfigError> {
    let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    let mut found = Vec::new();
    for &variable in SECRET_VARIABLES {
        let arn_setting = format!("{variable}{SECRET_ARN_SUFFIX}");
        let parameter_setting = format!("{variable}{PARAMETER_SUFFIX}");
        let reference = match (get(&arn_setting), get(&parameter_setting)) {
            (None, None) => continue,
            (Some(_), Some(_)) => {
                return Err(ConfigError {
                    variable: arn_setting,
                    problem: format!("set either it or {parameter_setting}, not both"),
                });
            }
            (Some(arn), None) => Reference::SecretsManager(arn.trim().to_owned()),
            (None, Some(name)) => Reference::Parameter(name.trim().to_owned()),
        };
        if get(variable).is_some() {
            return Err(ConfigError {
                variable: reference.setting(variable),
                problem: format!(
                    "{variable} is also set: keep the reference (deployed) or the plain value (local runs), not both"
                ),
            });
        }
        found.push((variable, reference));
    }
    Ok(found)
}

/// The values fetched for the referenced variables; `Debug` shows names only.
#[derive(Clone, Default)]
pub struct Resolved(BTreeMap<&'static str, Secret>);

impl Resolved {
    /// The value resolved for `variable`, if it was given by reference.
    pub fn get(&self, variable: &str) -> Option<&Secret> {
        self.0.get(variable)
    }

    /// A lookup that answers resolved variables first, then `base` (the environment).
    pub fn overlay<'a>(
        &'a self,
        base: impl Fn(&str) -> Option<String> + 'a,
    ) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| match self.0.get(name) {
            Some(secret) => Some(secret.expose().to_owned()),
            None => base(name),
        }
    }
}

impl fmt::Debug for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// The two stores, built only when some variable is given by reference.
#[derive(Clone)]
pub struct SecretStores {
    secrets_manager: aws_sdk_secretsmanager::Client,
    ssm: aws_sdk_ssm::Client,
}

impl SecretStores {
    /// Clients from the AWS environment (the function's role; `AWS_ENDPOINT_URL`,
    /// `AWS_ENDPOINT_URL_SECRETS_MANAGER` and `AWS_ENDPOINT_URL_SSM` point them elsewhere).
    pub async fn from_env() -> Self {
        let config = aws_config::load_defaults(BehaviorVersion::latest()).await;
        Self {
            secrets_manager: aws_sdk_secretsmanager::Client::new(&config),
            ssm: aws_sdk_ssm::Client::new(&config),
        }
    }

    /// Clients for an emulator on `endpoint` (moto), with its test credentials.
    pub fn emulator(endpoint: &str) -> Self {
        let credentials = Credentials::new("test", "test", None, None, "emulator");
        let region = Region::new("us-east-1");
        let secrets_manager = aws_sdk_secretsmanager::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(region.clone())
            .endpoint_url(endpoint)
            .credentials_provider(credentials.clone())
            .build();
        let ssm = aws_sdk_ssm::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(region)
            .endpoint_url(endpoint)
            .credentials_provider(credentials)
            .build();
        Self {
            secrets_manager: aws_sdk_secretsmanager::Client::from_conf(secrets_manager),
            ssm: aws_sdk_ssm::Client::from_conf(ssm),
        }
    }

    pub fn secrets_manager(&self) -> &aws_sdk_secretsmanager::Client {
        &self.secrets_manager
    }

    pub fn ssm(&self) -> &aws_sdk_ssm::Client {
        &self.ssm
    }

    /// Fetch one value. The error names the setting and the store's error code only.
    pub async fn fetch(
        &self,
        variable: &str,
        reference: &Reference,
    ) -> Result<Secret, ConfigError> {
        let failed = |code: String| ConfigError {
            variable: reference.setting(variable),
            problem: format!("cannot read {}: {code}", describe(reference)),
        };
        let value = match reference {
            Reference::SecretsManager(id) => self
                .secrets_manager
                .get_secret_value()
                .secret_id(id)
                .send()
                .await
                .map_err(|e| failed(error_code(&e)))?
                .secret_string
                .ok_or_else(|| failed("the secret holds no SecretString".into()))?,
            Reference::Parameter(name) => self
                .ssm
                .get_parameter()
                .name(name)
                .with_decryption(true)
                .send()
                .await
                .map_err(|e| failed(error_code(&e)))?
                .parameter
                .and_then(|p| p.value)
                .ok_or_else(|| failed("the parameter has no value".into()))?,
        };
        Ok(Secret::new(value))
    }
}

fn describe(reference: &Reference) -> String {
    match reference {
        Reference::SecretsManager(id) => format!("Secrets Manager secret '{id}'"),
        Reference::Parameter(name) => format!("SSM parameter '{name}'"),
    }
}

/// The service's error code (`ResourceNotFoundException`, `AccessDeniedException`, ...) or the
/// transport failure, without the request or response body.
fn error_code<E, R>(err: &aws_sdk_secretsmanager::error::SdkError<E, R>) -> String
where
    E: aws_sdk_secretsmanager::error::ProvideErrorMetadata,
{
    use aws_sdk_secretsmanager::error::SdkError;
    match err {
        SdkError::ServiceError(service) => {
            let e = service.err();
            match (e.code(), e.message()) {
                (Some(code), Some(message)) => format!("{code} ({message})"),
                (Some(code), None) => code.to_owned(),
                _ => "the service refused the request".to_owned(),
            }
        }
        SdkError::TimeoutError(_) => "timed out (is the endpoint reachable from the VPC?)".into(),
        SdkError::DispatchFailure(_) => {
            "could not reach the service (network, VPC endpoint or NAT)".into()
        }
        _ => "the request failed".into(),
    }
}

/// Resolve every reference set in `lookup`, building the stores only if there is one.
pub async fn resolve<F, Fut>(
    lookup: &impl Fn(&str) -> Option<String>,
    stores: F,
) -> Result<Resolved, ConfigError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = SecretStores>,
{
    let references = references(lookup)?;
    if references.is_empty() {
        return Ok(Resolved::default());
    }
    let stores = stores().await;
    let mut resolved = BTreeMap::new();
    for (variable, reference) in references {
        let value = stores.fetch(variable, &reference).await?;
        tracing::info!(
            variable,
            from = %reference.setting(variable),
            "secret resolved by reference"
        );
        resolved.insert(variable, value);
    }
    Ok(Resolved(resolved))
}

/// The password in a `DATABASE_PASSWORD` value: the value itself, or the `password` field of an
/// RDS-managed Secrets Manager secret (`{"username": ..., "password": ...}`).
pub(crate) fn database_password(value: &str) -> String {
    let trimmed = value.trim();
    if trimmed.starts_with('{')
        && let Ok(serde_json::Value::Object(fields)) = serde_json::from_str(trimmed)
        && let Some(serde_json::Value::String(password)) = fields.get("password")
    {
        return password.clone();
    }
    value.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn a_reference_beside_its_plain_value_is_refused_naming_the_setting() {
        let err = references(&map(&[
            ("SYNC_API_TOKEN", "tok-value-123"),
            ("SYNC_API_TOKEN_SECRET_ARN", "arn:aws:secretsmanager:x"),
        ]))
        .unwrap_err();
        assert_eq!(err.variable, "SYNC_API_TOKEN_SECRET_ARN");
        assert!(err.problem.contains("SYNC_API_TOKEN is also set"));
        assert!(!err.to_string().contains("tok-value"), "never the value");

        let err = references(&map(&[
            ("GITHUB_WEBHOOK_SECRET_SECRET_ARN", "arn"),
            ("GITHUB_WEBHOOK_SECRET_PARAMETER", "/p"),
        ]))
        .unwrap_err();
        assert_eq!(err.variable, "GITHUB_WEBHOOK_SECRET_SECRET_ARN");
    }

    #[test]
    fn every_secret_variable_takes_either_kind_of_reference() {
        let found = references(&map(&[
            ("SYNC_READ_TOKEN_PARAMETER", "/syncplane/read"),
            ("DATABASE_PASSWORD_SECRET_ARN", "arn:db"),
            ("GITHUB_APP_ID", "1"),
        ]))
        .unwrap();
        assert_eq!(
            found,
            vec![
                (
                    "DATABASE_PASSWORD",
                    Reference::SecretsManager("arn:db".into())
                ),
                (
                    "SYNC_READ_TOKEN",
                    Reference::Parameter("/syncplane/read".into())
                ),
            ]
        );
    }

    #[test]
    fn an_rds_managed_secret_gives_its_password_field() {
        assert_eq!(
            database_password(r#"{"username":"app","password":"p@ss:/word"}"#),
            "p@ss:/word"
        );
        assert_eq!(database_password("plain-password"), "plain-password");
        assert_eq!(database_password("{not json"), "{not json");
    }
}
