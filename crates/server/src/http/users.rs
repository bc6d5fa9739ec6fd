//! Per-user resources: the user's counts, memories (listing, detail, add, edit,
//! delete, restore), raw turns, sessions, period summaries, export and deletion. Each
//! handler parses the path, takes the query or body as the operation's input, and
//! calls one operation of [`engram_core::service`].

use actix_web::{HttpResponse, delete, get, patch, post, web};
use serde::Deserialize;
use utoipa_actix_web::service_config::ServiceConfig;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::{JsonBody, Query};
use super::openapi::{ErrorBody, Refused};
use super::state::AppState;
use engram_base::domain::{MemoryId, UserId};
use engram_core::imports::Imported;
use engram_core::service::input::Flag;
use engram_core::service::memories::{
    self, AddedMemory, MemoryDeleted, MemoryDetail, MemoryEdit, MemoryPage, MemoryQuery, NewMemoryRequest, Outcome,
};
use engram_core::service::users::{
    self, Deleted, DeletionList, Export, LatestQuery, PageQuery, SessionList, SummaryList, TurnPage, TurnQuery,
    UserPage,
};
use engram_core::users::UserSummary;

/// The user and the memory a path names.
fn memory_path(path: web::Path<(String, String)>) -> Result<(UserId, MemoryId), ApiError> {
    let (user, id) = path.into_inner();
    Ok((UserId::parse(user)?, MemoryId::parse(&id)?))
}

/// `DELETE /v1/users/{user_id}/memories/{memory_id}`'s query.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteQuery {
    /// Also blank out the turns it came from.
    sources: Option<Flag>,
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("category" = Option<String>, Query), ("status" = Option<String>, Query, description = "Default `active`"),
           ("kind" = Option<String>, Query), ("key" = Option<String>, Query, description = "Only memories of this key"),
           ("limit" = Option<i64>, Query, description = "1–200, default 50"),
           ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page")),
    responses((status = 200, description = "Newest first", body = MemoryPage), Refused),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/memories")]
