//! Step 2's JSON check: the decoded body must be one JSON document with no duplicate key in any
//! object (contract: "Duplicate keys in a JSON object are 400"; serde_json alone would keep the
//! last of two equal keys). The document is walked once without being built, and the envelope's
//! `computeTargetId` is picked out for step 3; the typed schema parse (step 5, [`super::batch`])
//! reads the bytes again only once the batch has passed ownership and the rate limit.
//! serde_json's recursion limit applies, so deep nesting cannot exhaust the stack.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// What step 3 needs from a well-formed body.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    /// The document is an object; its `computeTargetId` if that is a string.
    Object { compute_target_id: Option<String> },
    /// The document is some other JSON value: there is no envelope.
    NotObject,
}

/// Check one JSON document (nothing but whitespace after it); duplicate keys are an error.
pub fn check(bytes: &[u8]) -> Result<Checked, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let checked = de.deserialize_any(RootVisitor)?;
    de.end()?;
    Ok(checked)
}

struct RootVisitor;

impl<'de> Visitor<'de> for RootVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        let mut keys = Keys::default();
        let mut compute_target_id = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if key == "computeTargetId" {
                compute_target_id = map.next_value_seed(TargetSeed)?;
            } else {
                map.next_value_seed(Ignore)?;
            }
            keys.insert(key)?;
        }
        Ok(Checked::Object { compute_target_id })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Checked, A::Error> {
        IgnoreVisitor.visit_seq(seq).map(|()| Checked::NotObject)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked::NotObject)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked::NotObject)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked::NotObject)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked::NotObject)
    }
    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked::NotObject)
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked::NotObject)
    }
}

/// The keys of one object so far. Most objects have a handful, so a short list is searched; an
/// object with many keys moves to a hash set, so a hostile one costs linear time, not quadratic.
#[derive(Default)]
struct Keys<'de> {
    few: Vec<Cow<'de, str>>,
    many: Option<HashSet<Cow<'de, str>>>,
}

const FEW_KEYS: usize = 16;

impl<'de> Keys<'de> {
    fn insert<E: de::Error>(&mut self, key: Cow<'de, str>) -> Result<(), E> {
        let repeated = match &mut self.many {
            Some(set) => {
                if set.contains(&key) {
                    true
                } else {
                    set.insert(key.clone());
                    false
                }
            }
            None if self.few.contains(&key) => true,
            None if self.few.len() < FEW_KEYS => {
                self.few.push(key.clone());
                false
            }
            None => {
                let mut set: HashSet<_> = self.few.drain(..).collect();
                set.insert(key.clone());
                self.many = Some(set);
                false
            }
        };
        if repeated {
            return Err(E::custom(format_args!("duplicate key {key:?}")));
        }
        Ok(())
    }
}

/// A key, borrowed from the input when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A value walked and dropped: only its keys are checked.
struct Ignore;

impl<'de> DeserializeSeed<'de> for Ignore {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(IgnoreVisitor)
    }
}

/// `computeTargetId`'s value: the string, or `None` for any other JSON (walked like the rest).
struct TargetSeed;

impl<'de> DeserializeSeed<'de> for TargetSeed {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(TargetVisitor)
    }
}

struct TargetVisitor;

impl<'de> Visitor<'de> for TargetVisitor {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        IgnoreVisitor.visit_seq(seq).map(|()| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        IgnoreVisitor.visit_map(map).map(|()| None)
    }
}

struct IgnoreVisitor;

impl<'de> Visitor<'de> for IgnoreVisitor {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Ignore)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = Keys::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            map.next_value_seed(Ignore)?;
            keys.insert(key)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(id: &str) -> Checked {
        Checked::Object {
            compute_target_id: Some(id.to_owned()),
        }
    }

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        assert!(check(br#"{"a":1,"a":2}"#).is_err());
        assert!(check(br#"{"x":[{"b":1,"c":2,"b":3}]}"#).is_err());
        assert!(check(br#"[{"b":1,"b":1}]"#).is_err());
        assert!(check(br#"{"computeTargetId":"t","computeTargetId":"t"}"#).is_err());
        assert!(check(br#"{"computeTargetId":{"a":1,"a":1}}"#).is_err());
        // An escaped key equals its plain spelling.
        assert!(check(br#"{"a":1,"\u0061":2}"#).is_err());
        assert_eq!(
            check(br#" {"a":{"a":1},"b":[1,2.5,"s",null,true],"computeTargetId":"t"} "#).unwrap(),
            target("t")
        );
    }

    #[test]
    fn many_keys_switch_to_a_set_and_still_catch_a_repeat() {
        let keys: Vec<String> = (0..200).map(|i| format!("\"k{i}\":{i}")).collect();
        let ok = format!("{{{}}}", keys.join(","));
        assert!(check(ok.as_bytes()).is_ok());
        let repeated = format!("{{{},\"k7\":0}}", keys.join(","));
        assert!(check(repeated.as_bytes()).is_err());
    }

    #[test]
    fn the_target_is_picked_out_only_when_it_is_a_string() {
        assert_eq!(
            check(br#"{"computeTargetId":5}"#).unwrap(),
            Checked::Object {
                compute_target_id: None
            }
        );
        assert_eq!(
            check(br#"{"x":1}"#).unwrap(),
            Checked::Object {
                compute_target_id: None
            }
        );
        assert_eq!(check(br#"[1]"#).unwrap(), Checked::NotObject);
        assert_eq!(check(br#""s""#).unwrap(), Checked::NotObject);
    }

    #[test]
    fn trailing_data_and_deep_nesting_are_errors_not_crashes() {
        assert!(check(br#"{"a":1} x"#).is_err());
        assert!(check(b"").is_err());
        let deep = "[".repeat(100_000);
        assert!(check(deep.as_bytes()).is_err());
        let deep = "{\"a\":".repeat(100_000);
        assert!(check(deep.as_bytes()).is_err());
    }
}
