//! The read routes' inputs, each bounded and typed before any query runs (issue 11 "Bad input"):
//! query parameters (known names only, each at most once unless repeatable), `limit`, repository
//! names, and repository-relative paths (strict percent-decoding, no `.`/`..` segments, no NUL).

use super::super::error::{ApiError, BadParameter};
use crate::config::RepoName;

/// Longest repository-relative path accepted (GitHub paths are far shorter in practice).
pub const MAX_PATH_BYTES: usize = 1024;

/// A request's query parameters, decoded, checked against the names a route takes.
#[derive(Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Parse `query`; a name outside `known` is refused, named (`tenant` is every route's).
    pub fn parse(query: Option<&str>, known: &'static [&'static str]) -> Result<Self, ApiError> {
        let pairs: Vec<(String, String)> = query
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        if let Some((name, _)) = pairs
            .iter()
            .find(|(k, _)| k != "tenant" && !known.contains(&k.as_str()))
        {
            return Err(ApiError::UnknownParameter(BadParameter::unknown(
                name, known,
            )));
        }
        Ok(Self(pairs))
    }

    /// The one value of `name` (a name the route takes); twice is refused, named.
    pub fn one(&self, name: &str) -> Result<Option<&str>, ApiError> {
        let mut values = self
            .0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str());
        let first = values.next();
        if values.next().is_some() {
            return Err(ApiError::UnknownParameter(BadParameter::Repeated(
                name.to_owned(),
            )));
        }
        Ok(first)
    }

    /// The one value of `name`, which the route requires: absent is `missing_parameter`.
    pub fn required(&self, name: &'static str) -> Result<&str, ApiError> {
        self.one(name)?.ok_or(ApiError::MissingParameter(name))
    }

    /// Every value of a repeatable parameter, in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `limit`: a whole number in `1..=max`, `default` when absent.
    pub fn limit(&self, default: i64, max: i64) -> Result<i64, ApiError> {
        match self.one("limit")? {
            None => Ok(default),
            Some(v) => v
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or(ApiError::InvalidLimit { max }),
        }
    }
}

/// `owner/name` as a route or filter names it.
pub fn repo_name(value: &str) -> Result<(String, String), ApiError> {
    RepoName::parse(value)
        .map(|r| (r.owner, r.name))
        .ok_or(ApiError::InvalidRepository)
}

/// A repository-relative file path: no leading `/`, no empty, `.` or `..` segment, no NUL or
/// other control character. `folder` allows one trailing `/` (a prefix filter).
pub fn repo_path(value: &str, folder: bool) -> Result<String, ApiError> {
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
pub fn like_prefix(value: &str) -> String {
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
        let p = Params::parse(
            Some("q=a+b&limit=5&repo=x/y&repo=z/w"),
            &["q", "limit", "repo"],
        )
        .unwrap();
        assert_eq!(p.one("q").unwrap(), Some("a b"));
        assert_eq!(p.limit(20, 50).unwrap(), 5);
        assert_eq!(p.all("repo").collect::<Vec<_>>(), ["x/y", "z/w"]);
        assert!(p.one("repo").is_err(), "repeated where one is expected");
        assert!(Params::parse(Some("sort=rank"), &["q"]).is_err());
        assert!(Params::parse(Some("tenant=a"), &["q"]).is_ok());
        for bad in ["0", "51", "-1", "2.5", "x", ""] {
            let p = Params::parse(Some(&format!("limit={bad}")), &["limit"]).unwrap();
            assert!(
                matches!(p.limit(20, 50), Err(ApiError::InvalidLimit { max: 50 })),
                "{bad}"
            );
        }
        assert_eq!(Params::parse(None, &[]).unwrap().limit(20, 50).unwrap(), 20);
    }

    /// Issue 21 point 14: each refusal says what was wrong, in a fixed message that repeats
    /// nothing but a plausible parameter name.
    #[test]
    fn read_param_errors_name_the_parameter_the_range_or_the_missing_name() {
        let known: &'static [&'static str] = &["q", "limit"];
        let e = Params::parse(Some("q=a&sort=rank"), known).unwrap_err();
        assert_eq!(e.code(), "unknown_parameter");
        assert_eq!(
            e.to_string(),
            r#"unknown query parameter "sort"; this route takes q, limit (and tenant)"#
        );
        let e = Params::parse(Some("x=1"), &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"unknown query parameter "x"; this route takes none but tenant"#
        );
        // Input that is not a plausible name is not repeated.
        let long = "n".repeat(41);
        for odd in ["%3Cscript%3E", long.as_str(), "a%0Ab"] {
            let e = Params::parse(Some(&format!("{odd}=1")), known).unwrap_err();
            assert_eq!(
                e.to_string(),
                "unknown query parameter; this route takes q, limit (and tenant)",
                "{odd}"
            );
        }
        let p = Params::parse(Some("q=a&q=b"), known).unwrap();
        let e = p.one("q").unwrap_err();
        assert_eq!(e.code(), "unknown_parameter");
        assert_eq!(
            e.to_string(),
            r#"the query parameter "q" is given more than once"#
        );
        let p = Params::parse(Some("limit=0"), known).unwrap();
        let e = p.limit(20, 50).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string().as_str()),
            ("invalid_limit", "limit must be a whole number from 1 to 50")
        );
        let e = Params::parse(None, &["path"])
            .unwrap()
            .required("path")
            .unwrap_err();
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
