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
use engram_base::domain::ValidationError;
pub use engram_core::service::input::{Params, parse_json};

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

/// The query string as [`Params`]; unknown names are rejected so typos do not pass silently.
pub fn query(req: &HttpRequest, allowed: &[&str]) -> Result<Params, ApiError> {
    let map = web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map_err(|_| ValidationError::new("query string", "is not valid"))?
        .into_inner();
    Ok(Params::named(map, allowed)?)
}
