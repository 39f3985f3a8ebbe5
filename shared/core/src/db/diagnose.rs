//! Why a database URL cannot be used, told apart (issue 21 point 1): nothing listens at its host
//! and port, the server refuses the credentials, the role or the database does not exist, or no
//! answer in time. `syncplane db check` prints it, and `scripts/services.sh --database` acts on
//! it (creates a missing database; offers to change `pg_hba.conf` only when the cause is
//! authentication). The cause comes from the error's kind and SQLSTATE, not from the server's
//! words, which a server may give in another language; only a missing role shares its SQLSTATE
//! (28000) with other authorization failures and is told by the server's English words.

use std::io::ErrorKind;

use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};

use super::REACH_TIMEOUT;
use crate::config::Secret;

/// What stands between a URL and a working connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Connection refused: no server at that host and port.
    NothingListens,
    /// The server refused the credentials (SQLSTATE 28P01, or 28000 other than a missing role:
    /// no `pg_hba.conf` entry, peer or ident failure).
    Authentication,
    /// The role (user) of the URL does not exist (28000 "role ... does not exist").
    RoleMissing,
    /// The database of the URL does not exist (3D000).
    DatabaseMissing,
    /// No answer within [`REACH_TIMEOUT`].
    NoAnswer,
    /// Anything else (a name that does not resolve, TLS, an unparsable URL).
    Other,
}

impl Cause {
    /// The exit status of `syncplane db check` for this cause (documented in its `--help`).
    pub fn exit_code(self) -> u8 {
        match self {
            Cause::NothingListens => 3,
            Cause::Authentication => 4,
            Cause::RoleMissing => 5,
            Cause::DatabaseMissing => 6,
            Cause::NoAnswer | Cause::Other => 7,
        }
    }

    /// What to do about it, for `setting` (the variable that holds the URL).
    fn advice(self, setting: &str) -> String {
        match self {
            Cause::NothingListens => {
                format!("start PostgreSQL there, or correct the host or port in {setting}")
            }
            Cause::Authentication => format!(
                "put the role's password in {setting}, or allow the connection in the server's pg_hba.conf"
            ),
            Cause::RoleMissing => format!(
                "create the role (createuser, or CREATE ROLE ... LOGIN), or name an existing one in {setting}"
            ),
            Cause::DatabaseMissing => format!(
                "create it (syncplane db check --create, or createdb), or correct the name in {setting}"
            ),
            Cause::NoAnswer => format!(
                "check that the host in {setting} is right and that a firewall lets the connection through"
            ),
            Cause::Other => format!("check {setting}"),
        }
    }
}

/// Why one URL cannot be used, as one operator line: the setting, where, the cause in the
/// server's (or the system's) words, and what to do. Never the user's password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {headline} ({words}): {advice}")]
pub struct Diagnosis {
    pub cause: Cause,
    pub setting: String,
    pub headline: String,
    pub words: String,
    pub advice: String,
}

/// The cause of a failed connection attempt.
pub fn classify(e: &sqlx::Error) -> Cause {
    match e {
        sqlx::Error::Io(io) if io.kind() == ErrorKind::ConnectionRefused => Cause::NothingListens,
        sqlx::Error::Io(io) if io.kind() == ErrorKind::TimedOut => Cause::NoAnswer,
        sqlx::Error::Database(db) => match db.code().as_deref() {
            Some("28P01") => Cause::Authentication,
            Some("28000") if is_missing_role(db.message()) => Cause::RoleMissing,
            Some("28000") => Cause::Authentication,
            Some("3D000") => Cause::DatabaseMissing,
            _ => Cause::Other,
        },
        _ => Cause::Other,
    }
}

fn is_missing_role(message: &str) -> bool {
    message.starts_with("role \"") && message.ends_with("does not exist")
}

