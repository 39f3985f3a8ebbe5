//! The read routes' inputs, each bounded and typed before any query runs (issue 11 "Bad input"):
//! query parameters (`syncplane_core::params`: known names only, each at most once unless
//! repeatable, `limit`), repository names, and repository-relative paths (strict percent-decoding, no `.`/`..` segments, no NUL).

use super::super::error::ApiError;
use syncplane_core::config::RepoName;
pub use syncplane_core::params::Params;

/// Longest repository-relative path accepted (GitHub paths are far shorter in practice).
pub(crate) const MAX_PATH_BYTES: usize = 1024;

/// The API's query parameters: the route's names and `tenant`, which every route takes
/// (`syncplane_core::params`).
pub fn parse(query: Option<&str>, known: &'static [&'static str]) -> Result<Params, ApiError> {
    Ok(Params::parse(query, known, TAKEN_BY_EVERY_ROUTE)?)
}

/// What every route of the API takes besides its own names.
const TAKEN_BY_EVERY_ROUTE: &[&str] = &["tenant"];

/// `owner/name` as a route or filter names it.
pub(crate) fn repo_name(value: &str) -> Result<(String, String), ApiError> {
    RepoName::parse(value)
        .map(|r| (r.owner, r.name))
        .ok_or(ApiError::InvalidRepository)
}

/// A repository-relative file path: no leading `/`, no empty, `.` or `..` segment, no NUL or
/// other control character. `folder` allows one trailing `/` (a prefix filter).
pub(crate) fn repo_path(value: &str, folder: bool) -> Result<String, ApiError> {
    let body = if folder {
        value.strip_suffix('/').unwrap_or(value)
    } else {
        value
    };
    let ok = !body.is_empty()
        && value.len() <= MAX_PATH_BYTES
        && !value.chars().any(char::is_control)
        && body
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..");
    ok.then(|| value.to_owned()).ok_or(ApiError::InvalidPath)
}

/// Strict percent-decoding of a path taken from the URL: every `%` starts two hex digits and the
/// result is UTF-8. (A lenient decoder would let `%2e%2e` or `%00` slip past the checks.)
pub fn percent_decode(raw: &str) -> Result<String, ApiError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or(ApiError::InvalidPath)?;
            let hex = std::str::from_utf8(hex).map_err(|_| ApiError::InvalidPath)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| ApiError::InvalidPath)?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ApiError::InvalidPath)
}

/// `value` as a `LIKE` prefix pattern: `%`, `_` and the escape character itself are literal.
pub(crate) fn like_prefix(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 1);
    for c in value.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_params_refuse_unknown_and_repeated_names_and_bound_the_limit() {
        let p = parse(
            Some("q=a+b&limit=5&repo=x/y&repo=z/w"),
            &["q", "limit", "repo"],
        )
        .unwrap();
        assert_eq!(p.one("q").unwrap(), Some("a b"));
        assert_eq!(p.limit(20, 50).unwrap(), 5);
        assert_eq!(p.all("repo").collect::<Vec<_>>(), ["x/y", "z/w"]);
        assert!(p.one("repo").is_err(), "repeated where one is expected");
        assert!(parse(Some("sort=rank"), &["q"]).is_err());
        assert!(parse(Some("tenant=a"), &["q"]).is_ok());
        for bad in ["0", "51", "-1", "2.5", "x", ""] {
            let p = parse(Some(&format!("limit={bad}")), &["limit"]).unwrap();
            assert!(
                matches!(
                    p.limit(20, 50).map_err(ApiError::from),
                    Err(ApiError::InvalidLimit { max: 50 })
                ),
                "{bad}"
            );
        }
        assert_eq!(parse(None, &[]).unwrap().limit(20, 50).unwrap(), 20);
    }

    /// Issue 21 point 14: each refusal says what was wrong, in a fixed message that repeats
    /// nothing but a plausible parameter name.
    #[test]
    fn read_param_errors_name_the_parameter_the_range_or_the_missing_name() {
        let known: &'static [&'static str] = &["q", "limit"];
        let e = parse(Some("q=a&sort=rank"), known).unwrap_err();
        assert_eq!(e.code(), "unknown_parameter");
        assert_eq!(
            e.to_string(),
            r#"unknown query parameter "sort"; this route takes q, limit (and tenant)"#
        );
        let e = parse(Some("x=1"), &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"unknown query parameter "x"; this route takes none but tenant"#
        );
        // Input that is not a plausible name is not repeated.
        let long = "n".repeat(41);
        for odd in ["%3Cscript%3E", long.as_str(), "a%0Ab"] {
            let e = parse(Some(&format!("{odd}=1")), known).unwrap_err();
            assert_eq!(
                e.to_string(),
                "unknown query parameter; this route takes q, limit (and tenant)",
                "{odd}"
            );
        }
        let p = parse(Some("q=a&q=b"), known).unwrap();
        let e = ApiError::from(p.one("q").unwrap_err());
        assert_eq!(e.code(), "unknown_parameter");
        assert_eq!(
            e.to_string(),
            r#"the query parameter "q" is given more than once"#
        );
        let p = parse(Some("limit=0"), known).unwrap();
        let e = ApiError::from(p.limit(20, 50).unwrap_err());
        assert_eq!(
            (e.code(), e.to_string().as_str()),
            ("invalid_limit", "limit must be a whole number from 1 to 50")
        );
        let e = ApiError::from(
            parse(None, &["path"])
                .unwrap()
                .required("path")
                .unwrap_err(),
        );
        assert_eq!(
            (e.code(), e.to_string().as_str()),
            (
                "missing_parameter",
                r#"the query parameter "path" is required"#
            )
        );
        assert_eq!(e.status(), http::StatusCode::BAD_REQUEST);
    }

    #[test]
    fn read_paths_refuse_dot_segments_nul_and_bad_percent_encoding() {
        assert_eq!(repo_path("docs/a.md", false).unwrap(), "docs/a.md");
        assert_eq!(repo_path("docs/", true).unwrap(), "docs/");
        for bad in [
            "",
            "/etc/passwd",
            "docs/../x",
            "./a",
            "a//b",
            "a\0b",
            "docs/",
            "a/..",
        ] {
            assert!(repo_path(bad, false).is_err(), "{bad:?}");
        }
        assert!(repo_path(&"a".repeat(MAX_PATH_BYTES + 1), false).is_err());
        assert_eq!(percent_decode("docs/a%20b.md").unwrap(), "docs/a b.md");
        assert_eq!(percent_decode("%2e%2e").unwrap(), "..");
        for bad in ["%", "%2", "%zz", "%ff"] {
            assert!(percent_decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn read_like_prefix_escapes_metacharacters() {
        assert_eq!(like_prefix(r"docs/100%_\"), r"docs/100\%\_\\%");
    }

    #[test]
    fn read_repo_names_are_owner_slash_name() {
        assert!(repo_name("acme/handbook").is_ok());
        for bad in ["acme", "acme/", "/x", "a/b/c", "a b/c", "a/b;drop"] {
            assert!(repo_name(bad).is_err(), "{bad:?}");
        }
    }
}
