//! Unauthenticated operational routes: liveness, readiness and metrics.

use actix_web::{HttpResponse, get, web};
use utoipa_actix_web::service_config::ServiceConfig;

use super::error::ApiError;
use super::openapi::{ErrorBody, ServiceStatus};
use super::state::AppState;

#[utoipa::path(tag = "operations", responses((status = 200, description = "The process runs", body = ServiceStatus)))]
#[get("/healthz")]
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(ServiceStatus { status: "ok" })
}

/// Ready when the database answers within two seconds and the configured model
/// endpoints answer with the configured embedding dimension.
#[utoipa::path(tag = "operations", responses(
    (status = 200, description = "Database and model endpoints answer", body = ServiceStatus),
    (status = 503, description = "Not ready; the message names why", body = ErrorBody)))]
#[get("/readyz")]
async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let problems = state.readiness_problems().await;
    if problems.is_empty() {
        return Ok(HttpResponse::Ok().json(ServiceStatus { status: "ready" }));
    }
    Err(ApiError::NotReady(problems.join("; ")))
}

#[utoipa::path(tag = "operations", responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
#[get("/metrics")]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(state.metrics.render())
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(healthz).service(readyz);
}

/// `/metrics` on the API listener (unless `server.metrics_bind` gives it its own).
pub fn configure_metrics(cfg: &mut ServiceConfig) {
    cfg.service(metrics);
}
