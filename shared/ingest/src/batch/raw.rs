//! The batch as sent: field-by-field mirrors of the contract's tables, read straight from the
//! decoded bytes without building a JSON tree. Every field is an optional [`Scalar`] (null counts
//! as omitted) or a mirror of its nested object; unknown fields, and the retired ones
//! (`tokenSeries`, an event's `summary` and `data`), are skipped unread. Arrays of objects are
//! checked item by item as they are read ([`Checked`]).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use syncplane_contract::{MAX_FRUSTRATION_SIGNALS, MAX_SAFE_INTEGER};

use super::checks::{CheckItem, Field, Json, Path, storable, whole_float};
use crate::error::IngestError;

/// No value, for errors about a field as a whole.
pub(super) const NONE: Option<Scalar<'static>> = None;

/// The envelope as sent: each field any JSON value (null counts as omitted), unknown ones skipped.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawEnvelope<'a> {
    #[serde(borrow)]
    pub(super) schema_version: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) batch_id: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) mode: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) compute_target_id: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) encoding: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) session_count: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) sessions: Option<Items<Box<RawSession<'a>>>>,
}

/// A session as sent. Its retired fields (`tokenSeries`) have no place here: never read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawSession<'a> {
    #[serde(borrow)]
    pub(super) session_id: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) updated_at: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) data_revision: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) chunk: Option<Item<RawChunk<'a>>>,
    #[serde(borrow)]
    pub(super) agent: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) model: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) title: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) status: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) started_at: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) ended_at: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) repository: Option<Item<RawRepository<'a>>>,
    #[serde(borrow)]
    pub(super) usage: Option<Item<RawUsage<'a>>>,
    #[serde(borrow)]
    pub(super) events: Option<Checked<RawEvent<'a>>>,
    #[serde(borrow)]
    pub(super) token_events: Option<Checked<RawTokenEvent<'a>>>,
    #[serde(borrow)]
    pub(super) artifact_refs: Option<Checked<RawArtifactRef<'a>>>,
    #[serde(borrow)]
    pub(super) frustration: Option<Item<RawFrustration<'a>>>,
}

/// The nested objects as sent: their fields only, unknown keys skipped unread.
#[derive(Deserialize)]
pub(super) struct RawChunk<'a> {
    #[serde(borrow)]
    pub(super) index: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) total: Option<Scalar<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawRepository<'a> {
    #[serde(borrow)]
    pub(super) remote_url: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) branch: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) commit_sha: Option<Scalar<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawUsage<'a> {
    #[serde(borrow)]
    pub(super) input_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) output_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) cache_read_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) cache_write_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) cost_usd: Option<Scalar<'a>>,
}

#[derive(Deserialize)]
pub(super) struct RawFrustration<'a> {
    #[serde(borrow)]
    pub(super) score: Option<Scalar<'a>>,
    pub(super) signals: Option<Signals>,
}

/// A nested object field and the path its own fields are named under; a value that is not an
/// object is a 400.
pub(super) fn object<T>(
    field: &Field<'_, '_, Scalar<'_>>,
    value: Option<Item<T>>,
) -> Result<Option<(T, Path<'static>)>, IngestError> {
    match value {
        None => Ok(None),
        Some(Item::Object(t)) => Ok(Some((t, Path::Text(field.name())))),
        Some(Item::NotObject) => Err(field.err("must be an object")),
    }
}

/// An event as sent. The retired `summary` and `data` have no place here: never read. Events
/// are tens of thousands per batch, so their fields are [`Scalar`]s, not JSON trees.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawEvent<'a> {
    #[serde(borrow)]
    pub(super) seq: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) ts: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) kind: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) tool_name: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) duration_ms: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) input_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) output_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) is_error: Option<Scalar<'a>>,
}

/// A token event as sent.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawTokenEvent<'a> {
    #[serde(borrow)]
    pub(super) ts: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) input_tokens: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub(super) output_tokens: Option<Scalar<'a>>,
}

/// An artifact reference as sent.
#[derive(Deserialize)]
pub(super) struct RawArtifactRef<'a> {
    #[serde(borrow)]
    pub(super) kind: Option<Scalar<'a>>,
    #[serde(borrow, rename = "ref")]
    pub(super) reference: Option<Scalar<'a>>,
}

