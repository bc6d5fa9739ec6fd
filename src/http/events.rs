//! `POST /v1/events`: append one event or a batch.

use actix_web::{HttpResponse, post, web};
use chrono::Utc;
use futures_util::StreamExt;

use super::auth::require;
use super::error::ApiError;
use super::state::AppState;
use crate::auth::{Principal, Scope};
use crate::ingest;

#[post("/v1/events")]
#[tracing::instrument(skip_all, fields(tenant = %principal.tenant))]
async fn post_events(
    state: web::Data<AppState>,
    principal: Principal,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    require(&principal, Scope::Ingest)?;
    let body = read_body(payload, state.settings.server.max_body_bytes).await?;
    let events = ingest::parse_body(&body, &state.settings.ingest, Utc::now())?;
    let done = ingest::ingest(&state.db, &principal.tenant, events, &state.settings.ingest).await?;
    Ok(HttpResponse::Accepted().json(done))
}

/// Reads the body up to `limit` bytes; more is a 413, whatever Content-Length claimed.
pub async fn read_body(mut payload: web::Payload, limit: usize) -> Result<web::BytesMut, ApiError> {
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| ApiError::Invalid(crate::domain::ValidationError::new("body", "could not be read")))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(post_events);
}
