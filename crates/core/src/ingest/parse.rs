//! Events as a client sends them, checked whole before anything is stored: one event
//! or a batch, each error naming its field (`events[3].created_at`).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde_json::Value;

use engram_base::configuration::IngestSettings;
use engram_base::domain::event::RawEvent;
use engram_base::domain::{NewEvent, ValidationError};

/// Parses a request body: one event object, or `{"events": [...]}`.
pub fn parse_body(body: &[u8], limits: &IngestSettings, now: DateTime<Utc>) -> Result<Vec<NewEvent>, ValidationError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|err| ValidationError::new("body", format!("is not valid JSON ({err})")))?;
    let Value::Object(mut object) = value else {
        return Err(ValidationError::new("body", "must be an event object or {\"events\": [...]}"));
    };
    let Some(events) = object.remove("events") else {
        return Ok(vec![parse_event(Value::Object(object), limits, now)?]);
    };
    if let Some(extra) = object.keys().next() {
        return Err(ValidationError::new(extra.as_str(), "is not allowed beside `events`"));
    }
    let Value::Array(items) = events else {
        return Err(ValidationError::new("events", "must be an array of events"));
    };
    check_count(items.len(), limits)?;
    let events = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| parse_event(item, limits, now).map_err(|e| e.within(&format!("events[{i}]"))))
        .collect::<Result<Vec<_>, _>>()?;
    reject_repeated_client_ids(&events)?;
    Ok(events)
}

/// A batch given as typed events (an MCP tool's turns), checked as [`parse_body`]
/// checks a batch: each event's errors named `events[i].…`.
pub fn parse_batch(
    raw: Vec<RawEvent>,
    limits: &IngestSettings,
    now: DateTime<Utc>,
) -> Result<Vec<NewEvent>, ValidationError> {
    check_count(raw.len(), limits)?;
    let events = raw
        .into_iter()
        .enumerate()
        .map(|(i, raw)| NewEvent::parse(raw, limits, now).map_err(|e| e.within(&format!("events[{i}]"))))
        .collect::<Result<Vec<_>, _>>()?;
    reject_repeated_client_ids(&events)?;
    Ok(events)
}

/// A batch holds one event at least and `ingest.max_batch_events` at most.
fn check_count(n: usize, limits: &IngestSettings) -> Result<(), ValidationError> {
    if n == 0 {
        return Err(ValidationError::new("events", "must not be empty"));
    }
    if n > limits.max_batch_events {
        return Err(ValidationError::new(
            "events",
            format!("holds {n} events; at most {} are allowed per request", limits.max_batch_events),
        ));
    }
    Ok(())
}

/// One event object, with JSON type errors named by their field.
pub fn parse_event(value: Value, limits: &IngestSettings, now: DateTime<Utc>) -> Result<NewEvent, ValidationError> {
    if !value.is_object() {
        return Err(ValidationError::new("event", "must be a JSON object"));
    }
    let raw: RawEvent = serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let field = if path == "." { "event".to_owned() } else { path };
        ValidationError::new(field, err.into_inner().to_string())
    })?;
    NewEvent::parse(raw, limits, now)
}

pub(super) fn reject_repeated_client_ids(events: &[NewEvent]) -> Result<(), ValidationError> {
    let mut seen = HashSet::new();
    for (i, event) in events.iter().enumerate() {
        if let Some(id) = &event.client_id
            && !seen.insert(id)
        {
            return Err(ValidationError::new(format!("events[{i}].id"), "appears more than once in the batch"));
        }
    }
    Ok(())
}
