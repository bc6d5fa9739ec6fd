//! Input as operations take it, parsed once at the edge: JSON whose errors name the
//! field, a listing's page, and the numbers and flags a query string writes as text
//! (the ids are `engram_base::domain`'s). A transport deserializes an operation's input type with
//! [`parse_json`] (a body) or [`parse_value`] (a query string's or a tool's
//! arguments); what comes out is valid, and an operation checks only what depends on
//! the settings or the data.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer};
use uuid::Uuid;

use engram_base::domain::{Cursor, ValidationError};

/// The longest page a listing serves.
pub const MAX_PAGE: i64 = 200;

/// Parses JSON into `T`; an error names its field path (`categories[2]`), or the field
/// itself when it is missing, or `body` when the text is not JSON.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ValidationError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut deserializer).map_err(named)
}

/// Reads `T` from JSON already parsed (a tool's arguments, a query string's pairs),
/// naming the field of an error as [`parse_json`] does.
pub fn parse_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ValidationError> {
    serde_path_to_error::deserialize(value).map_err(named)
}

/// A deserialization error as the field it is about.
fn named(err: serde_path_to_error::Error<serde_json::Error>) -> ValidationError {
    let path = err.path().to_string();
    let inner = err.into_inner();
    let message = inner.to_string();
    // serde reports a missing field at its parent; name the field itself.
    let quoted = |prefix: &str| message.strip_prefix(prefix).and_then(|rest| rest.split('`').next());
    let (missing, unknown) = (quoted("missing field `"), quoted("unknown field `"));
    let field = match (missing, path.as_str()) {
        _ if inner.is_syntax() || inner.is_eof() => "body".to_owned(),
        (Some(name), ".") => name.to_owned(),
        (Some(name), parent) => format!("{parent}.{name}"),
        (None, ".") => unknown.unwrap_or("body").to_owned(),
        (None, _) => path,
    };
    ValidationError::new(field, message)
}

/// An integer, as JSON writes it or as text (a query string's value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int(pub i64);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = Int;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Int, E> {
                Ok(Int(n))
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Int, E> {
                i64::try_from(n).map(Int).map_err(|_| E::custom("must be an integer"))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Int, E> {
                text.trim().parse().map(Int).map_err(|_| E::custom("must be an integer"))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl Int {
    /// The integer within `range`, or `default` when there is none.
    pub fn within(
        given: Option<Self>,
        field: &str,
        default: i64,
        range: std::ops::RangeInclusive<i64>,
    ) -> Result<i64, ValidationError> {
        match given {
            None => Ok(default),
            Some(Self(n)) if range.contains(&n) => Ok(n),
            Some(_) => Err(ValidationError::new(
                field,
                format!("must be an integer between {} and {}", range.start(), range.end()),
            )),
        }
    }
}

/// `true` or `false`, as JSON writes it or as text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = Flag;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true or false")
            }

            fn visit_bool<E: de::Error>(self, value: bool) -> Result<Flag, E> {
                Ok(Flag(value))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Flag, E> {
                match text {
                    "true" => Ok(Flag(true)),
                    "false" => Ok(Flag(false)),
                    _ => Err(E::custom("must be true or false")),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A memory's key: a name, not a sentence (`employer`, or a client's own id for a slot:
/// a LangGraph store's keys are often UUIDs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key(pub String);

impl Key {
    pub fn parse(field: &str, key: &str) -> Result<Self, ValidationError> {
        let ok = !key.is_empty()
            && key.len() <= 128
            && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
        if ok { Ok(Self(key.to_owned())) } else { Err(ValidationError::new(field, KEY_RULE)) }
    }
}

const KEY_RULE: &str = "must be 1–128 characters of A-Z, a-z, 0-9, _, -, . and :";

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let key = String::deserialize(deserializer)?;
        Self::parse("key", &key).map_err(|_| de::Error::custom(KEY_RULE))
    }
}

/// One page of a listing: at most `limit` items after `after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<C = Cursor> {
    pub limit: i64,
    pub after: Option<C>,
}

impl<C> Page<C> {
    /// A page of `limit` (1 to [`MAX_PAGE`], `default` when absent) after `after`.
    pub fn new(limit: Option<Int>, after: Option<C>, default: i64) -> Result<Self, ValidationError> {
        Ok(Self { limit: Int::within(limit, "limit", default, 1..=MAX_PAGE)?, after })
    }

    /// The cursor of the page after `items`, or `None` when they end the listing.
    pub fn next<T>(&self, items: &[T], id: impl Fn(&T) -> String) -> Option<String> {
        (items.len() as i64 == self.limit).then(|| items.last().map(id)).flatten()
    }
}

impl Page<Cursor> {
    /// The id the page starts after.
    pub fn after_id(&self) -> Option<Uuid> {
        self.after.map(|c| c.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Listing {
        limit: Option<Int>,
        cursor: Option<Cursor>,
        sources: Option<Flag>,
    }

    #[test]
    fn a_query_strings_text_and_json_read_alike() {
        for value in [json!({"limit": "20", "sources": "true"}), json!({"limit": 20, "sources": true})] {
            let listing: Listing = parse_value(value).unwrap();
            assert_eq!((listing.limit, listing.sources), (Some(Int(20)), Some(Flag(true))));
        }
    }

    #[test]
    fn each_mistake_names_its_field() {
        let cases = [
            (json!({"limit": "many"}), "limit"),
            (json!({"cursor": "page-2"}), "cursor"),
            (json!({"sources": "yes"}), "sources"),
            (json!({"sort": "newest"}), "sort"),
        ];
        for (value, field) in cases {
            let err = parse_value::<Listing>(value.clone()).unwrap_err();
            assert_eq!(err.field, field, "{value}: {err}");
        }
        let listing: Listing = parse_value(json!({"cursor": "0195f3c2-8a7e-7c3e-9a1b-2f4d5e6a7b8c"})).unwrap();
        assert!(listing.cursor.is_some());
        let page = Page::<Cursor>::new(Some(Int(0)), None, 50).unwrap_err();
        assert_eq!((page.field.as_str(), page.message.as_str()), ("limit", "must be an integer between 1 and 200"));
        assert_eq!(engram_base::domain::MemoryId::parse("42").unwrap_err().field, "memory_id");
    }

    #[test]
    fn a_full_page_points_to_the_next() {
        let page = Page::<Cursor>::new(Some(Int(2)), None, 50).unwrap();
        assert_eq!(page.next(&[1, 2], |n| n.to_string()), Some("2".to_owned()));
        assert_eq!(page.next(&[1], |n| n.to_string()), None);
        assert_eq!(Page::<Cursor>::new(None, None, 50).unwrap().limit, 50);
    }
}
