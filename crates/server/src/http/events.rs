//! `POST /v1/events`: append one event or a batch.

use actix_web::{HttpResponse, post, web};
use utoipa_actix_web::service_config::ServiceConfig;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::Body;
use super::openapi::{ErrorBody, EventsBody, Refused};
use super::state::AppState;
use engram_core::ingest::{self, Ingested};
use engram_core::service::events;

#[utoipa::path(
    tag = "events",
    request_body(content = EventsBody, description = "One event, or up to `ingest.max_batch_events` in `events`"),
    responses((status = 202, description = "Stored (or already stored)", body = Ingested), Refused,
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
    Ok(HttpResponse::Accepted().json(events::append(&state, &principal, events).await?))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(post_events);
}
