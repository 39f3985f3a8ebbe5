//! The field checks of the schema parse: each contract rule (type, bound, RFC 3339 time, no
//! NUL) as a typed read of one field, whose 400 names the field by its path in the batch
//! (contract "What the server does with a POST", step 5: "The message names the first field
//! that broke a rule").

use std::fmt;

use chrono::{DateTime, Utc};
use syncplane_contract::MAX_SAFE_INTEGER;

use super::model::Timestamp;
use crate::error::IngestError;

/// What the field checks read of a JSON value as sent ([`super::raw::Scalar`]).
pub(super) trait Json {
    fn is_null(&self) -> bool;
    fn as_str(&self) -> Option<&str>;
    fn as_bool(&self) -> Option<bool>;
    fn as_f64(&self) -> Option<f64>;
    /// A whole number from 0 to 2^53 - 1 (`5.0` is the number 5).
    fn whole(&self) -> Option<u64>;
}

/// An item of an array of objects that is checked as it is read (see [`super::raw::Checked`]).
pub(super) trait CheckItem: Sized {
    type Checked;
    /// The item's checks; `at` only names it in an error.
    fn check(&self, at: &Path<'_>) -> Result<Self::Checked, IngestError>;
}

/// Where an object is, for error messages. An array item's path is only spelled out when an
/// error needs it: a batch has tens of thousands of events and almost never an error.
pub(super) enum Path<'p> {
    Text(String),
    Item { array: &'p str, index: usize },
}

impl<'p> Path<'p> {
    /// A field of the object at this path; null counts as omitted.
    pub(super) fn field<'v, 'k, J: Json>(
        &'k self,
        key: &'k str,
        value: &'v Option<J>,
    ) -> Field<'v, 'k, J>
    where
        'p: 'k,
    {
        Field::new(self, key, value.as_ref())
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Text(p) => f.write_str(p),
            Path::Item { array, index } => write!(f, "{array}[{index}]"),
        }
    }
}

/// One field's value and where it is, for typed reads with errors that name the field.
pub(super) struct Field<'v, 'k, J> {
    owner: &'k Path<'k>,
    key: &'k str,
    /// Present and not null.
    value: Option<&'v J>,
}

impl<'v, 'k, J: Json> Field<'v, 'k, J> {
    fn new(owner: &'k Path<'k>, key: &'k str, value: Option<&'v J>) -> Self {
        Self {
            owner,
            key,
            value: value.filter(|v| !v.is_null()),
        }
    }

    pub(super) fn name(&self) -> String {
        match self.owner {
            Path::Text(p) if p.is_empty() => self.key.to_owned(),
            owner => format!("{owner}.{}", self.key),
        }
    }

    pub(super) fn err(&self, rule: &str) -> IngestError {
        IngestError::bad_request(format!("{}: {rule}", self.name()))
    }

    pub(super) fn req_str(&self, min: usize, max: usize) -> Result<String, IngestError> {
        let s = self
            .value
            .and_then(J::as_str)
            .ok_or_else(|| self.err("required string"))?;
        check_len(s, min, max).map_err(|rule| self.err(&rule))?;
        storable(s).map_err(|rule| self.err(rule))?;
        Ok(s.to_owned())
    }

    pub(super) fn opt_str(&self) -> Result<Option<String>, IngestError> {
        match self.value {
            None => Ok(None),
            Some(v) => {
                let s = v.as_str().ok_or_else(|| self.err("must be a string"))?;
                storable(s).map_err(|rule| self.err(rule))?;
                Ok(Some(s.to_owned()))
            }
        }
    }

    pub(super) fn opt_bool(&self) -> Result<Option<bool>, IngestError> {
        match self.value {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.err("must be a boolean")),
        }
    }

    pub(super) fn req_int(&self) -> Result<u64, IngestError> {
        self.opt_int()?.ok_or_else(|| self.err("required integer"))
    }

    pub(super) fn opt_int(&self) -> Result<Option<u64>, IngestError> {
        match self.value {
            None => Ok(None),
            Some(v) => v
                .whole()
                .map(Some)
                .ok_or_else(|| self.err("must be a whole number from 0 to 2^53 - 1")),
        }
    }

    pub(super) fn req_number(&self) -> Result<f64, IngestError> {
        self.value
            .and_then(J::as_f64)
            .ok_or_else(|| self.err("required number"))
    }

    pub(super) fn opt_non_negative(&self) -> Result<Option<f64>, IngestError> {
        match self.value {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(n) if n >= 0.0 && n.is_finite() => Ok(Some(n)),
                _ => Err(self.err("must be a non-negative number")),
            },
        }
    }

    pub(super) fn req_time(&self) -> Result<Timestamp, IngestError> {
        self.opt_time()?
            .ok_or_else(|| self.err("required RFC 3339 time"))
    }

    /// A required RFC 3339 time where only the instant is kept (no copy of the text).
    pub(super) fn req_instant(&self) -> Result<DateTime<Utc>, IngestError> {
        match self.value.and_then(J::as_str) {
            Some(s) => DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| self.err("must be an RFC 3339 time")),
            None if self.value.is_some() => Err(self.err("must be an RFC 3339 time")),
            None => Err(self.err("required RFC 3339 time")),
        }
    }

    pub(super) fn opt_time(&self) -> Result<Option<Timestamp>, IngestError> {
        match self.value {
            None => Ok(None),
            Some(v) => match v.as_str() {
                Some(s) => DateTime::parse_from_rfc3339(s)
                    .map(|t| {
                        Some(Timestamp {
                            at: t.with_timezone(&Utc),
                            raw: s.to_owned(),
                        })
                    })
                    .map_err(|_| self.err("must be an RFC 3339 time")),
                None => Err(self.err("must be an RFC 3339 time")),
            },
        }
    }
}

fn check_len(s: &str, min: usize, max: usize) -> Result<(), String> {
    let n = s.chars().count();
    if n < min || n > max {
        Err(format!("must be {min} to {max} characters"))
    } else {
        Ok(())
    }
}

/// Postgres text and jsonb cannot hold U+0000: such a string is bad input (400), not a database
/// failure (500).
pub(super) fn storable(s: &str) -> Result<(), &'static str> {
    if s.contains('\0') {
        Err("must not contain the NUL character (U+0000)")
    } else {
        Ok(())
    }
}

/// A whole JSON number from 0 to 2^53 - 1 (`5.0` is the number 5).
pub(super) fn whole_float(f: f64) -> Option<u64> {
    (f >= 0.0 && f.fract() == 0.0 && f <= MAX_SAFE_INTEGER as f64).then_some(f as u64)
}
