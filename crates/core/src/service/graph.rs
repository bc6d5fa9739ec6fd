//! The user's graph: entities, one entity, a neighbourhood, a path; and undoing a merge.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::input::{Int, Page};
use super::{AppState, Error, scopes};
use crate::graph::EntityType;
use crate::graph::merge::{self, RestoreError};
use crate::graph::read::{self, Entity, GraphChange, Relation};
use crate::memories::Change;
use engram_base::auth::Principal;
use engram_base::db::begin_tenant_tx;
use engram_base::domain::{Cursor, EntityId, TenantId, UserId, ValidationError};

#[derive(Debug, Serialize, ToSchema)]
pub struct EntityPage {
    pub entities: Vec<Entity>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EntityDetail {
    pub entity: Entity,
    /// Every relation it takes part in, those superseded included.
    pub relations: Vec<Relation>,
    pub history: Vec<GraphChange>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Subgraph {
    pub entities: Vec<Entity>,
    pub relations: Vec<Relation>,
}

/// Which entities a listing shows (`GET /v1/users/{user_id}/entities`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntityQuery {
    /// A name, an alias or part of one.
    pub query: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<EntityType>,
    pub limit: Option<Int>,
    pub cursor: Option<Cursor>,
}

/// The relations around an entity (`GET /v1/users/{user_id}/graph`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighbourhoodQuery {
    /// An entity's id, name or alias.
    pub entity: Option<String>,
    /// 1–3 hops, 1 when absent.
    pub depth: Option<Int>,
    /// RFC 3339: what held then.
    pub as_of: Option<String>,
}

/// The shortest path between two entities (`GET /v1/users/{user_id}/graph/path`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    /// 1–3 hops, 3 when absent.
    pub max_depth: Option<Int>,
}

/// The user's entities, a page at a time, those matching `query` and of `type`.
pub async fn entities(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    query: EntityQuery,
) -> Result<EntityPage, Error> {
    scopes::reach(principal, user)?;
    let page = Page::new(query.limit, query.cursor, 50)?;
    let text = query.query.as_deref();
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let entities = read::list(&mut tx, &principal.tenant, user, text, query.kind, page.limit, page.after_id()).await?;
    tx.commit().await?;
    let next_cursor = page.next(&entities, |e| e.id.to_string());
    Ok(EntityPage { entities, next_cursor })
}

/// An entity with its relations and its history.
pub async fn entity(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    id: EntityId,
) -> Result<EntityDetail, Error> {
    scopes::reach(principal, user)?;
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let detail = detail(&mut tx, &principal.tenant, user, id.0).await?;
    tx.commit().await?;
    Ok(detail)
}

async fn detail(
    conn: &mut sqlx::PgConnection,
    tenant: &TenantId,
    user: &UserId,
    id: Uuid,
) -> Result<EntityDetail, Error> {
    let (entity, relations, history) = read::entity(conn, tenant, user, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no entity {id} for this user")))?;
    Ok(EntityDetail { entity, relations, history })
}

/// A depth of 1 to 3 hops.
fn depth(given: Option<Int>, field: &str, default: i64) -> Result<u8, ValidationError> {
    Ok(Int::within(given, field, default, 1..=3)? as u8)
}

/// The entity a parameter names (by id or name), or [`Error::NotFound`] naming it.
async fn named(
    conn: &mut sqlx::PgConnection,
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    field: &'static str,
    value: Option<&str>,
) -> Result<Uuid, Error> {
    let value =
        value.map(str::trim).filter(|v| !v.is_empty()).ok_or_else(|| ValidationError::new(field, "is required"))?;
    read::find(conn, &principal.tenant, user, &state.graph, value)
        .await?
        .ok_or_else(|| Error::NotFound(format!("{field}: no such entity for this user")))
}

/// The relations within `depth` hops of an entity and the entities they join.
pub async fn neighbourhood(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    query: NeighbourhoodQuery,
) -> Result<Subgraph, Error> {
    scopes::reach(principal, user)?;
    let depth = depth(query.depth, "depth", 1)?;
    let as_of = query
        .as_of
        .as_deref()
        .map(|t| {
            DateTime::parse_from_rfc3339(t)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| ValidationError::new("as_of", "must be an RFC 3339 timestamp"))
        })
        .transpose()?;
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let entity = named(&mut tx, state, principal, user, "entity", query.entity.as_deref()).await?;
    let (entities, relations) =
        read::neighbourhood(&mut tx, &principal.tenant, user, &state.graph, entity, depth, as_of).await?;
    tx.commit().await?;
    state.metrics.graph_walks.inc();
    Ok(Subgraph { entities, relations })
}

/// The shortest path between two entities, as relations in order from `from`.
pub async fn path(state: &AppState, principal: &Principal, user: &UserId, query: PathQuery) -> Result<Subgraph, Error> {
    scopes::reach(principal, user)?;
    let max_depth = depth(query.max_depth, "max_depth", 3)?;
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let from = named(&mut tx, state, principal, user, "from", query.from.as_deref()).await?;
    let to = named(&mut tx, state, principal, user, "to", query.to.as_deref()).await?;
    let found = read::path(&mut tx, &principal.tenant, user, from, to, max_depth).await?;
    tx.commit().await?;
    state.metrics.graph_walks.inc();
    let (entities, relations) = found.ok_or_else(|| Error::NotFound(format!("no path within {max_depth} hops")))?;
    Ok(Subgraph { entities, relations })
}

/// Undoes the merge of an entity: active again with the relations it had.
pub async fn restore(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    id: EntityId,
) -> Result<EntityDetail, Error> {
    scopes::reach(principal, user)?;
    let id = id.0;
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    let change = Change::by(principal.actor(), None, "restored by an admin");
    let limit = state.graph.settings.scan_limit;
    merge::restore(&mut tx, &principal.tenant, user, id, &change, limit).await.map_err(|err| match err {
        RestoreError::NotFound => Error::NotFound(format!("no entity {id} for this user")),
        RestoreError::NotMerged | RestoreError::NameTaken => Error::Conflict(err.to_string()),
        RestoreError::Database(err) => err.into(),
    })?;
    let detail = detail(&mut tx, &principal.tenant, user, id).await?;
    tx.commit().await?;
    Ok(detail)
}
