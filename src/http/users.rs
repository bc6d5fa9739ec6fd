//! Per-user resources: memory listings and detail, sessions, period summaries,
//! export and deletion.

use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use utoipa_actix_web::service_config::ServiceConfig;
use uuid::Uuid;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::Params;
use super::openapi::{Deleted, DeletionList, ErrorBody, Export, MemoryDetail, MemoryPage, SessionList, SummaryList};
use super::state::AppState;
use crate::auth::Principal;
use crate::db::begin_tenant_tx;
use crate::domain::{UserId, ValidationError};
use crate::memories::{self, CATEGORIES, Kind, ListFilter, RestoreError, Status};
use crate::{sessions, users};

const MAX_PAGE: i64 = 200;

fn user_of(path: String) -> Result<UserId, ApiError> {
    Ok(UserId::parse(path)?)
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("category" = Option<String>, Query), ("status" = Option<String>, Query, description = "Default `active`"),
           ("kind" = Option<String>, Query), ("limit" = Option<i64>, Query, description = "1–200, default 50"),
           ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page")),
    responses((status = 200, description = "Newest first", body = MemoryPage), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/memories")]
async fn list_memories(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let params = Params::parse(&req, LIST_PARAMS)?;
    Ok(HttpResponse::Ok().json(page(&state, &principal, path.into_inner(), &params).await?))
}

/// The parameters of a memory listing.
pub const LIST_PARAMS: &[&str] = &["category", "status", "kind", "limit", "cursor"];

/// One page of a user's memories, newest first, as `GET /v1/users/{user_id}/memories` serves it.
pub async fn page(
    state: &AppState,
    principal: &Principal,
    user: String,
    params: &Params,
) -> Result<MemoryPage, ApiError> {
    let user = user_of(user)?;
    let checked = |name: &str, allowed: &[&str]| -> Result<Option<String>, ValidationError> {
        params.text(name).map(|v| memories::check_one_of(name, v, allowed).map(|()| v.to_owned())).transpose()
    };
    let filter = ListFilter {
        category: checked("category", CATEGORIES)?,
        status: params
            .text("status")
            .map(|v| memories::parse_one_of("status", v, &Status::ALL, Status::as_str))
            .transpose()?,
        kind: params.text("kind").map(|v| memories::parse_one_of("kind", v, &Kind::ALL, Kind::as_str)).transpose()?,
        after: params
            .text("cursor")
            .map(|c| c.parse::<Uuid>().map_err(|_| ValidationError::new("cursor", "is not a cursor this API returned")))
            .transpose()?,
        limit: params.int("limit", 50, 1..=MAX_PAGE)?,
    };
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let page = memories::list(&mut tx, &principal.tenant, &user, &filter).await?;
    tx.commit().await?;
    let next_cursor = (page.len() as i64 == filter.limit).then(|| page.last().map(|m| m.id.to_string())).flatten();
    Ok(MemoryPage { memories: page, next_cursor })
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("memory_id" = Uuid, Path)),
    responses((status = 200, description = "The memory and every change to it", body = MemoryDetail), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody),
              (status = 404, description = "No such memory for this user", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/memories/{memory_id}")]
async fn get_memory(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (user, id) = path.into_inner();
    Ok(HttpResponse::Ok().json(detail(&state, &principal, user, &id).await?))
}

/// A memory with every change to it, as `GET /v1/users/{user_id}/memories/{memory_id}` serves it.
pub async fn detail(state: &AppState, principal: &Principal, user: String, id: &str) -> Result<MemoryDetail, ApiError> {
    let user = user_of(user)?;
    let id: Uuid = id.parse().map_err(|_| ValidationError::new("memory_id", "must be a UUID"))?;
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let memory = memories::get(&mut tx, &principal.tenant, &user, id).await?;
    let Some(memory) = memory else {
        return Err(ApiError::NotFound(format!("no memory {id} for this user")));
    };
    let history = memories::history(&mut tx, &principal.tenant, id).await?;
    tx.commit().await?;
    Ok(MemoryDetail { memory, history })
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("limit" = Option<i64>, Query)),
    responses((status = 200, description = "Latest first, with summaries", body = SessionList), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/sessions")]
async fn list_sessions(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (user, limit) = (user_of(path.into_inner())?, page_limit(&req)?);
    let sessions = sessions::latest(&state.db, &principal.tenant, &user, limit).await?;
    Ok(HttpResponse::Ok().json(SessionList { sessions }))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("limit" = Option<i64>, Query)),
    responses((status = 200, description = "Period summaries, latest first", body = SummaryList), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/summaries")]
async fn list_summaries(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (user, limit) = (user_of(path.into_inner())?, page_limit(&req)?);
    let summaries = sessions::latest_periods(&state.db, &principal.tenant, &user, limit).await?;
    Ok(HttpResponse::Ok().json(SummaryList { summaries }))
}

/// `?limit=` of a listing: 1–200, 20 when absent.
fn page_limit(req: &HttpRequest) -> Result<i64, ApiError> {
    Ok(Params::parse(req, &["limit"])?.int("limit", 20, 1..=MAX_PAGE)?)
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path)),
    responses((status = 200, description = "Everything stored for the user (scope admin)", body = Export), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/export")]
async fn export_user(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let user = user_of(path.into_inner())?;
    let tables = users::export(&state.db, &principal.tenant, &user).await?;
    Ok(HttpResponse::Ok().json(Export { user_id: user.to_string(), tables }))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path)),
    responses((status = 200, description = "Deleted everywhere, audited (scope admin)", body = Deleted), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody)),
    security(("api_key" = []))
)]
#[delete("/admin/v1/users/{user_id}")]
async fn delete_user(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(forget(&state, &principal, path.into_inner()).await?))
}

