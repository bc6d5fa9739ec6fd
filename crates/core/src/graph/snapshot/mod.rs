//! The graph a lookup walks, one row per user (`user_graphs`, this module its only
//! writer): the user's active entities and relations, with their vectors in 8 bits, in
//! one value a lookup reads whole. Without it a lookup reads the user's edges from an
//! index, then each relation it reached from the heap, about 200 buffers scattered over
//! the table; the row is a few contiguous pages.
//!
//! Every flow that changes a user's entities or relations ends with [`refresh`] in its
//! transaction: merges and restores (`super::merge`) and forgetting (`super::forget`)
//! themselves, extraction once after a unit's writes (`extract_facts`); forgetting the
//! user deletes the row with the rest of their graph ([`super::store::forget_user`]). A user
//! with more than `graph.scan_limit` relations or entities has none, and is walked in the
//! database, as is a lookup `as_of` a past time.
//!
//! The value's format is [`format`]'s.

mod format;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use engram_base::domain::{TenantId, UserId};
use format::quantise;
pub use format::{Entity, Ids, Relation, UserGraph, Vector};

/// A user's graph row as read: [`Stored::graph`] borrows from it.
pub struct Stored(Vec<u8>);

impl Stored {
    /// The graph, if this version reads the value.
    pub fn graph(&self) -> Option<UserGraph<'_>> {
        UserGraph::decode(&self.0)
    }
}

/// The user's graph row, if they have one.
pub async fn read(conn: &mut PgConnection, tenant: &TenantId, user: &UserId) -> sqlx::Result<Option<Stored>> {
    let row = sqlx::query!(
        "SELECT body FROM user_graphs WHERE tenant_id = $1 AND user_id = $2",
        tenant.as_str(),
        user.as_str()
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| Stored(r.body)))
}

/// An entity as [`refresh`] reads it from its table.
#[derive(sqlx::FromRow)]
struct EntityRow {
    id: Uuid,
    name: String,
    norm_name: String,
    person: bool,
    aliases: Vec<String>,
    vector: Option<pgvector::Vector>,
}

/// A relation as [`refresh`] reads it from its table.
#[derive(sqlx::FromRow)]
struct RelationRow {
    id: Uuid,
    subject_id: Uuid,
    object_id: Uuid,
    predicate: String,
    fact: String,
    valid_from: DateTime<Utc>,
    valid_to: Option<DateTime<Utc>>,
    updated_at: DateTime<Utc>,
    source_event_ids: Vec<Uuid>,
    vector: Option<pgvector::Vector>,
}

/// The row's value for `entities` and `relations`.
fn value(entities: &[EntityRow], relations: &[RelationRow]) -> Vec<u8> {
    let vector = |v: &Option<pgvector::Vector>| v.as_ref().map(|v| quantise(v.as_slice())).unwrap_or_default();
    let (entity_vectors, relation_vectors): (Vec<_>, Vec<_>) =
        (entities.iter().map(|e| vector(&e.vector)).collect(), relations.iter().map(|r| vector(&r.vector)).collect());
    let sources: Vec<Vec<u8>> =
        relations.iter().map(|r| r.source_event_ids.iter().flat_map(|id| *id.as_bytes()).collect()).collect();
    let graph = UserGraph {
        entities: entities
            .iter()
            .zip(&entity_vectors)
            .map(|(e, v)| Entity {
                id: e.id,
                name: &e.name,
                norm_name: &e.norm_name,
                person: e.person,
                aliases: e.aliases.iter().map(String::as_str).collect(),
                vector: Vector(v),
            })
            .collect(),
        relations: relations
            .iter()
            .zip(relation_vectors.iter().zip(&sources))
            .map(|(r, (v, ids))| Relation {
                id: r.id,
                subject_id: r.subject_id,
                object_id: r.object_id,
                predicate: &r.predicate,
                fact: &r.fact,
                valid_from: r.valid_from,
                valid_to: r.valid_to,
                updated_at: r.updated_at,
                source_event_ids: Ids(ids),
                vector: Vector(v),
            })
            .collect(),
    };
    graph.encode()
}

/// Writes the user's graph row from their entities and relations as they are in this
/// transaction; removes it when they have none, or more than `limit` of either.
pub async fn refresh(conn: &mut PgConnection, tenant: &TenantId, user: &UserId, limit: i64) -> sqlx::Result<()> {
    // Counted first, through the indexes: a user over the limit would otherwise have up to
    // `limit` rows and their vectors read at every change, only for the row to be deleted.
    let (entity_count, relation_count): (i64, i64) = sqlx::query!(
        r#"SELECT (SELECT count(*) FROM (SELECT FROM entities
                  WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' LIMIT $3) e) AS "entities!",
                (SELECT count(*) FROM (SELECT FROM relations
                  WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' LIMIT $3) r) AS "relations!""#,
        tenant.as_str(),
        user.as_str(),
        limit + 1
    )
    .map(|r| (r.entities, r.relations))
    .fetch_one(&mut *conn)
    .await?;
    let over = |n: i64| n > limit;
    if relation_count == 0 || over(entity_count) || over(relation_count) {
        return forget(conn, tenant, user).await;
    }
    let entities: Vec<EntityRow> = sqlx::query_as!(
        EntityRow,
        r#"SELECT id, name, norm_name, type = 'person' AS "person!", aliases, embedding::vector AS "vector?: pgvector::Vector" FROM entities
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' ORDER BY id LIMIT $3"#,
        tenant.as_str(),
        user.as_str(),
        limit + 1
    )
    .fetch_all(&mut *conn)
    .await?;
    let relations: Vec<RelationRow> = sqlx::query_as!(
        RelationRow,
        r#"SELECT id, subject_id, object_id, predicate, fact, valid_from, valid_to, updated_at, source_event_ids,
                embedding::vector AS "vector?: pgvector::Vector"
           FROM relations WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' ORDER BY id LIMIT $3"#,
        tenant.as_str(),
        user.as_str(),
        limit + 1
    )
    .fetch_all(&mut *conn)
    .await?;
    // Changed since the count by another transaction: the same rule.
    if relations.is_empty() || over(entities.len() as i64) || over(relations.len() as i64) {
        forget(conn, tenant, user).await?;
        return Ok(());
    }
    sqlx::query!(
        "INSERT INTO user_graphs (tenant_id, user_id, body) VALUES ($1, $2, $3)
         ON CONFLICT (tenant_id, user_id) DO UPDATE SET body = EXCLUDED.body, built_at = now()",
        tenant.as_str(),
        user.as_str(),
        value(&entities, &relations)
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes the user's graph row.
pub async fn forget(conn: &mut PgConnection, tenant: &TenantId, user: &UserId) -> sqlx::Result<()> {
    sqlx::query!("DELETE FROM user_graphs WHERE tenant_id = $1 AND user_id = $2", tenant.as_str(), user.as_str())
        .execute(conn)
        .await?;
    Ok(())
}
