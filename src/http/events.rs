//! `POST /v1/events`: append one event or a batch.

use actix_web::{HttpResponse, post, web};
use utoipa_actix_web::service_config::ServiceConfig;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::Body;
use super::openapi::{ErrorBody, EventsBody};
use super::state::AppState;
use crate::auth::Principal;
use crate::domain::NewEvent;
use crate::ingest::{self, Ingested};

#[utoipa::path(
    tag = "events",
    request_body(content = EventsBody, description = "One event, or up to `ingest.max_batch_events` in `events`"),
    responses((status = 202, description = "Stored (or already stored)", body = Ingested), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody),
              (status = 413, description = "Body over `server.max_body_bytes`", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/v1/events")]
#[tracing::instrument(skip_all, fields(tenant = %principal.tenant))]
async fn post_events(
    state: web::Data<AppState>,
    principal: Authorized<need::Ingest>,
    body: Body,
) -> Result<HttpResponse, ApiError> {
    let events = ingest::parse_body(&body.0, &state.settings.ingest, state.clock.now())?;
    Ok(HttpResponse::Accepted().json(append(&state, &principal, events).await?))
}

/// Stores validated events as `POST /v1/events` does: handed to the embedder,
/// corrections counted.
pub async fn append(state: &AppState, principal: &Principal, events: Vec<NewEvent>) -> Result<Ingested, ApiError> {
    let done =
        ingest::ingest(&state.db, &principal.tenant, events, &state.settings.ingest, Some(&state.detector)).await?;
    state.vectors.submit(&principal.tenant, &done.fresh);
    if done.corrections > 0 {
        state.metrics.corrections.with_label_values(&["detected"]).inc_by(done.corrections as u64);
    }
    Ok(done)
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(post_events);
}