/// Deletes everything stored for a user, as `DELETE /admin/v1/users/{user_id}` does.
pub async fn forget(state: &AppState, principal: &Principal, user: String) -> Result<Deleted, ApiError> {
    let user = user_of(user)?;
    let deleted = users::forget(&state.db, &principal.tenant, &user, principal.key_id).await?;
    state.forget_user(&principal.tenant, &user);
    tracing::info!(tenant = %principal.tenant, "user deleted");
    Ok(Deleted { user_id: user.to_string(), deleted })
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path)),
    responses((status = 200, description = "When the user was forgotten, by whom, how much (scope admin); the log keeps only a keyed hash of the id", body = DeletionList),
              (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/admin/v1/users/{user_id}/deletions")]
async fn list_deletions(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let user = user_of(path.into_inner())?;
    let deletions = users::deletions(&state.db, &principal.tenant, &user).await?;
    Ok(HttpResponse::Ok().json(DeletionList { deletions }))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("memory_id" = Uuid, Path)),
    responses((status = 200, description = "Active again, with its full history (scope admin)", body = MemoryDetail),
              (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody),
              (status = 403, description = "The key lacks the scope", body = ErrorBody), (status = 404, description = "No such memory for this user", body = ErrorBody),
              (status = 409, description = "The memory is not evicted or merged", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/admin/v1/users/{user_id}/memories/{memory_id}/restore")]
async fn restore_memory(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (user, id) = path.into_inner();
    let user = user_of(user)?;
    let id = Uuid::parse_str(&id).map_err(|_| ValidationError::new("memory_id", "must be a UUID"))?;
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    memories::restore(&mut tx, &principal.tenant, &user, id, &format!("key:{}", principal.key_id)).await.map_err(
        |err| match err {
            RestoreError::NotFound(_) => ApiError::NotFound(err.to_string()),
            RestoreError::NotRestorable { .. } => ApiError::Conflict(err.to_string()),
            RestoreError::Database(err) => err.into(),
        },
    )?;
    let memory = memories::get(&mut tx, &principal.tenant, &user, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no memory {id} for this user")))?;
    let history = memories::history(&mut tx, &principal.tenant, id).await?;
    tx.commit().await?;
    tracing::info!(tenant = %principal.tenant, "memory restored");
    Ok(HttpResponse::Ok().json(MemoryDetail { memory, history }))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(restore_memory)
        .service(list_memories)
        .service(get_memory)
        .service(list_sessions)
        .service(list_summaries)
        .service(export_user)
        .service(delete_user)
        .service(list_deletions);
}
