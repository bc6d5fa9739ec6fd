//! A conversation event as a client sends it, and the validated [`NewEvent`].

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{ClientEventId, SessionId, UserId, ValidationError};
use crate::configuration::IngestSettings;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize, sqlx::Type, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[sqlx(type_name = "text", rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    Tool,
    System,
}

impl Role {
    pub fn parse(value: &str) -> Result<Self, ValidationError> {
        match value {
            "user" => Ok(Self::User),
            "assistant" => Ok(Self::Assistant),
            "tool" => Ok(Self::Tool),
            "system" => Ok(Self::System),
            _ => Err(ValidationError::new("role", "must be one of user, assistant, tool, system")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
            Self::System => "system",
        }
    }
}

/// How far ahead of the server's clock a client's `created_at` may be: clocks drift,
/// but an event from next year would keep its session open for a year.
const MAX_AHEAD: chrono::TimeDelta = chrono::TimeDelta::days(1);

/// The wire shape of one event; every field is checked by [`NewEvent::parse`].
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEvent {
    pub id: Option<String>,
    pub user_id: Option<String>,
    pub session_id: Option<String>,
    pub role: Option<String>,
    pub content: Option<String>,
    /// RFC 3339; the server's time when absent.
    pub created_at: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

/// An event that passed validation, ready to store.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub client_id: Option<ClientEventId>,
    pub user_id: UserId,
    /// `None`: engram assigns the user's open session.
    pub session_id: Option<SessionId>,
    pub role: Role,
    pub content: String,
    /// Client time; the server's time when the client sent none.
    pub created_at: DateTime<Utc>,
    pub metadata: Map<String, Value>,
}

impl NewEvent {
    pub fn parse(raw: RawEvent, limits: &IngestSettings, now: DateTime<Utc>) -> Result<Self, ValidationError> {
        let required =
            |value: Option<String>, field: &str| value.ok_or_else(|| ValidationError::new(field, "is required"));
        let content = required(raw.content, "content")?;
        if content.trim().is_empty() {
            return Err(ValidationError::new("content", "must not be empty"));
        }
        if content.len() > limits.max_content_bytes {
            return Err(ValidationError::new("content", format!("must be at most {} bytes", limits.max_content_bytes)));
        }
        if content.contains('\0') {
            return Err(ValidationError::new("content", "must not contain NUL characters"));
        }
        let created_at = match raw.created_at {
            None => now,
            Some(text) => DateTime::parse_from_rfc3339(&text)
                .map_err(|_| {
                    ValidationError::new("created_at", "must be an RFC 3339 timestamp, e.g. 2026-01-31T09:30:00Z")
                })?
                .with_timezone(&Utc),
        };
        if created_at < DateTime::UNIX_EPOCH || created_at > now + MAX_AHEAD {
            return Err(ValidationError::new(
                "created_at",
                "must lie between 1970-01-01T00:00:00Z and one day after the server's time",
            ));
        }
        Ok(Self {
            client_id: raw.id.map(ClientEventId::parse).transpose()?,
            user_id: UserId::parse(required(raw.user_id, "user_id")?)?,
            session_id: raw.session_id.map(SessionId::parse).transpose()?,
            role: Role::parse(&required(raw.role, "role")?)?,
            content,
            created_at,
            metadata: parse_metadata(raw.metadata, limits.max_metadata_bytes)?,
        })
    }
}

fn parse_metadata(value: Option<Value>, max_bytes: usize) -> Result<Map<String, Value>, ValidationError> {
    let map = match value {
        None | Some(Value::Null) => return Ok(Map::new()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(ValidationError::new("metadata", "must be a JSON object")),
    };
    let value = Value::Object(map);
    if value.to_string().len() > max_bytes {
        return Err(ValidationError::new("metadata", format!("must be at most {max_bytes} bytes as JSON")));
    }
    if contains_nul(&value) {
        return Err(ValidationError::new("metadata", "must not contain NUL characters"));
    }
    let Value::Object(map) = value else { unreachable!("checked above") };
    Ok(map)
}

/// PostgreSQL's jsonb cannot store `\u0000`, so it is a client error, caught here.
fn contains_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(contains_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || contains_nul(v)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<NewEvent, ValidationError> {
        let raw: RawEvent = serde_json::from_value(value).unwrap();
        NewEvent::parse(raw, &IngestSettings::default(), Utc::now())
    }

    #[test]
    fn a_minimal_event_parses() {
        let event = parse(json!({"user_id": "u1", "role": "user", "content": "I use Postgres"})).unwrap();
        assert_eq!(event.role, Role::User);
        assert!(event.session_id.is_none() && event.client_id.is_none());
    }

    #[test]
    fn each_bad_field_is_named() {
        let base = || json!({"user_id": "u1", "role": "user", "content": "hi"});
        let cases = [
            ("user_id", json!(null)),
            ("role", json!("robot")),
            ("content", json!("   ")),
            ("content", json!("a\u{0}b")),
            ("created_at", json!("yesterday")),
            ("created_at", json!("9999-01-01T00:00:00Z")),
            ("created_at", json!("0000-01-01T00:00:00Z")),
            ("created_at", json!("1969-12-31T23:59:59Z")),
            ("metadata", json!([1, 2])),
            ("metadata", json!({"k": "a\u{0}"})),
            ("session_id", json!("has space")),
            ("id", json!("")),
        ];
        for (field, value) in cases {
            let mut event = base();
            event[field] = value;
            if event[field].is_null() {
                event.as_object_mut().unwrap().remove(field);
            }
            assert_eq!(parse(event).unwrap_err().field, field);
        }
    }

    #[test]
    fn content_over_the_limit_is_rejected() {
        let big = "x".repeat(IngestSettings::default().max_content_bytes + 1);
        let err = parse(json!({"user_id": "u", "role": "user", "content": big})).unwrap_err();
        assert_eq!(err.field, "content");
    }
}