async fn list_memories(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    query: Query<MemoryQuery>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(memories::page(&state, &principal, &user, query.0).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("memory_id" = Uuid, Path)),
    responses((status = 200, description = "The memory and every change to it", body = MemoryDetail), Refused,
              (status = 404, description = "No such memory for this user", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/memories/{memory_id}")]
async fn get_memory(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (user, id) = memory_path(path)?;
    Ok(HttpResponse::Ok().json(memories::detail(&state, &principal, &user, id).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path)),
    responses((status = 200, description = "What engram holds of the user, counted", body = UserSummary), Refused,
              (status = 404, description = "engram holds no turn and no memory of this user", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}")]
async fn get_user(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(users::summary(&state, &principal, &user).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("session_id" = Option<String>, Query, description = "Only this session's turns"),
           ("limit" = Option<i64>, Query, description = "1–200, default 50"),
           ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page")),
    responses((status = 200, description = "Raw turns, newest first", body = TurnPage), Refused),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/events")]
async fn list_turns(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    query: Query<TurnQuery>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(users::turns(&state, &principal, &user, query.0).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("limit" = Option<i64>, Query)),
    responses((status = 200, description = "Latest first, with summaries", body = SessionList), Refused),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/sessions")]
async fn list_sessions(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    query: Query<LatestQuery>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(users::sessions(&state, &principal, &user, query.0).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("limit" = Option<i64>, Query)),
    responses((status = 200, description = "Period summaries, latest first", body = SummaryList), Refused),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/summaries")]
async fn list_summaries(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    query: Query<LatestQuery>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(users::summaries(&state, &principal, &user, query.0).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path)),
    responses((status = 200, description = "Everything stored for the user (scope admin)", body = Export), Refused),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/export")]
async fn export_user(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(users::export(&state, &principal, &user).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path)),
    request_body(content = Object, description = "An engram export (`format_version` 1), or Mem0's `get_all` result (`{\"results\": [...]}` or the list)"),
    responses((status = 200, description = "Imported into the user, or already there (scope admin); nothing is written when the document is refused", body = Imported), Refused, (status = 413, description = "Larger than `server.max_body_bytes`: use `engram import`", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/v1/users/{user_id}/import")]
async fn import_user(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<String>,
    body: JsonBody<serde_json::Value>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(users::import(&state, &principal, &user, body.0).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path)),
    responses((status = 200, description = "Deleted everywhere, audited (scope admin)", body = Deleted), Refused),
    security(("api_key" = []))
)]
#[delete("/admin/v1/users/{user_id}")]
async fn delete_user(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(users::forget(&state, &principal, &user).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path)),
    responses((status = 200, description = "When the user was forgotten, by whom, how much (scope admin); the log keeps only a keyed hash of the id", body = DeletionList),
              Refused),
    security(("api_key" = []))
)]
#[get("/admin/v1/users/{user_id}/deletions")]
async fn list_deletions(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(users::deletions(&state, &principal, &user).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("memory_id" = Uuid, Path)),
    responses((status = 200, description = "Active again, with its full history (scope admin)", body = MemoryDetail),
              Refused, (status = 404, description = "No such memory for this user", body = ErrorBody),
              (status = 409, description = "The memory is not evicted or merged", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/admin/v1/users/{user_id}/memories/{memory_id}/restore")]
async fn restore_memory(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (user, id) = memory_path(path)?;
    Ok(HttpResponse::Ok().json(memories::restore(&state, &principal, &user, id).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path)),
    request_body = NewMemoryRequest,
    responses((status = 201, description = "Created and searchable at once", body = AddedMemory),
              (status = 200, description = "An active memory already said the same: that one, refreshed (`outcome` = `duplicate`)", body = AddedMemory),
              Refused),
    security(("api_key" = []))
)]
#[post("/v1/users/{user_id}/memories")]
async fn add_memory(
    state: web::Data<AppState>,
    principal: Authorized<need::Ingest>,
    path: web::Path<String>,
    body: JsonBody<NewMemoryRequest>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    let added = memories::add(&state, &principal, &user, body.0).await?;
    let mut response = if added.outcome == Outcome::Created { HttpResponse::Created() } else { HttpResponse::Ok() };
    Ok(response.json(added))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("memory_id" = Uuid, Path)),
    request_body = MemoryEdit,
    responses((status = 200, description = "The memory as it is now, with its history", body = MemoryDetail),
              Refused, (status = 404, description = "No such memory for this user", body = ErrorBody)),
    security(("api_key" = []))
)]
#[patch("/v1/users/{user_id}/memories/{memory_id}")]
async fn update_memory(
    state: web::Data<AppState>,
    principal: Authorized<need::Ingest>,
    path: web::Path<(String, String)>,
    body: JsonBody<MemoryEdit>,
) -> Result<HttpResponse, ApiError> {
    let (user, id) = memory_path(path)?;
    Ok(HttpResponse::Ok().json(memories::update(&state, &principal, &user, id, body.0).await?))
}

#[utoipa::path(
    tag = "users",
    params(("user_id" = String, Path), ("memory_id" = Uuid, Path),
           ("sources" = Option<bool>, Query, description = "Also replace the text of the turns it came from by `[deleted]`")),
    responses((status = 200, description = "Gone for good; what was removed, per kind", body = MemoryDeleted),
              Refused, (status = 404, description = "No such memory for this user", body = ErrorBody)),
    security(("api_key" = []))
)]
#[delete("/v1/users/{user_id}/memories/{memory_id}")]
async fn delete_memory(
    state: web::Data<AppState>,
    principal: Authorized<need::Ingest>,
    path: web::Path<(String, String)>,
    query: Query<DeleteQuery>,
) -> Result<HttpResponse, ApiError> {
    let (user, id) = memory_path(path)?;
    let sources = query.0.sources.unwrap_or_default().0;
    Ok(HttpResponse::Ok().json(memories::delete(&state, &principal, &user, id, sources).await?))
}

#[utoipa::path(
    tag = "users",
    params(("limit" = Option<i64>, Query, description = "1–200, default 50"),
           ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page")),
    responses((status = 200, description = "The tenant's users in id order, with counts (scope admin)", body = UserPage),
              Refused),
    security(("api_key" = []))
)]
#[get("/admin/v1/users")]
async fn list_users(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    query: Query<PageQuery<UserId>>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(users::list(&state, &principal, query.0).await?))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(list_users)
        .service(restore_memory)
        .service(add_memory)
        .service(update_memory)
        .service(delete_memory)
        .service(list_memories)
        .service(get_memory)
        .service(get_user)
        .service(list_turns)
        .service(list_sessions)
        .service(list_summaries)
        .service(export_user)
        .service(import_user)
        .service(delete_user)
        .service(list_deletions);
}
