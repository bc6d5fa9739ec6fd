//! The user's graph: entities, one entity, a neighbourhood, a path; and undoing a merge.

use actix_web::{HttpRequest, HttpResponse, get, post, web};
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa_actix_web::service_config::ServiceConfig;
use uuid::Uuid;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::{self, Params};
use super::openapi::ErrorBody;
use super::state::AppState;
use engram_base::auth::Principal;
use engram_base::db::begin_tenant_tx;
use engram_base::domain::{UserId, ValidationError};
use engram_core::graph::merge::{self, RestoreError};
use engram_core::graph::read::{self, Entity, GraphChange, Relation};
use engram_core::graph::{EntityType, Graph};

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EntityPage {
    pub entities: Vec<Entity>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EntityDetail {
    pub entity: Entity,
    /// Every relation it takes part in, those superseded included.
    pub relations: Vec<Relation>,
    pub history: Vec<GraphChange>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Subgraph {
    pub entities: Vec<Entity>,
    pub relations: Vec<Relation>,
}

fn user_of(principal: &Principal, path: String) -> Result<UserId, ApiError> {
    Ok(engram_core::service::scopes::user(principal, path)?)
}

fn entity_id(text: &str) -> Result<Uuid, ApiError> {
    Ok(text.parse().map_err(|_| ValidationError::new("entity_id", "must be a UUID"))?)
}

#[utoipa::path(
    tag = "graph",
    params(("user_id" = String, Path), ("query" = Option<String>, Query, description = "A name, an alias or part of one"),
           ("type" = Option<String>, Query), ("limit" = Option<i64>, Query, description = "1–200, default 50"),
           ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page")),
    responses((status = 200, description = "The user's entities", body = EntityPage), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody),
              (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/entities")]
async fn list_entities(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let user = user_of(&principal, path.into_inner())?;
    let params = extract::query(&req, &["query", "type", "limit", "cursor"])?;
    let kind = params
        .text("type")
        .map(|t| {
            EntityType::parse(t).ok_or_else(|| {
                let types: Vec<&str> = EntityType::ALL.iter().map(|t| t.as_str()).collect();
                ValidationError::new("type", format!("must be one of {}", types.join(", ")))
            })
        })
        .transpose()?;
    let cursor = params
        .text("cursor")
        .map(|c| c.parse::<Uuid>().map_err(|_| ValidationError::new("cursor", "is not a cursor this API returned")))
        .transpose()?;
    let limit = params.int("limit", 50, 1..=200)?;
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let entities = read::list(&mut tx, &principal.tenant, &user, params.text("query"), kind, limit, cursor).await?;
    tx.commit().await?;
    let next_cursor = (entities.len() as i64 == limit).then(|| entities.last().map(|e| e.id.to_string())).flatten();
    Ok(HttpResponse::Ok().json(EntityPage { entities, next_cursor }))
}

#[utoipa::path(
    tag = "graph",
    params(("user_id" = String, Path), ("entity_id" = Uuid, Path)),
    responses((status = 200, description = "The entity, its relations and its history", body = EntityDetail), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody),
              (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody),
              (status = 404, description = "No such entity for this user", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/entities/{entity_id}")]
async fn get_entity(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (user, id) = path.into_inner();
    let (user, id) = (user_of(&principal, user)?, entity_id(&id)?);
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let found = read::entity(&mut tx, &principal.tenant, &user, id).await?;
    tx.commit().await?;
    let (entity, relations, history) =
        found.ok_or_else(|| ApiError::NotFound(format!("no entity {id} for this user")))?;
    Ok(HttpResponse::Ok().json(EntityDetail { entity, relations, history }))
}

/// A depth parameter: 1 to 3.
fn depth(params: &Params, name: &str, default: i64) -> Result<u8, ApiError> {
    Ok(params.int(name, default, 1..=3)? as u8)
}

/// The entity a parameter names (by id or name), or a 404 naming it.
async fn named(
    conn: &mut sqlx::PgConnection,
    state: &AppState,
    tenant: &engram_base::domain::TenantId,
    user: &UserId,
    field: &'static str,
    value: Option<&str>,
) -> Result<Uuid, ApiError> {
    let value = value.filter(|v| !v.trim().is_empty()).ok_or_else(|| ValidationError::new(field, "is required"))?;
    let graph: &Graph = &state.graph;
    read::find(conn, tenant, user, graph, value.trim())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("{field}: no such entity for this user")))
}

#[utoipa::path(
    tag = "graph",
    params(("user_id" = String, Path), ("entity" = String, Query, description = "An entity's id, name or alias"),
           ("depth" = Option<i64>, Query, description = "1–3, default 1"), ("as_of" = Option<String>, Query, description = "RFC 3339: what held then")),
    responses((status = 200, description = "The relations within `depth` hops and the entities they join", body = Subgraph), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody),
              (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody),
              (status = 404, description = "No such entity for this user", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/graph")]
async fn neighbourhood(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let user = user_of(&principal, path.into_inner())?;
    let params = extract::query(&req, &["entity", "depth", "as_of"])?;
    let depth = depth(&params, "depth", 1)?;
    let as_of = params
        .text("as_of")
        .map(|t| {
            DateTime::parse_from_rfc3339(t)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| ValidationError::new("as_of", "must be an RFC 3339 timestamp"))
        })
        .transpose()?;
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let entity = named(&mut tx, &state, &principal.tenant, &user, "entity", params.text("entity")).await?;
    let (entities, relations) =
        read::neighbourhood(&mut tx, &principal.tenant, &user, &state.graph, entity, depth, as_of).await?;
    tx.commit().await?;
    state.metrics.graph_walks.inc();
    Ok(HttpResponse::Ok().json(Subgraph { entities, relations }))
}

#[utoipa::path(
    tag = "graph",
    params(("user_id" = String, Path), ("from" = String, Query, description = "An entity's id, name or alias"),
           ("to" = String, Query, description = "An entity's id, name or alias"), ("max_depth" = Option<i64>, Query, description = "1–3, default 3")),
    responses((status = 200, description = "The shortest path, as relations in order from `from`", body = Subgraph), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody),
              (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody),
              (status = 404, description = "No such entity, or no path within max_depth", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/users/{user_id}/graph/path")]
async fn shortest_path(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let user = user_of(&principal, path.into_inner())?;
    let params = extract::query(&req, &["from", "to", "max_depth"])?;
    let max_depth = depth(&params, "max_depth", 3)?;
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let from = named(&mut tx, &state, &principal.tenant, &user, "from", params.text("from")).await?;
    let to = named(&mut tx, &state, &principal.tenant, &user, "to", params.text("to")).await?;
    let found = read::path(&mut tx, &principal.tenant, &user, from, to, max_depth).await?;
    tx.commit().await?;
    state.metrics.graph_walks.inc();
    let (entities, relations) = found.ok_or_else(|| ApiError::NotFound(format!("no path within {max_depth} hops")))?;
    Ok(HttpResponse::Ok().json(Subgraph { entities, relations }))
}

#[utoipa::path(
    tag = "graph",
    params(("user_id" = String, Path), ("entity_id" = Uuid, Path)),
    responses((status = 200, description = "Active again with the relations it had (scope admin)", body = EntityDetail), (status = 400, description = "Invalid input; `field` names it", body = ErrorBody),
              (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody),
              (status = 404, description = "No such entity for this user", body = ErrorBody), (status = 409, description = "Not merged, or its name is taken", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/admin/v1/users/{user_id}/entities/{entity_id}/restore")]
async fn restore_entity(
    state: web::Data<AppState>,
    principal: Authorized<need::Admin>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (user, id) = path.into_inner();
    let (user, id) = (user_of(&principal, user)?, entity_id(&id)?);
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    let change = engram_core::memories::Change::by(format!("key:{}", principal.key_id), None, "restored by an admin");
    let limit = state.graph.settings.scan_limit;
    merge::restore(&mut tx, &principal.tenant, &user, id, &change, limit).await.map_err(|err| match err {
        RestoreError::NotFound => ApiError::NotFound(format!("no entity {id} for this user")),
        RestoreError::NotMerged | RestoreError::NameTaken => ApiError::Conflict(err.to_string()),
        RestoreError::Database(err) => err.into(),
    })?;
    let found = read::entity(&mut tx, &principal.tenant, &user, id).await?;
    tx.commit().await?;
    let (entity, relations, history) =
        found.ok_or_else(|| ApiError::NotFound(format!("no entity {id} for this user")))?;
    Ok(HttpResponse::Ok().json(EntityDetail { entity, relations, history }))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(list_entities)
        .service(get_entity)
        .service(neighbourhood)
        .service(shortest_path)
        .service(restore_entity);
}
