//! `POST /v1/search` and `GET /v1/users/{user_id}/context`: the lookups agents make
//! on every turn. Both count `engram_lookups_total` and time themselves.

use std::time::Instant;

use actix_web::{HttpRequest, HttpResponse, get, post, web};
use utoipa_actix_web::service_config::ServiceConfig;
use uuid::Uuid;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::{JsonBody, Params};
use super::openapi::{ContextBody, ErrorBody};
use super::state::AppState;
use crate::context::{self, Candidate};
use crate::db::begin_tenant_tx;
use crate::domain::{TenantId, UserId};
use crate::search::{self, SearchQuery, SearchRequest, SearchResponse, SearchResult};

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
    let started = Instant::now();
    let query = SearchQuery::parse(body.0, &state.settings.search, state.embedder.dims())?;
    let results = lookup(&state, &principal.tenant, &query).await?;
    let hit = !results.is_empty();
    let elapsed = started.elapsed().as_secs_f64();
    state.metrics.lookup("search", hit, elapsed);
    Ok(HttpResponse::Ok().json(SearchResponse { results, hit, took_ms: elapsed * 1000.0 }))
}

/// Runs a search and records the memories it served.
async fn lookup(state: &AppState, tenant: &TenantId, query: &SearchQuery) -> Result<Vec<SearchResult>, ApiError> {
    let now = state.clock.now();
    let results =
        search::run(&state.lookups, &state.embedder, tenant, query, &state.settings.search, &state.decay, now).await?;
    let served = results.iter().filter(|r| r.kind.memory().is_some()).filter_map(|r| r.id.parse::<Uuid>().ok());
    state.access.record(tenant, &query.user, served, now);
    Ok(results)
}

#[utoipa::path(
    tag = "lookups",
    params(("user_id" = String, Path), ("query" = Option<String>, Query, description = "What the agent is about to answer"),
           ("max_tokens" = Option<usize>, Query, description = "Token budget of the block (default 512)")),
    responses((status = 200, description = "A prompt-ready block within the budget", body = ContextBody), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody)),
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
    let started = Instant::now();
    let user = UserId::parse(path.into_inner())?;
    let params = Params::parse(&req, &["query", "max_tokens"])?;
    let limits = &state.settings.search;
    let max_tokens =
        params.int("max_tokens", limits.context_default_tokens as i64, 1..=limits.context_max_tokens as i64)? as usize;
    let tenant = &principal.tenant;

    let mut tx = begin_tenant_tx(&state.db.read_pool, tenant).await?;
    let profile = context::profile(&mut tx, tenant, &user).await?;
    let (sessions, periods) = context::recent_summaries(&mut tx, tenant, &user).await?;
    tx.commit().await?;
    let relevant = match params.text("query") {
        None => Vec::new(),
        Some(text) => {
            let request = SearchRequest {
                user_id: user.to_string(),
                query: text.to_owned(),
                limit: Some(10),
                min_score: None,
                categories: None,
                kinds: None,
                as_of: None,
                embedding: None,
            };
            let query = SearchQuery::parse(request, limits, state.embedder.dims())?;
            lookup(&state, tenant, &query).await?
        }
    };
    let hit = !relevant.is_empty();
    let relevant = relevant.into_iter().map(|r| Candidate { id: r.id, kind: r.kind, content: r.content }).collect();
    let context = context::assemble(
        vec![
            ("profile", "## About the user", profile),
            ("relevant", "## Relevant memories", relevant),
            ("sessions", "## Recent conversations", sessions),
            ("periods", "## Earlier periods", periods),
        ],
        max_tokens,
    );
    let elapsed = started.elapsed().as_secs_f64();
    state.metrics.lookup("context", hit, elapsed);
    let mut body = serde_json::to_value(&context).map_err(|e| ApiError::Internal(e.into()))?;
    body["took_ms"] = serde_json::json!(elapsed * 1000.0);
    Ok(HttpResponse::Ok().json(body))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(post_search).service(get_context);
}
