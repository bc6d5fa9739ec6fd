//! `POST /v1/search` and `GET /v1/users/{user_id}/context`: the lookups agents make
//! on every turn. Both count `engram_lookups_total` and time themselves; MCP's
//! tools call the same operations in [`engram_core::service::lookups`].

use actix_web::{HttpResponse, get, post, web};
use utoipa_actix_web::service_config::ServiceConfig;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::{JsonBody, Query};
use super::openapi::Refused;
use super::state::AppState;
use engram_base::domain::UserId;
use engram_core::context::ContextResponse;
use engram_core::search::{SearchRequest, SearchResponse};
use engram_core::service::lookups::{self, ContextQuery};

#[utoipa::path(
    tag = "lookups",
    request_body = SearchRequest,
    responses((status = 200, description = "Results at or above `min_score`, best first", body = SearchResponse), Refused),
    security(("api_key" = []))
)]
#[post("/v1/search")]
#[tracing::instrument(skip_all, fields(tenant = %principal.tenant))]
async fn post_search(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    body: JsonBody<SearchRequest>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(lookups::search(&state, &principal, body.0).await?))
}

#[utoipa::path(
    tag = "lookups",
    params(("user_id" = String, Path), ("query" = Option<String>, Query, description = "What the agent is about to answer"),
           ("max_tokens" = Option<usize>, Query, description = "Token budget of the block (default 512)"),
           ("session_id" = Option<String>, Query, description = "The current session: its latest turns open the block (working memory)")),
    responses((status = 200, description = "A prompt-ready block within the budget", body = ContextResponse), Refused),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/context")]
#[tracing::instrument(skip_all, fields(tenant = %principal.tenant))]
async fn get_context(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    query: Query<ContextQuery>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(lookups::context(&state, &principal, &user, query.0).await?))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(post_search).service(get_context);
}