/// One field as sent, without building a JSON value: a string borrowed from the body when it has
/// no escapes, a number as read, and an object or array only noted (it is never a valid event
/// field).
pub(super) enum Scalar<'de> {
    Str(Cow<'de, str>),
    U64(u64),
    I64(i64),
    F64(f64),
    Bool(bool),
    Null,
    Nested,
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Scalar<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Str(Cow::Owned(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar<'a>, E> {
                Ok(Scalar::U64(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar<'a>, E> {
                Ok(Scalar::I64(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar<'a>, E> {
                Ok(Scalar::F64(v))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_unit<E>(self) -> Result<Scalar<'a>, E> {
                Ok(Scalar::Null)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Nested)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Nested)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl Json for Scalar<'_> {
    fn is_null(&self) -> bool {
        matches!(self, Scalar::Null)
    }
    fn as_str(&self) -> Option<&str> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }
    fn as_bool(&self) -> Option<bool> {
        match self {
            Scalar::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::U64(u) => Some(*u as f64),
            Scalar::I64(i) => Some(*i as f64),
            Scalar::F64(f) => Some(*f),
            _ => None,
        }
    }
    fn whole(&self) -> Option<u64> {
        match self {
            Scalar::U64(u) => (*u <= MAX_SAFE_INTEGER).then_some(*u),
            // serde_json reads a non-negative integer as u64: an i64 is negative.
            Scalar::I64(_) => None,
            Scalar::F64(f) => whole_float(*f),
            _ => None,
        }
    }
}

/// Visitor methods for every JSON scalar (bool, numbers, string, null), each answering `$v`.
macro_rules! scalars_are {
    ($v:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($v)
        }
    };
}

/// A field that must be an array of objects: anything else is kept as a verdict, not a serde
/// error, so the 400 names the field like every other rule.
pub(super) enum Items<T> {
    List(Vec<Item<T>>),
    NotArray,
}

pub(super) enum Item<T> {
    Object(T),
    NotObject,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Items<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Items<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Items<T>, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Items::List(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Items<T>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Items::NotArray)
            }
            scalars_are!(Items::NotArray);
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Item<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Item<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Item<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Item::Object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item<T>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Item::NotObject)
            }
            scalars_are!(Item::NotObject);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// `frustration.signals` as sent: the strings while every item is a storable string and there are
/// at most [`MAX_FRUSTRATION_SIGNALS`]; after the first item that is not, or the first one over
/// the cap, the rest is skipped unread (nothing past the cap is held).
pub(super) enum Signals {
    Strings(Vec<String>),
    Invalid,
    TooMany,
    NotArray,
}

impl<'de> Deserialize<'de> for Signals {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Signals;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Signals, A::Error> {
                let mut strings = Vec::new();
                while let Some(item) = seq.next_element::<Scalar<'_>>()? {
                    let refusal = match item.as_str().filter(|s| storable(s).is_ok()) {
                        None => Signals::Invalid,
                        Some(_) if strings.len() == MAX_FRUSTRATION_SIGNALS => Signals::TooMany,
                        Some(s) => {
                            strings.push(s.to_owned());
                            continue;
                        }
                    };
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    return Ok(refusal);
                }
                Ok(Signals::Strings(strings))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Signals, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Signals::NotArray)
            }
            scalars_are!(Signals::NotArray);
        }
        d.deserialize_any(V)
    }
}

/// An array of objects (`events`, `tokenEvents`, `artifactRefs`) checked as it is read: the batch
/// holds checked items only, never a raw one per item (a raw event is about 200 bytes, a JSON
/// object several hundred; 4 MiB of `{},` is a million items). The first item that fails is kept
/// as sent and its 400 is built in the session's order of checks, as if the array had been read
/// whole; the items after it are skipped unread.
pub(super) enum Checked<R: CheckItem> {
    List {
        items: Vec<R::Checked>,
        first_bad: Option<(usize, Item<R>)>,
    },
    NotArray,
}

impl<R: CheckItem> Checked<R> {
    /// The checked items, or the 400 for the array or its first bad item, named by `field`.
    pub(super) fn into_items<J: Json>(
        self,
        field: &Field<'_, '_, J>,
    ) -> Result<Vec<R::Checked>, IngestError> {
        let (items, first_bad) = match self {
            Checked::NotArray => return Err(field.err("must be an array")),
            Checked::List { items, first_bad } => (items, first_bad),
        };
        let Some((index, item)) = first_bad else {
            return Ok(items);
        };
        let array = field.name();
        let at = Path::Item {
            array: &array,
            index,
        };
        Err(match item {
            Item::Object(raw) => raw
                .check(&at)
                .err()
                .unwrap_or_else(|| IngestError::bad_request(format!("{at}: invalid"))),
            Item::NotObject => IngestError::bad_request(format!("{at}: must be an object")),
        })
    }
}

impl<'de, R: CheckItem + Deserialize<'de>> Deserialize<'de> for Checked<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<R>(PhantomData<R>);
        impl<'de, R: CheckItem + Deserialize<'de>> Visitor<'de> for V<R> {
            type Value = Checked<R>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked<R>, A::Error> {
                let unnamed = Path::Text(String::new());
                let mut items = Vec::new();
                let mut first_bad = None;
                while first_bad.is_none() {
                    let Some(item) = seq.next_element::<Item<R>>()? else {
                        break;
                    };
                    let checked = match &item {
                        Item::Object(raw) => raw.check(&unnamed).ok(),
                        Item::NotObject => None,
                    };
                    match checked {
                        Some(checked) => items.push(checked),
                        None => first_bad = Some((items.len(), item)),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Checked::List { items, first_bad })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked<R>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Checked::NotArray)
            }
            scalars_are!(Checked::NotArray);
        }
        d.deserialize_any(V(PhantomData))
    }
}
