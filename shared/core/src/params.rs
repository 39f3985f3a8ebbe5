//! A request's query parameters, the one parser of every surface (the sync and read API, the
//! transcript lane's read routes, the console's session routes): percent-decoded, checked
//! against the names a route takes before any query runs, each at most once unless the route
//! reads it as repeatable, and `limit` bounded. A refusal is a [`ParamError`]; each surface maps
//! it onto its own error type and words.

/// The longest parameter name a refusal repeats; a longer or odd one is not echoed.
pub(crate) const SHOWN_NAME_CHARS: usize = 40;

/// Why a request's query parameters were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamError {
    /// A name the route does not take (`name`: as sent, when short and plain enough to repeat).
    Unknown {
        name: Option<String>,
        known: &'static [&'static str],
        /// Names every route of the surface takes besides its own (the API's `tenant`).
        also: &'static [&'static str],
    },
    /// A name given more than once where one value is expected.
    Repeated(String),
    /// A name the route requires is absent.
    Missing(&'static str),
    /// `limit` outside `1..=max`.
    InvalidLimit { max: i64 },
}

impl ParamError {
    /// `name` (as sent) is not one of `known` (nor of `also`).
    pub fn unknown(
        name: &str,
        known: &'static [&'static str],
        also: &'static [&'static str],
    ) -> Self {
        let shown = (!name.is_empty()
            && name.len() <= SHOWN_NAME_CHARS
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')))
        .then(|| name.to_owned());
        Self::Unknown {
            name: shown,
            known,
            also,
        }
    }
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unknown { name, known, also } => {
                match name {
                    Some(n) => write!(f, "unknown query parameter {n:?}")?,
                    None => f.write_str("unknown query parameter")?,
                }
                match (known.is_empty(), also.is_empty()) {
                    (true, true) => f.write_str("; this route takes none"),
                    (true, false) => write!(f, "; this route takes none but {}", also.join(", ")),
                    (false, true) => write!(f, "; this route takes {}", known.join(", ")),
                    (false, false) => write!(
                        f,
                        "; this route takes {} (and {})",
                        known.join(", "),
                        also.join(", ")
                    ),
                }
            }
            Self::Repeated(name) => {
                write!(f, "the query parameter {name:?} is given more than once")
            }
            Self::Missing(name) => write!(f, "the query parameter {name:?} is required"),
            Self::InvalidLimit { max } => {
                write!(f, "limit must be a whole number from 1 to {max}")
            }
        }
    }
}

impl std::error::Error for ParamError {}

/// A request's query parameters, decoded, checked against the names a route takes.
#[derive(Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Parse `query`; a name outside `known` and `also` is refused, named.
    pub fn parse(
        query: Option<&str>,
        known: &'static [&'static str],
        also: &'static [&'static str],
    ) -> Result<Self, ParamError> {
        let pairs = decode(query);
        if let Some((name, _)) = pairs
            .iter()
            .find(|(k, _)| !known.contains(&k.as_str()) && !also.contains(&k.as_str()))
        {
            return Err(ParamError::unknown(name, known, also));
        }
        Ok(Self(pairs))
    }

    /// The first name given more than once, if any (for routes where every name is single).
    pub fn repeated(&self) -> Option<&str> {
        self.0
            .iter()
            .enumerate()
            .find(|(i, (name, _))| self.0[..*i].iter().any(|(n, _)| n == name))
            .map(|(_, (name, _))| name.as_str())
    }

    /// The one value of `name` (a name the route takes); twice is refused, named.
    pub fn one(&self, name: &str) -> Result<Option<&str>, ParamError> {
        let mut values = self.all(name);
        let first = values.next();
        if values.next().is_some() {
            return Err(ParamError::Repeated(name.to_owned()));
        }
        Ok(first)
    }

    /// The one value of `name`, which the route requires: absent is [`ParamError::Missing`].
    pub fn required(&self, name: &'static str) -> Result<&str, ParamError> {
        self.one(name)?.ok_or(ParamError::Missing(name))
    }

    /// Every value of a repeatable parameter, in order.
    pub fn all<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a str> {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `limit`: a whole number in `1..=max`, `default` when absent.
    pub fn limit(&self, default: i64, max: i64) -> Result<i64, ParamError> {
        match self.one("limit")? {
            None => Ok(default),
            Some(v) => v
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or(ParamError::InvalidLimit { max }),
        }
    }
}

/// The first value of `name` in `query`, percent-decoded, without checking the other names (a
/// value every route of a surface may carry, such as the API's `tenant`).
pub fn first(query: Option<&str>, name: &str) -> Option<String> {
    decode(query)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

fn decode(query: Option<&str>) -> Vec<(String, String)> {
    query
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_are_refused_and_the_surfaces_own_names_are_taken() {
        assert!(Params::parse(Some("sort=rank"), &["q"], &["tenant"]).is_err());
        assert!(Params::parse(Some("tenant=a"), &["q"], &["tenant"]).is_ok());
        let e = Params::parse(Some("q=a&sort=rank"), &["q", "limit"], &["tenant"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown query parameter \"sort\"; this route takes q, limit (and tenant)"
        );
        let e = Params::parse(Some("x=1"), &[], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown query parameter \"x\"; this route takes none"
        );
    }

    #[test]
    fn an_odd_or_long_name_is_not_repeated_back() {
        for odd in ["<script>", "a b", &"n".repeat(SHOWN_NAME_CHARS + 1)] {
            let query = format!(
                "{}=1",
                url::form_urlencoded::byte_serialize(odd.as_bytes()).collect::<String>()
            );
            match Params::parse(Some(&query), &["q"], &[]).unwrap_err() {
                ParamError::Unknown { name, .. } => assert_eq!(name, None, "{odd}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn one_value_each_unless_repeatable_and_the_limit_is_bounded() {
        let p = Params::parse(Some("q=a&q=b&path=x%2Fy"), &["q", "path"], &[]).unwrap();
        assert_eq!(p.one("q"), Err(ParamError::Repeated("q".into())));
        assert_eq!(p.all("q").collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(p.repeated(), Some("q"));
        assert_eq!(p.required("path"), Ok("x/y"));
        assert_eq!(p.required("limit"), Err(ParamError::Missing("limit")));
        for bad in ["0", "51", "x", "-1"] {
            let p = Params::parse(Some(&format!("limit={bad}")), &["limit"], &[]).unwrap();
            assert_eq!(p.limit(20, 50), Err(ParamError::InvalidLimit { max: 50 }));
        }
        assert_eq!(Params::parse(None, &[], &[]).unwrap().limit(20, 50), Ok(20));
        assert_eq!(
            first(Some("a=1&tenant=t%20x"), "tenant").as_deref(),
            Some("t x")
        );
    }
}
