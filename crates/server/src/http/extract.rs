//! Request extractors that fail with engram's error shape: a body read up to the
//! configured limit (413 past it), a JSON body whose errors name the field, and a
//! query string read into an operation's typed input.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use super::state::AppState;
use engram_base::domain::ValidationError;
pub use engram_core::service::input::{parse_json, parse_value};

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

/// The query string as `T`, an operation's input: an empty value is no value, and an
/// unknown name or a bad value is refused naming it, so typos do not pass silently.
pub struct Query<T>(pub T);

impl<T: DeserializeOwned> FromRequest for Query<T> {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(query(req.query_string()).map(Query))
    }
}

fn query<T: DeserializeOwned>(text: &str) -> Result<T, ApiError> {
    let pairs = web::Query::<Vec<(String, String)>>::from_query(text)
        .map_err(|_| ValidationError::new("query string", "is not valid"))?
        .into_inner();
    let named: serde_json::Map<String, serde_json::Value> =
        pairs.into_iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| (k, v.into())).collect();
    Ok(parse_value(named.into())?)
}
