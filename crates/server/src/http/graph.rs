//! The user's graph: entities, one entity, a neighbourhood, a path; and undoing a merge.
//! Each handler calls one operation of [`engram_core::service::graph`].

use actix_web::{HttpResponse, get, post, web};
use utoipa_actix_web::service_config::ServiceConfig;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::Query;
use super::openapi::{ErrorBody, Refused};
use super::state::AppState;
use engram_base::domain::{EntityId, UserId};
use engram_core::service::graph::{
    self, EntityDetail, EntityPage, EntityQuery, NeighbourhoodQuery, PathQuery, Subgraph,
};

/// The user and the entity a path names.
fn entity_path(path: web::Path<(String, String)>) -> Result<(UserId, EntityId), ApiError> {
    let (user, id) = path.into_inner();
    Ok((UserId::parse(user)?, EntityId::parse(&id)?))
}

#[utoipa::path(
    tag = "graph",
    params(("user_id" = String, Path), ("query" = Option<String>, Query, description = "A name, an alias or part of one"),
           ("type" = Option<String>, Query), ("limit" = Option<i64>, Query, description = "1–200, default 50"),
           ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page")),
    responses((status = 200, description = "The user's entities", body = EntityPage), Refused),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/entities")]
async fn list_entities(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    query: Query<EntityQuery>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(graph::entities(&state, &principal, &user, query.0).await?))
}

#[utoipa::path(
    tag = "graph",
    params(("user_id" = String, Path), ("entity_id" = Uuid, Path)),
    responses((status = 200, description = "The entity, its relations and its history", body = EntityDetail), Refused,
              (status = 404, description = "No such entity for this user", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/entities/{entity_id}")]
async fn get_entity(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (user, id) = entity_path(path)?;
    Ok(HttpResponse::Ok().json(graph::entity(&state, &principal, &user, id).await?))
}

#[utoipa::path(
    tag = "graph",
    params(("user_id" = String, Path), ("entity" = String, Query, description = "An entity's id, name or alias"),
           ("depth" = Option<i64>, Query, description = "1–3, default 1"), ("as_of" = Option<String>, Query, description = "RFC 3339: what held then")),
    responses((status = 200, description = "The relations within `depth` hops and the entities they join", body = Subgraph), Refused,
              (status = 404, description = "No such entity for this user", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/graph")]
async fn neighbourhood(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    query: Query<NeighbourhoodQuery>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(graph::neighbourhood(&state, &principal, &user, query.0).await?))
}

#[utoipa::path(
    tag = "graph",
    params(("user_id" = String, Path), ("from" = String, Query, description = "An entity's id, name or alias"),
           ("to" = String, Query, description = "An entity's id, name or alias"), ("max_depth" = Option<i64>, Query, description = "1–3, default 3")),
    responses((status = 200, description = "The shortest path, as relations in order from `from`", body = Subgraph), Refused,
              (status = 404, description = "No such entity, or no path within max_depth", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/graph/path")]
async fn shortest_path(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    query: Query<PathQuery>,
) -> Result<HttpResponse, ApiError> {
    let user = UserId::parse(path.into_inner())?;
    Ok(HttpResponse::Ok().json(graph::path(&state, &principal, &user, query.0).await?))
}

#[utoipa::path(
    tag = "graph",
    params(("user_id" = String, Path), ("entity_id" = Uuid, Path)),
    responses((status = 200, description = "Active again with the relations it had (scope admin)", body = EntityDetail), Refused,
              (status = 404, description = "No such entity for this user", body = ErrorBody), (status = 409, description = "Not merged, or its name is taken", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/admin/v1/users/{user_id}/entities/{entity_id}/restore")]
async fn restore_entity(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (user, id) = entity_path(path)?;
    Ok(HttpResponse::Ok().json(graph::restore(&state, &principal, &user, id).await?))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(list_entities)
        .service(get_entity)
        .service(neighbourhood)
        .service(shortest_path)
        .service(restore_entity);
}
