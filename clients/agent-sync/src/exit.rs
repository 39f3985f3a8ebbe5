//! The exit codes of `push`, shared by `transcripts push` and `hook`
//! (docs/desktop-client.md, "The desktop client"; issue 21, points 8, 9 and 11). Each names one cause; a usage error is 1 like any
//! other error, never 2 (clap's default), which says that sessions were set aside.

use std::process::ExitCode;

/// Everything was delivered (or, for `--help`, nothing went wrong).
pub const DELIVERED: u8 = 0;
/// Anything else: a usage error, the state database, the store: one line on stderr.
pub const OTHER: u8 = 1;
/// Sessions were set aside; stderr says when they are retried (`--retry-set-aside`: now).
pub const SET_ASIDE: u8 = 2;
/// The device token was refused (401).
pub const TOKEN_REFUSED: u8 = 3;
/// The feature is off for the org (`feature_disabled`; for transcripts also
/// `transcripts_disabled`, or a server without the transcript lane).
pub const FEATURE_DISABLED: u8 = 4;
/// The server did not answer hello for its budget of attempts or for `--wait`.
pub const UNREACHABLE: u8 = 5;
/// The compute target was refused as not the token's user's for `--wait`.
pub const TARGET_NOT_OWNED: u8 = 6;
/// `--url` reaches no ingest function: hello and the sync route both answered 404.
pub const NOT_INGEST: u8 = 7;

/// The table `--help` prints (docs/desktop-client.md, "The desktop client", has the same).
pub const TABLE: &str = "\
Exit codes:
  0  every session delivered
  1  any other error (usage, state database, store), one line on stderr
  2  sessions set aside: stderr says when a later push retries them (--retry-set-aside: now)
  3  the device token was refused (401)
  4  the feature is off for the org (feature_disabled)
  5  the server did not answer hello (5 attempts, or --wait)
  6  the compute target is not the token's user's (target_not_owned for --wait)
  7  --url is not the ingest function (404 on hello and on sync)";

pub fn code(code: u8) -> ExitCode {
    ExitCode::from(code)
}
