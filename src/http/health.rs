//! Unauthenticated operational routes: liveness, readiness and metrics.

use std::time::Duration;

use actix_web::{HttpResponse, get, web};
use serde_json::json;

use super::state::AppState;

#[get("/healthz")]
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// Ready when the database answers within two seconds.
#[get("/readyz")]
async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let ping = sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&state.db.pool);
    match tokio::time::timeout(Duration::from_secs(2), ping).await {
        Ok(Ok(_)) => HttpResponse::Ok().json(json!({"status": "ready", "checks": {"database": "ok"}})),
        Ok(Err(err)) => not_ready(&format!("database error: {err}")),
        Err(_) => not_ready("database did not answer within 2 s"),
    }
}

fn not_ready(reason: &str) -> HttpResponse {
    tracing::warn!(reason, "not ready");
    HttpResponse::ServiceUnavailable()
        .json(json!({"error": {"code": "not_ready", "message": "the database is not reachable"}}))
}

#[get("/metrics")]
async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(state.metrics.render())
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(healthz).service(readyz).service(metrics);
}
