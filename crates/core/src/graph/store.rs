//! Writing the graph: who writes ([`Writer`]: the user, the embedder, the aliases and the
//! change's author), what a sentence's relations came to, the `graph_history` row every
//! change writes in the caller's transaction, forgetting and purging. Resolving a mention
//! to an entity is [`super::resolve`]'s, stating a relation [`super::relate`]'s, merging
//! and undoing a merge [`super::merge`]'s.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use super::{Action, Triple};
use crate::memories::Change;
use engram_base::domain::{Owner, TenantId, UserId};
use engram_base::models::Embedder;
use engram_language::relations::names::Aliases;

/// Where graph writes happen: the user, the embedder, the aliases and who is writing.
pub struct Writer<'a> {
    pub tenant: &'a TenantId,
    pub user: &'a UserId,
    pub embedder: &'a Embedder,
    pub aliases: &'a Aliases,
    pub merge_similarity: f32,
    pub change: Change,
}

/// What one sentence's relations came to: entities and relations created, refreshed, ended.
#[derive(Debug, Default, Clone, Copy)]
pub struct Written {
    pub entities_created: i64,
    pub relations_created: i64,
    pub relations_refreshed: i64,
    pub relations_ended: i64,
}

/// The turn a relation is stated in.
pub struct Said<'a> {
    pub event_id: Uuid,
    pub at: DateTime<Utc>,
    pub sentence: &'a str,
    /// The fact stored from the same sentence, if any.
    pub memory_id: Option<Uuid>,
    pub confidence: f32,
}

impl Writer<'_> {
    /// States `triples` as said in `said`; a named user renames the user's own entity first.
    pub async fn write(
        &self,
        conn: &mut PgConnection,
        said: &Said<'_>,
        user_name: Option<&str>,
        triples: &[Triple],
    ) -> anyhow::Result<Written> {
        let mut written = Written::default();
        if let Some(name) = user_name {
            self.name_user(conn, name, said.at, &mut written).await?;
        }
        for triple in triples {
            let subject = self.resolve(conn, &triple.subject, said.at, &mut written).await?;
            let object = self.resolve(conn, &triple.object, said.at, &mut written).await?;
            if subject == object {
                continue;
            }
            let ended = match &triple.ended {
                Some(old) => self.find(conn, old).await?,
                None => None,
            };
            self.relate(conn, said, subject, triple.predicate, object, ended, &mut written).await?;
        }
        Ok(written)
    }
}

/// What a history row is about.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    Entity(Uuid),
    Relation(Uuid),
}

/// One `graph_history` row.
pub async fn record(
    conn: &mut PgConnection,
    owner: Owner<'_>,
    target: Target,
    action: Action,
    before: Option<Value>,
    after: Option<Value>,
    change: &Change,
) -> sqlx::Result<()> {
    let Owner { tenant, user } = owner;
    let (entity, relation) = match target {
        Target::Entity(id) => (Some(id), None),
        Target::Relation(id) => (None, Some(id)),
    };
    sqlx::query!(
        "INSERT INTO graph_history (tenant_id, id, user_id, entity_id, relation_id, action, before, after, reason,
                                    job_run_id, actor)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        tenant.as_str(),
        Uuid::now_v7(),
        user.as_str(),
        entity,
        relation,
        action as _,
        before,
        after,
        &change.reason,
        change.run_id,
        &change.actor
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes the user's graph; returns the rows removed from `user_graphs`,
/// `graph_history`, `relations` and `entities`.
pub async fn forget_user(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
) -> sqlx::Result<[(&'static str, u64); 4]> {
    engram_base::db::delete_user_rows(conn, tenant, user, ["user_graphs", "graph_history", "relations", "entities"])
        .await
}

/// Hard-deletes the user's relations superseded before `before` and entities merged
/// before it (with their history) that no relation names any more.
pub async fn purge(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    before: DateTime<Utc>,
) -> sqlx::Result<i64> {
    let (relations, entities): (i64, i64) = sqlx::query!(
        r#"WITH gone AS (
            DELETE FROM relations WHERE tenant_id = $1 AND user_id = $2 AND status IN ('superseded', 'deleted')
               AND updated_at < $3 RETURNING id
         ), unnamed AS (
            DELETE FROM entities e WHERE e.tenant_id = $1 AND e.user_id = $2 AND e.status IN ('merged', 'deleted')
               AND e.updated_at < $3
               AND NOT EXISTS (SELECT FROM relations r WHERE r.tenant_id = $1 AND (r.subject_id = e.id OR r.object_id = e.id)
                                  AND r.id NOT IN (SELECT id FROM gone))
            RETURNING id
         ), history AS (
            DELETE FROM graph_history WHERE tenant_id = $1
               AND (relation_id IN (SELECT id FROM gone) OR entity_id IN (SELECT id FROM unnamed)) RETURNING 1
         )
         SELECT (SELECT count(*) FROM gone) AS "relations!", (SELECT count(*) FROM unnamed) + 0 * (SELECT count(*) FROM history) AS "entities!""#,
        tenant.as_str(),
        user.as_str(),
        before
    )
    .map(|r| (r.relations, r.entities))
    .fetch_one(conn)
    .await?;
    Ok(relations + entities)
}
