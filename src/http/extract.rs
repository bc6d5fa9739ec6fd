//! Request extractors that fail with engram's error shape: a body read up to the
//! configured limit (413 past it), a JSON body whose errors name the field, and
//! query parameters checked by name.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use super::state::AppState;
use crate::domain::ValidationError;

/// The raw request body of a JSON route, at most `server.max_body_bytes` (413 past
/// it). A body that is not empty must be declared `application/json` (or a `+json`
/// type): anything else is a 415, so a form or a plain-text post is never guessed at.
pub struct Body(pub web::BytesMut);

/// Whether the request declares a JSON body.
fn declares_json(req: &HttpRequest) -> bool {
    let Some(value) = req.headers().get("content-type").and_then(|v| v.to_str().ok()) else { return false };
    let essence = value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

impl FromRequest for Body {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let limit = req.app_data::<web::Data<AppState>>().map_or(1 << 20, |s| s.settings.server.max_body_bytes);
        let declared =
            req.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
        let json = declares_json(req);
        let mut payload = payload.take();
        Box::pin(async move {
            if declared.is_some_and(|n| n > limit) {
                return Err(ApiError::PayloadTooLarge(limit));
            }
            if !json && declared.is_some_and(|n| n > 0) {
                return Err(ApiError::UnsupportedMediaType);
            }
            let mut body = web::BytesMut::new();
            while let Some(chunk) = payload.next().await {
                let chunk = chunk.map_err(|_| ValidationError::new("body", "could not be read"))?;
                if body.len() + chunk.len() > limit {
                    return Err(ApiError::PayloadTooLarge(limit));
                }
                body.extend_from_slice(&chunk);
            }
            if !json && !body.is_empty() {
                return Err(ApiError::UnsupportedMediaType);
            }
            Ok(Body(body))
        })
    }
}

/// A JSON body; a type error names its field path (`categories[2]`).
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest for JsonBody<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = Body::from_request(req, payload);
        Box::pin(async move {
            let Body(bytes) = body.await?;
            Ok(JsonBody(parse_json(&bytes)?))
        })
    }
}

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

/// Query parameters by name; unknown names are rejected so typos do not pass silently.
pub struct Params(HashMap<String, String>);

impl Params {
    pub fn parse(req: &HttpRequest, allowed: &[&str]) -> Result<Self, ApiError> {
        let map = web::Query::<HashMap<String, String>>::from_query(req.query_string())
            .map_err(|_| ValidationError::new("query string", "is not valid"))?
            .into_inner();
        if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(ValidationError::new(
                unknown.as_str(),
                format!("is not a parameter here (expected {})", allowed.join(", ")),
            )
            .into());
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
