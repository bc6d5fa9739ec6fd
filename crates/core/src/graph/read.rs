//! Reading the graph for the API: a user's entities, one entity with its relations and
//! history, an entity's neighbourhood, the shortest path between two entities.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use super::retrieve::{Seed, walk};
use super::{Action, EntityStatus, EntityType, Graph, RelationStatus};
use engram_base::domain::{Owner, TenantId, UserId};

#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Entity {
    pub id: Uuid,
    pub name: String,
    #[serde(rename = "type")]
    #[sqlx(rename = "type", try_from = "String")]
    pub kind: EntityType,
    pub aliases: Vec<String>,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    /// Whether it is the user themself.
    pub is_user: bool,
    pub status: EntityStatus,
    /// The entity it was merged into.
    pub merged_into: Option<Uuid>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Relation {
    pub id: Uuid,
    /// The subject's name.
    pub subject: String,
    pub subject_id: Uuid,
    pub predicate: String,
    /// The object's name.
    pub object: String,
    pub object_id: Uuid,
    /// The sentence that states it.
    pub fact: String,
    pub valid_from: DateTime<Utc>,
    pub valid_to: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub expired_at: Option<DateTime<Utc>>,
    pub source_event_ids: Vec<Uuid>,
    pub status: RelationStatus,
    pub confidence: f32,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct GraphChange {
    pub action: Action,
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub reason: Option<String>,
    pub actor: Option<String>,
    pub job_run_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
}

/// An entity's row as stored: its type still a name.
struct EntityRow {
    id: Uuid,
    name: String,
    kind: String,
    aliases: Vec<String>,
    first_seen: DateTime<Utc>,
    last_seen: DateTime<Utc>,
    is_user: bool,
    status: EntityStatus,
    merged_into: Option<Uuid>,
}

impl TryFrom<EntityRow> for Entity {
    type Error = sqlx::Error;

    fn try_from(r: EntityRow) -> sqlx::Result<Self> {
        let kind = EntityType::try_from(r.kind)
            .map_err(|e| sqlx::Error::ColumnDecode { index: "type".to_owned(), source: e.into() })?;
        Ok(Entity {
            id: r.id,
            name: r.name,
            kind,
            aliases: r.aliases,
            first_seen: r.first_seen,
            last_seen: r.last_seen,
            is_user: r.is_user,
            status: r.status,
            merged_into: r.merged_into,
        })
    }
}

/// The user's active entities, by name: those whose name or alias holds `query` (or is
/// like it, by trigrams) and of `kind`, after `cursor` (an entity id), at most `limit`.
pub async fn list(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    query: Option<&str>,
    kind: Option<EntityType>,
    limit: i64,
    cursor: Option<Uuid>,
) -> sqlx::Result<Vec<Entity>> {
    let query = query.map(engram_language::relations::names::normalise).filter(|q| !q.is_empty());
    sqlx::query_as!(
        EntityRow,
        r#"SELECT id, name, type AS kind, aliases, first_seen, last_seen, is_user, status AS "status: EntityStatus", merged_into FROM entities
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND ($3::text IS NULL OR type = $3)
            AND ($4::text IS NULL OR norm_name LIKE '%' || $4 || '%' OR $4 = ANY(aliases) OR norm_name % $4)
            AND ($5::uuid IS NULL OR id > $5)
          ORDER BY id LIMIT $6"#,
        tenant.as_str(),
        user.as_str(),
        kind.map(EntityType::as_str),
        query.map(|q| q.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")),
        cursor,
        limit
    )
    .try_map(Entity::try_from)
    .fetch_all(conn)
    .await
}

/// One entity of the user (merged ones too), with every relation it takes part in and its history.
pub async fn entity(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    id: Uuid,
) -> sqlx::Result<Option<(Entity, Vec<Relation>, Vec<GraphChange>)>> {
    let Some(entity): Option<Entity> = sqlx::query_as!(
        EntityRow,
        r#"SELECT id, name, type AS kind, aliases, first_seen, last_seen, is_user, status AS "status: EntityStatus", merged_into FROM entities WHERE tenant_id = $1 AND user_id = $2 AND id = $3"#,
        tenant.as_str(),
        user.as_str(),
        id
    )
    .try_map(Entity::try_from)
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(None);
    };
    let relations = sqlx::query_as!(
        Relation,
        r#"SELECT r.id, s.name AS subject, r.subject_id, r.predicate, o.name AS object, r.object_id, r.fact,
     r.valid_from, r.valid_to, r.created_at, r.expired_at, r.source_event_ids, r.status AS "status: RelationStatus", r.confidence FROM relations r JOIN entities s ON s.tenant_id = r.tenant_id AND s.id = r.subject_id
     JOIN entities o ON o.tenant_id = r.tenant_id AND o.id = r.object_id
          WHERE r.tenant_id = $1 AND r.user_id = $2 AND (r.subject_id = $3 OR r.object_id = $3)
            AND r.status IN ('active', 'superseded')
          ORDER BY r.valid_from, r.id"#,
        tenant.as_str(),
        user.as_str(),
        id
    )
    .fetch_all(&mut *conn)
    .await?;
    let history = sqlx::query_as!(
        GraphChange,
        r#"SELECT action AS "action: Action", before, after, reason, actor, job_run_id, created_at FROM graph_history
          WHERE tenant_id = $1 AND entity_id = $2 ORDER BY created_at, id"#,
        tenant.as_str(),
        id
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(Some((entity, relations, history)))
}

/// The active entity `name_or_id` names: its id, or its name or an alias (the user's
/// own name included).
pub async fn find(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    graph: &Graph,
    name_or_id: &str,
) -> sqlx::Result<Option<Uuid>> {
    if let Ok(id) = name_or_id.parse::<Uuid>() {
        return sqlx::query_scalar!(
            "SELECT id FROM entities WHERE tenant_id = $1 AND user_id = $2 AND id = $3",
            tenant.as_str(),
            user.as_str(),
            id
        )
        .fetch_optional(conn)
        .await;
    }
    let mut names = graph.aliases.all_names_of(name_or_id);
    names.push(engram_language::relations::names::normalise(name_or_id));
    sqlx::query_scalar!(
        "SELECT id FROM entities WHERE tenant_id = $1 AND user_id = $2 AND status = 'active'
            AND (norm_name = ANY($3) OR aliases && $3) ORDER BY is_user DESC, first_seen LIMIT 1",
        tenant.as_str(),
        user.as_str(),
        &names
    )
    .fetch_optional(conn)
    .await
}

/// The relations within `depth` hops of `entity` (that hold now, or at `as_of`), and
/// the entities they join.
pub async fn neighbourhood(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    graph: &Graph,
    entity: Uuid,
    depth: u8,
    as_of: Option<DateTime<Utc>>,
) -> sqlx::Result<(Vec<Entity>, Vec<Relation>)> {
    let seeds = [Seed { entity, weight: 1.0 }];
    let steps = walk(conn, Owner::new(tenant, user), &seeds, depth, &graph.settings, as_of, None).await?;
    let ids: Vec<Uuid> = steps.iter().map(|s| s.relation).collect();
    relations_and_entities(conn, tenant, user, &ids, Some(entity)).await
}

/// The shortest chain of relations from `from` to `to` (that hold now), at most `max_depth` long.
pub async fn path(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    from: Uuid,
    to: Uuid,
    max_depth: u8,
) -> sqlx::Result<Option<(Vec<Entity>, Vec<Relation>)>> {
    if from == to {
        return Ok(Some(relations_and_entities(conn, tenant, user, &[], Some(from)).await?));
    }
    let found: Option<Vec<Uuid>> = sqlx::query_scalar!(
        r#"WITH RECURSIVE walk (node, hop, path, seen) AS (
            SELECT $3::uuid, 0, ARRAY[]::uuid[], ARRAY[$3::uuid]
          UNION ALL
            SELECT CASE WHEN r.subject_id = w.node THEN r.object_id ELSE r.subject_id END, w.hop + 1,
                   w.path || r.id, w.seen || CASE WHEN r.subject_id = w.node THEN r.object_id ELSE r.subject_id END
              FROM walk w
              JOIN relations r ON r.tenant_id = $1 AND r.user_id = $2 AND r.status = 'active'
                              AND (r.subject_id = w.node OR r.object_id = w.node)
             WHERE w.hop < $5 AND w.node <> $4
               AND NOT (CASE WHEN r.subject_id = w.node THEN r.object_id ELSE r.subject_id END) = ANY(w.seen)
         )
         SELECT path AS "path!" FROM walk WHERE node = $4 ORDER BY hop LIMIT 1"#,
        tenant.as_str(),
        user.as_str(),
        from,
        to,
        max_depth as i32
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(path) = found else { return Ok(None) };
    let (entities, mut relations) = relations_and_entities(conn, tenant, user, &path, None).await?;
    relations.sort_by_key(|r| path.iter().position(|id| *id == r.id));
    Ok(Some((entities, relations)))
}

async fn relations_and_entities(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    ids: &[Uuid],
    with: Option<Uuid>,
) -> sqlx::Result<(Vec<Entity>, Vec<Relation>)> {
    let relations: Vec<Relation> = sqlx::query_as!(
        Relation,
        r#"SELECT r.id, s.name AS subject, r.subject_id, r.predicate, o.name AS object, r.object_id, r.fact,
     r.valid_from, r.valid_to, r.created_at, r.expired_at, r.source_event_ids, r.status AS "status: RelationStatus", r.confidence FROM relations r JOIN entities s ON s.tenant_id = r.tenant_id AND s.id = r.subject_id
     JOIN entities o ON o.tenant_id = r.tenant_id AND o.id = r.object_id
          WHERE r.tenant_id = $1 AND r.user_id = $2 AND r.id = ANY($3) ORDER BY r.valid_from, r.id"#,
        tenant.as_str(),
        user.as_str(),
        ids
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut entity_ids: Vec<Uuid> = relations.iter().flat_map(|r| [r.subject_id, r.object_id]).collect();
    entity_ids.extend(with);
    let entities = sqlx::query_as!(
        EntityRow,
        r#"SELECT id, name, type AS kind, aliases, first_seen, last_seen, is_user, status AS "status: EntityStatus", merged_into FROM entities WHERE tenant_id = $1 AND user_id = $2 AND id = ANY($3) ORDER BY id"#,
        tenant.as_str(),
        user.as_str(),
        &entity_ids
    )
    .try_map(Entity::try_from)
    .fetch_all(&mut *conn)
    .await?;
    Ok((entities, relations))
}
