//! YAML to JSON within a budget of expanded values and bytes (the frontmatter limits, see
//! [`super::frontmatter`]).
//!
//! serde_yaml_ng keeps an anchor's events once and replays them each time an alias names it,
//! calling this visitor for every replayed value. Counting here therefore stops an alias bomb at
//! the budget, after at most that many values, before its expansion exists anywhere; its own
//! repetition limit counts alias jumps, not expanded size, so it cannot. Dates stay strings, keys
//! that are not strings are written out, tags are dropped, floats JSON cannot hold become strings,
//! and merge keys (`<<`) are applied.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};
use serde::de::{IgnoredAny, VariantAccess};
use serde_json::{Map, Value as Json};

/// How much one YAML document may expand to.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Values (scalars, sequences, mappings; keys included), counting every alias expansion.
    pub values: usize,
    /// Bytes of JSON text, counted as values arrive (exact but for escapes, which only add, and
    /// merge keys, whose overridden entries are counted though dropped).
    pub json_bytes: usize,
}

/// Why a document did not convert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum YamlError {
    /// Not valid YAML (the parser's message, with its position).
    Invalid(String),
    /// Expands to more than [`Limits::values`] values.
    TooManyValues,
    /// Expands to more than [`Limits::json_bytes`] bytes of JSON.
    TooLarge,
}

/// A converted document and whether NUL characters were removed from it (jsonb cannot store one).
#[derive(Debug)]
pub(crate) struct Converted {
    pub value: Json,
    pub had_nul: bool,
}

pub fn to_json(yaml: &str, limits: Limits) -> Result<Converted, YamlError> {
    let mut budget = Budget {
        values: limits.values,
        json_bytes: limits.json_bytes,
        exceeded: None,
        had_nul: false,
    };
    let result = Value {
        budget: &mut budget,
    }
    .deserialize(serde_yaml_ng::Deserializer::from_str(yaml));
    match (result, budget.exceeded) {
        (_, Some(exceeded)) => Err(exceeded),
        (Ok(value), None) => Ok(Converted {
            value,
            had_nul: budget.had_nul,
        }),
        (Err(error), None) => Err(YamlError::Invalid(error.to_string())),
    }
}

struct Budget {
    values: usize,
    json_bytes: usize,
    exceeded: Option<YamlError>,
    had_nul: bool,
}

impl Budget {
    /// Spends one value of `bytes` JSON bytes; past the budget, an error that ends the parse.
    fn spend<E: de::Error>(&mut self, bytes: usize) -> Result<(), E> {
        let Some(values) = self.values.checked_sub(1) else {
            return Err(self.exceed(YamlError::TooManyValues));
        };
        self.values = values;
        self.spend_bytes(bytes)
    }

    /// Spends JSON bytes that are not a value (separators).
    fn spend_bytes<E: de::Error>(&mut self, bytes: usize) -> Result<(), E> {
        let Some(json_bytes) = self.json_bytes.checked_sub(bytes) else {
            return Err(self.exceed(YamlError::TooLarge));
        };
        self.json_bytes = json_bytes;
        Ok(())
    }

    fn exceed<E: de::Error>(&mut self, why: YamlError) -> E {
        self.exceeded = Some(why);
        E::custom("frontmatter expansion budget exceeded")
    }

    fn string<E: de::Error>(&mut self, s: String) -> Result<Json, E> {
        let s = self.without_nul(s);
        self.spend(s.len() + 2)?;
        Ok(Json::String(s))
    }

    fn without_nul(&mut self, s: String) -> String {
        if s.contains('\0') {
            self.had_nul = true;
            s.replace('\0', "")
        } else {
            s
        }
    }
}

/// One YAML value, converted as it is read.
struct Value<'b> {
    budget: &'b mut Budget,
}

impl<'de> DeserializeSeed<'de> for Value<'_> {
    type Value = Json;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Value<'_> {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Json, E> {
        self.budget.spend(if b { 4 } else { 5 })?;
        Ok(Json::Bool(b))
    }
    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Json, E> {
        self.budget
            .spend(usize::from(i < 0) + digits(i.unsigned_abs()))?;
        Ok(Json::from(i))
    }
    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Json, E> {
        self.budget.spend(digits(u))?;
        Ok(Json::from(u))
    }
    // Integers past 64 bits: kept exactly, as text.
    fn visit_i128<E: de::Error>(self, i: i128) -> Result<Json, E> {
        self.budget.string(i.to_string())
    }
    fn visit_u128<E: de::Error>(self, u: u128) -> Result<Json, E> {
        self.budget.string(u.to_string())
    }
    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Json, E> {
        match serde_json::Number::from_f64(f) {
            Some(n) => {
                self.budget.spend(1)?;
                Ok(Json::Number(n))
            }
            // YAML's own spelling of what JSON cannot hold.
            None if f.is_nan() => self.budget.string(".nan".to_owned()),
            None if f > 0.0 => self.budget.string(".inf".to_owned()),
            None => self.budget.string("-.inf".to_owned()),
        }
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Json, E> {
        self.budget.string(s.to_owned())
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Json, E> {
        self.budget.string(s)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        self.budget.spend(4)?;
        Ok(Json::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        self.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        self.deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        self.budget.spend(2)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Value {
            budget: &mut *self.budget,
        })? {
            if !items.is_empty() {
                self.budget.spend_bytes(1)?;
            }
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        self.budget.spend(2)?;
        let mut object = Map::new();
        let mut merge = None;
        while let Some(key) = map.next_key_seed(Value {
            budget: &mut *self.budget,
        })? {
            let key = key_string(key);
            // The colon, and a comma before every entry but the first.
            self.budget
                .spend_bytes(1 + usize::from(!object.is_empty() || merge.is_some()))?;
            let value = map.next_value_seed(Value {
                budget: &mut *self.budget,
            })?;
            let is_merge = key == "<<";
            let duplicate = if is_merge {
                merge.is_some()
            } else {
                object.contains_key(&key)
            };
            if duplicate {
                return Err(de::Error::custom(format_args!(
                    "duplicate entry with key {key:?}"
                )));
            }
            if is_merge {
                merge = Some(value);
            } else {
                object.insert(key, value);
            }
        }
        if let Some(merge) = merge {
            apply_merge(&mut object, merge).map_err(de::Error::custom)?;
        }
        Ok(Json::Object(object))
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Json, A::Error> {
        // A tagged value (`!tag value`): the tag is dropped.
        let (IgnoredAny, value) = data.variant()?;
        value.newtype_variant_seed(self)
    }
}

/// Decimal digits of `n`.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// A mapping key as JSON object key text.
fn key_string(key: Json) -> String {
    match key {
        Json::String(s) => s,
        other => other.to_string(),
    }
}

/// YAML merge keys: `<<: *base` or `<<: [*a, *b]` add the entries the mapping does not have
/// (keys written in the mapping win, then earlier merged mappings over later ones).
fn apply_merge(object: &mut Map<String, Json>, merge: Json) -> Result<(), &'static str> {
    let sources = match merge {
        Json::Object(source) => vec![source],
        Json::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Json::Object(source) => Ok(source),
                _ => Err("bad merge key (<<)"),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err("bad merge key (<<)"),
    };
    for source in sources {
        for (key, value) in source {
            object.entry(key).or_insert(value);
        }
    }
    Ok(())
}
