//! Input as operations take it: JSON parsed with the failing field named, and named text
//! parameters (a query string, an MCP tool's arguments) read as text or bounded integers.

use std::collections::HashMap;

use serde::de::DeserializeOwned;

use engram_base::domain::ValidationError;

/// Parses JSON into `T`; an error names its field path (`categories[2]`), or the field
/// itself when it is missing, or `body` when the text is not JSON.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ValidationError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let message = inner.to_string();
        // serde reports a missing field at its parent; name the field itself.
        let named = |prefix: &str| message.strip_prefix(prefix).and_then(|rest| rest.split('`').next());
        let (missing, unknown) = (named("missing field `"), named("unknown field `"));
        let field = match (missing, path.as_str()) {
            _ if inner.is_syntax() || inner.is_eof() => "body".to_owned(),
            (Some(name), ".") => name.to_owned(),
            (Some(name), parent) => format!("{parent}.{name}"),
            (None, ".") => unknown.unwrap_or("body").to_owned(),
            (None, _) => path,
        };
        ValidationError::new(field, message)
    })
}

/// Named text parameters (a query string, or a tool's arguments), parsed on demand.
pub struct Params(HashMap<String, String>);

impl Params {
    /// Parameters by name, of which only `allowed` may appear.
    pub fn named(map: HashMap<String, String>, allowed: &[&str]) -> Result<Self, ValidationError> {
        if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(ValidationError::new(
                unknown.as_str(),
                format!("is not a parameter here (expected {})", allowed.join(", ")),
            ));
        }
        Ok(Self(map))
    }

    /// Parameters given by name rather than in a query string (an MCP tool's arguments).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, Option<String>)>) -> Self {
        Self(pairs.into_iter().filter_map(|(name, value)| Some((name.to_owned(), value?))).collect())
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// An integer within `range`, or `default` when absent.
    pub fn int(&self, name: &str, default: i64, range: std::ops::RangeInclusive<i64>) -> Result<i64, ValidationError> {
        match self.text(name) {
            None => Ok(default),
            Some(v) => v.parse::<i64>().ok().filter(|n| range.contains(n)).ok_or_else(|| {
                ValidationError::new(name, format!("must be an integer between {} and {}", range.start(), range.end()))
            }),
        }
    }
}
