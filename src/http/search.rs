//! `POST /v1/search` and `GET /v1/users/{user_id}/context`: the lookups agents make
//! on every turn. Both count `engram_lookups_total` and time themselves; MCP's
//! tools call the same functions.

use std::time::Instant;

use actix_web::{HttpRequest, HttpResponse, get, post, web};
use utoipa_actix_web::service_config::ServiceConfig;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::{JsonBody, Params};
use super::openapi::ErrorBody;
use super::state::AppState;
use crate::auth::Principal;
use crate::context::{self, ContextRequest, ContextResponse};
use crate::domain::{SessionId, UserId, ValidationError};
use crate::search::{SearchQuery, SearchRequest, SearchResponse};

#[utoipa::path(
    tag = "lookups",
    request_body = SearchRequest,
    responses((status = 200, description = "Results at or above `min_score`, best first", body = SearchResponse), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/v1/search")]
#[tracing::instrument(skip_all, fields(tenant = %principal.tenant))]
async fn post_search(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    body: JsonBody<SearchRequest>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(search(&state, &principal, body.0).await?))
}

/// A search as `POST /v1/search` serves it, counted and timed.
pub async fn search(
    state: &AppState,
    principal: &Principal,
    request: SearchRequest,
) -> Result<SearchResponse, ApiError> {
    let started = Instant::now();
    let query = SearchQuery::parse(request, &state.settings.search, state.embedder.dims())?;
    let results = state.lookup().search(&principal.tenant, &query).await?;
    if query.relations {
        state.metrics.graph_walks.inc();
        let reached = results.iter().filter(|r| r.kind == crate::domain::ResultKind::Relation).count();
        state.metrics.graph_reached.observe(reached as f64);
    }
    let hit = !results.is_empty();
    let elapsed = started.elapsed().as_secs_f64();
    state.metrics.lookup("search", hit, elapsed);
    Ok(SearchResponse { results, hit, took_ms: elapsed * 1000.0 })
}

#[utoipa::path(
    tag = "lookups",
    params(("user_id" = String, Path), ("query" = Option<String>, Query, description = "What the agent is about to answer"),
           ("max_tokens" = Option<usize>, Query, description = "Token budget of the block (default 512)"),
           ("session_id" = Option<String>, Query, description = "The current session: its latest turns open the block (working memory)")),
    responses((status = 200, description = "A prompt-ready block within the budget", body = ContextResponse), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/context")]
#[tracing::instrument(skip_all, fields(tenant = %principal.tenant))]
async fn get_context(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let params = Params::parse(&req, CONTEXT_PARAMS)?;
    Ok(HttpResponse::Ok().json(context(&state, &principal, path.into_inner(), &params).await?))
}

/// The parameters of a context: `query`, `max_tokens`, `session_id`.
pub const CONTEXT_PARAMS: &[&str] = &["query", "max_tokens", "session_id"];

/// The context block as `GET /v1/users/{user_id}/context` serves it, counted and timed.
pub async fn context(
    state: &AppState,
    principal: &Principal,
    user: String,
    params: &Params,
) -> Result<ContextResponse, ApiError> {
    let started = Instant::now();
    let user = UserId::parse(user)?;
    let limits = &state.settings.search;
    let max_tokens =
        params.int("max_tokens", limits.context_default_tokens as i64, 1..=limits.context_max_tokens as i64)? as usize;
    let session = params
        .text("session_id")
        .map(|s| SessionId::parse(s.to_owned()).map_err(|e| ValidationError::new("session_id", e.message)))
        .transpose()?;
    let request = ContextRequest { user: &user, query: params.text("query"), session: session.as_ref(), max_tokens };
    let (context, hit) = context::build(&state.db, &state.lookup(), &principal.tenant, &request).await?;
    if request.query.is_some() {
        state.metrics.graph_walks.inc();
        let reached = context.items.iter().filter(|i| i.section == "relations").count();
        state.metrics.graph_reached.observe(reached as f64);
    }
    let elapsed = started.elapsed().as_secs_f64();
    state.metrics.lookup("context", hit, elapsed);
    Ok(ContextResponse { context, took_ms: elapsed * 1000.0 })
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(post_search).service(get_context);
}
