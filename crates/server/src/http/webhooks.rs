//! `/admin/v1/webhooks…`: a tenant's subscriptions and their recent deliveries. Each
//! handler calls one operation of [`engram_core::service::webhooks`].

use actix_web::{HttpResponse, delete, get, post, web};
use utoipa_actix_web::service_config::ServiceConfig;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::{JsonBody, Query};
use super::openapi::{ErrorBody, KeyRefused, Refused};
use super::state::AppState;
use engram_base::domain::ValidationError;
use engram_core::service::webhooks::{self, DeliveryList, DeliveryQuery, NewWebhook, WebhookDeleted, WebhookList};
use engram_core::webhooks::CreatedWebhook;

fn webhook_id(path: web::Path<String>) -> Result<uuid::Uuid, ApiError> {
    Ok(path.parse().map_err(|_| ValidationError::new("webhook_id", "is not a UUID"))?)
}

#[utoipa::path(
    tag = "webhooks",
    request_body = NewWebhook,
    responses((status = 201, description = "Subscribed (scope admin); the answer's `secret` signs every delivery and is not shown again", body = CreatedWebhook),
              Refused),
    security(("api_key" = []))
)]
#[post("/admin/v1/webhooks")]
async fn create_webhook(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    body: JsonBody<NewWebhook>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Created().json(webhooks::create(&state, &principal, body.0).await?))
}

#[utoipa::path(
    tag = "webhooks",
    responses((status = 200, description = "The tenant's subscriptions, oldest first, with what waits for each (scope admin)", body = WebhookList),
              KeyRefused),
    security(("api_key" = []))
)]
#[get("/admin/v1/webhooks")]
async fn list_webhooks(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(webhooks::list(&state, &principal).await?))
}

#[utoipa::path(
    tag = "webhooks",
    params(("webhook_id" = Uuid, Path)),
    responses((status = 200, description = "Deleted, with the deliveries still waiting for it (scope admin)", body = WebhookDeleted),
              Refused, (status = 404, description = "No such webhook in this tenant", body = ErrorBody)),
    security(("api_key" = []))
)]
#[delete("/admin/v1/webhooks/{webhook_id}")]
async fn delete_webhook(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(webhooks::delete(&state, &principal, webhook_id(path)?).await?))
}

#[utoipa::path(
    tag = "webhooks",
    params(("webhook_id" = Uuid, Path), ("limit" = Option<i64>, Query, description = "1–200, default 50")),
    responses((status = 200, description = "The latest attempts, newest first (scope admin)", body = DeliveryList),
              Refused, (status = 404, description = "No such webhook in this tenant", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/admin/v1/webhooks/{webhook_id}/deliveries")]
async fn list_deliveries(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<String>,
    query: Query<DeliveryQuery>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(webhooks::deliveries(&state, &principal, webhook_id(path)?, query.0).await?))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(create_webhook).service(list_webhooks).service(delete_webhook).service(list_deliveries);
}
