//! The HTTP layer: handlers extract and check input, call transport-neutral
//! functions, and map their errors through [`error::ApiError`]. Each resource
//! file ends in a `configure` function that registers its routes.

pub mod auth;
pub mod console;
pub mod error;
pub mod events;
pub mod extract;
pub mod feedback;
pub mod graph;
pub mod health;
mod jobs;
pub mod openapi;
pub mod search;
pub use engram_core::service::state;
pub mod users;
pub mod webhooks;

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web;
use engram_base::telemetry::traces;
use tracing::Instrument;

use error::ApiError;
use state::AppState;

/// Every route engram serves, each also described in the OpenAPI document.
pub fn configure(cfg: &mut utoipa_actix_web::service_config::ServiceConfig) {
    health::configure(cfg);
    auth::configure(cfg);
    events::configure(cfg);
    search::configure(cfg);
    feedback::configure(cfg);
    users::configure(cfg);
    graph::configure(cfg);
    jobs::configure(cfg);
    webhooks::configure(cfg);
}

/// A worker replica serves only the operational routes: health, readiness, metrics.
pub fn configure_operations(cfg: &mut utoipa_actix_web::service_config::ServiceConfig) {
    health::configure(cfg);
}

/// Unknown paths get the same JSON error shape as everything else.
pub async fn not_found() -> Result<actix_web::HttpResponse, ApiError> {
    Err(ApiError::not_found("no such route"))
}

/// Counts and times every request, labelled by route pattern (never the raw path),
/// and runs it in a span carrying a request id, which the response returns as
/// `x-request-id` so a client's report can be found in the logs; with traces on, the
/// span continues the caller's W3C trace.
pub async fn record_metrics(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody + 'static>, actix_web::Error> {
    let started = Instant::now();
    let method = method_label(req.method());
    let route = req.match_pattern().unwrap_or_else(|| "unmatched".to_owned());
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let request_id = uuid::Uuid::now_v7().simple().to_string();
    let span = tracing::info_span!(
        "request",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        request_id = %request_id,
        method = %method,
        route = %route,
        http.response.status_code = tracing::field::Empty,
    );
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    traces::continue_trace(&span, header("traceparent").as_deref(), header("tracestate").as_deref());
    let mut response = next.call(req).instrument(span.clone()).await?;
    span.record("http.response.status_code", response.status().as_u16());
    if let Ok(value) = actix_web::http::header::HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(actix_web::http::header::HeaderName::from_static("x-request-id"), value);
    }
    span.in_scope(|| {
        tracing::debug!(
            status = response.status().as_u16(),
            seconds = started.elapsed().as_secs_f64(),
            "request served"
        )
    });
    if let Some(state) = state {
        let status = response.status().as_u16().to_string();
        state.metrics.http_requests.with_label_values(&[method, &route, &status]).inc();
        state.metrics.http_duration.with_label_values(&[method, &route]).observe(started.elapsed().as_secs_f64());
    }
    Ok(response)
}

/// The `method` label: one of the methods engram serves, or `other`, so that invented
/// methods cannot grow the metrics without bound.
fn method_label(method: &actix_web::http::Method) -> &'static str {
    use actix_web::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// CORS for browser clients of `origins` (`server.cors_origins`): the methods engram
/// serves, `Authorization` and `Content-Type` allowed, the request id and `Retry-After`
/// readable by the page, preflights cached for an hour.
pub fn cors(origins: &[String]) -> actix_cors::Cors {
    use actix_web::http::{Method, header};
    let mut cors = actix_cors::Cors::default()
        .allowed_methods([Method::GET, Method::POST, Method::PATCH, Method::DELETE])
        .allowed_headers([header::AUTHORIZATION, header::CONTENT_TYPE, header::ACCEPT])
        .expose_headers([header::HeaderName::from_static("x-request-id"), header::RETRY_AFTER])
        .max_age(3600);
    for origin in origins {
        cors = cors.allowed_origin(origin);
    }
    cors
}
