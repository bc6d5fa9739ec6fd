//! Unauthenticated operational routes: liveness, readiness and metrics.

use std::time::Duration;

use actix_web::{HttpResponse, get, web};
use utoipa_actix_web::service_config::ServiceConfig;
use serde_json::json;

use super::openapi::{ErrorBody, Status};
use super::state::AppState;

#[utoipa::path(tag = "operations", responses((status = 200, description = "The process runs", body = Status)))]
#[get("/healthz")]
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// Ready when the database answers within two seconds and the configured model
/// endpoints answer with the configured embedding dimension.
#[utoipa::path(tag = "operations", responses(
    (status = 200, description = "Database and model endpoints answer", body = Status),
    (status = 503, description = "Not ready; the message names why", body = ErrorBody)))]
#[get("/readyz")]
async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let ping = sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&state.db.pool);
    let mut problems = match tokio::time::timeout(Duration::from_secs(2), ping).await {
        Ok(Ok(_)) => Vec::new(),
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "readiness: database error");
            vec!["database: not reachable".to_owned()]
        }
        Err(_) => vec!["database: no answer within 2 s".to_owned()],
    };
    problems.extend(state.model_problems().await);
    if problems.is_empty() {
        return HttpResponse::Ok().json(json!({"status": "ready"}));
    }
    tracing::warn!(?problems, "not ready");
    HttpResponse::ServiceUnavailable().json(json!({"error": {"code": "not_ready", "message": problems.join("; ")}}))
}

#[utoipa::path(tag = "operations", responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
#[get("/metrics")]
async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(state.metrics.render())
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(healthz).service(readyz).service(metrics);
}