/// Connect once to `url` (at most [`REACH_TIMEOUT`]) and say why that failed, if it did.
pub async fn diagnose(setting: &str, url: &Secret) -> Result<(), Diagnosis> {
    let options: PgConnectOptions = url.expose().parse().map_err(|e: sqlx::Error| Diagnosis {
        cause: Cause::Other,
        setting: setting.to_owned(),
        headline: "not a PostgreSQL URL".to_owned(),
        words: super::cause_line(&e.to_string()),
        advice: Cause::Other.advice(setting),
    })?;
    let failed = |cause: Cause, words: String| Diagnosis {
        cause,
        setting: setting.to_owned(),
        headline: headline(cause, &options),
        words,
        advice: cause.advice(setting),
    };
    match tokio::time::timeout(REACH_TIMEOUT, PgConnection::connect_with(&options)).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            Ok(())
        }
        Ok(Err(e)) => Err(failed(classify(&e), words(&e))),
        Err(_) => Err(failed(
            Cause::NoAnswer,
            format!("no answer within {} s", REACH_TIMEOUT.as_secs()),
        )),
    }
}

fn headline(cause: Cause, o: &PgConnectOptions) -> String {
    let at = format!("{}:{}", o.get_host(), o.get_port());
    let database = o.get_database().unwrap_or(o.get_username());
    match cause {
        Cause::NothingListens => format!("nothing listens on {at}"),
        Cause::Authentication => format!(
            "PostgreSQL at {at} refuses the credentials of role \"{}\"",
            o.get_username()
        ),
        Cause::RoleMissing => format!(
            "role \"{}\" does not exist on PostgreSQL at {at}",
            o.get_username()
        ),
        Cause::DatabaseMissing => {
            format!("database \"{database}\" does not exist on PostgreSQL at {at}")
        }
        Cause::NoAnswer => format!("no answer from {at}"),
        Cause::Other => format!("cannot connect to {at}/{database}"),
    }
}

/// The server's own words (without the driver's wrapping), or the system's.
fn words(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) => super::cause_line(db.message()),
        other => super::cause_line(&other.to_string()),
    }
}

/// The database `url` names, created on its server: connects as the same role to the
/// maintenance database `postgres`. Returns the name; an existing database is not an error
/// (another process may have created it first).
pub async fn create_database(url: &Secret) -> Result<String, sqlx::Error> {
    let options: PgConnectOptions = url.expose().parse()?;
    let name = options
        .get_database()
        .unwrap_or(options.get_username())
        .to_owned();
    let mut admin = PgConnection::connect_with(&options.database("postgres")).await?;
    // A database name cannot be a bound parameter: it is quoted as an identifier (the name comes
    // from the operator's own setting, never from a request).
    let sql = format!("CREATE DATABASE {}", quote_identifier(&name));
    let created = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut admin)
        .await;
    let _ = admin.close().await;
    match created {
        Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("42P04") => Ok(name),
        Err(e) => Err(e),
        Ok(_) => Ok(name),
    }
}

/// `name` as a quoted SQL identifier (`"` doubled inside).
pub(crate) fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_role_is_told_by_the_servers_words_only_under_28000() {
        assert!(is_missing_role("role \"nobody\" does not exist"));
        assert!(!is_missing_role(
            "no pg_hba.conf entry for host \"10.0.0.1\""
        ));
        assert!(!is_missing_role("database \"x\" does not exist"));
    }

    #[test]
    fn an_identifier_is_quoted_with_its_quotes_doubled() {
        assert_eq!(quote_identifier("syncplane"), "\"syncplane\"");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn each_cause_has_its_own_exit_status() {
        let causes = [
            Cause::NothingListens,
            Cause::Authentication,
            Cause::RoleMissing,
            Cause::DatabaseMissing,
            Cause::NoAnswer,
        ];
        let codes: Vec<u8> = causes[..4].iter().map(|c| c.exit_code()).collect();
        assert_eq!(codes, [3, 4, 5, 6]);
        assert_eq!(Cause::NoAnswer.exit_code(), Cause::Other.exit_code());
    }
}
