//! Merging one entity into another (its names become aliases, its relations move over)
//! and undoing it, and `dedup`'s merging of the duplicates resolution missed.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::PgConnection;
use uuid::Uuid;

use super::Action;
use super::EntityStatus;
use super::store::{Target, record};
use crate::memories::Change;
use engram_base::domain::{Owner, TenantId, UserId};
use engram_language::relations::names::distinct;

/// Merges entity `from` into `into`: its names become aliases, its relations move
/// over (the moved ids are in the history row, so [`restore`] can move them back).
pub async fn merge(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    from: Uuid,
    into: Uuid,
    change: &Change,
) -> sqlx::Result<()> {
    let moved: Vec<(Uuid, bool, bool)> = sqlx::query!(
        r#"UPDATE relations SET subject_id = CASE WHEN subject_id = $2 THEN $3 ELSE subject_id END,
                object_id = CASE WHEN object_id = $2 THEN $3 ELSE object_id END, updated_at = now()
          WHERE tenant_id = $1 AND (subject_id = $2 OR object_id = $2)
         RETURNING id, subject_id = $3 AS "subject!", object_id = $3 AS "object!""#,
        tenant.as_str(),
        from,
        into
    )
    .map(|r| (r.id, r.subject, r.object))
    .fetch_all(&mut *conn)
    .await?;
    sqlx::query!(
        "WITH gone AS (
            UPDATE entities SET status = 'merged', merged_into = $3, updated_at = now()
             WHERE tenant_id = $1 AND id = $2 AND status = 'active' RETURNING norm_name, aliases, first_seen, last_seen
         )
         UPDATE entities e SET aliases = ARRAY(SELECT DISTINCT unnest(e.aliases || g.aliases || g.norm_name)
                                                EXCEPT SELECT e.norm_name),
                merged_from = e.merged_from || $2, first_seen = least(e.first_seen, g.first_seen),
                last_seen = greatest(e.last_seen, g.last_seen), updated_at = now()
           FROM gone g WHERE e.tenant_id = $1 AND e.id = $3",
        tenant.as_str(),
        from,
        into
    )
    .execute(&mut *conn)
    .await?;
    let subjects: Vec<Uuid> = moved.iter().filter(|(_, s, _)| *s).map(|(id, ..)| *id).collect();
    let objects: Vec<Uuid> = moved.iter().filter(|(_, _, o)| *o).map(|(id, ..)| *id).collect();
    let after = json!({"status": "merged", "merged_into": into, "moved_subjects": subjects, "moved_objects": objects});
    record(
        conn,
        Owner::new(tenant, user),
        Target::Entity(from),
        Action::Merged,
        Some(json!({"status": "active"})),
        Some(after),
        change,
    )
    .await
}

/// Why an entity cannot be restored.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("no such entity")]
    NotFound,
    #[error("the entity is not merged")]
    NotMerged,
    #[error("an active entity already has its name")]
    NameTaken,
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Undoes the merge of `id`: it is active again with the relations it had.
pub async fn restore(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    id: Uuid,
    change: &Change,
    scan_limit: i64,
) -> Result<(), RestoreError> {
    let merged: Option<(EntityStatus, Option<Uuid>, String)> = sqlx::query!(
        r#"SELECT status AS "status: EntityStatus", merged_into, norm_name FROM entities WHERE tenant_id = $1 AND user_id = $2 AND id = $3"#,
        tenant.as_str(),
        user.as_str(),
        id
    )
    .map(|r| (r.status, r.merged_into, r.norm_name))
    .fetch_optional(&mut *conn)
    .await?;
    let Some((_, Some(into), norm_name)) = merged.clone().filter(|(s, ..)| *s == EntityStatus::Merged) else {
        return Err(if merged.is_none() { RestoreError::NotFound } else { RestoreError::NotMerged });
    };
    let after: Option<Value> = sqlx::query_scalar!(
        "SELECT after FROM graph_history WHERE tenant_id = $1 AND entity_id = $2 AND action = 'merged'
          ORDER BY created_at DESC LIMIT 1",
        tenant.as_str(),
        id
    )
    .fetch_optional(&mut *conn)
    .await?
    .flatten();
    let ids = |field: &str| -> Vec<Uuid> {
        after
            .as_ref()
            .and_then(|a| a.get(field))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    };
    let taken: bool = sqlx::query_scalar!(r#"SELECT EXISTS (SELECT FROM entities WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND norm_name = $3) AS "exists!""#, tenant.as_str(), user.as_str(), &norm_name)
    .fetch_one(&mut *conn)
    .await?;
    if taken {
        return Err(RestoreError::NameTaken);
    }
    sqlx::query!("UPDATE relations SET subject_id = $3, updated_at = now() WHERE tenant_id = $1 AND id = ANY($2) AND subject_id = $4", tenant.as_str(), &ids("moved_subjects"), id, into)
        .execute(&mut *conn)
        .await?;
    sqlx::query!("UPDATE relations SET object_id = $3, updated_at = now() WHERE tenant_id = $1 AND id = ANY($2) AND object_id = $4", tenant.as_str(), &ids("moved_objects"), id, into)
        .execute(&mut *conn)
        .await?;
    sqlx::query!(
        "UPDATE entities SET merged_from = array_remove(merged_from, $2),
                aliases = array_remove(aliases, $4), updated_at = now() WHERE tenant_id = $1 AND id = $3",
        tenant.as_str(),
        id,
        into,
        &norm_name
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!("UPDATE entities SET status = 'active', merged_into = NULL, updated_at = now() WHERE tenant_id = $1 AND id = $2", tenant.as_str(), id)
        .execute(&mut *conn)
        .await?;
    let before = json!({"status": "merged", "merged_into": into});
    record(
        conn,
        Owner::new(tenant, user),
        Target::Entity(id),
        Action::Restored,
        Some(before),
        Some(json!({"status": "active"})),
        change,
    )
    .await?;
    super::snapshot::refresh(conn, tenant, user, scan_limit).await?;
    Ok(())
}

/// Merges each entity of the user's created after `since` into its nearest older one of
/// the same type, when their names' vectors are at least `threshold` alike and the names
/// are not told apart ([`distinct`]): the older stays. Nearest neighbours only, never all
/// pairs. Returns how many were merged.
pub async fn merge_duplicates(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    since: Option<DateTime<Utc>>,
    threshold: f32,
    change: &Change,
    scan_limit: i64,
) -> sqlx::Result<i64> {
    let new: Vec<(Uuid, String)> = sqlx::query!(
        "SELECT id, name FROM entities
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND NOT is_user AND embedding IS NOT NULL
            AND created_at > coalesce($3::timestamptz, '-infinity') ORDER BY created_at",
        tenant.as_str(),
        user.as_str(),
        since
    )
    .map(|r| (r.id, r.name))
    .fetch_all(&mut *conn)
    .await?;
    let mut merged = 0;
    for (id, name) in new {
        let near: Vec<(Uuid, String, f64)> = sqlx::query!(
            r#"SELECT o.id, o.name, (1 - (o.embedding <=> e.embedding))::float8 AS "similarity!" FROM entities e
               JOIN entities o ON o.tenant_id = e.tenant_id AND o.user_id = e.user_id AND o.type = e.type
                              AND o.status = 'active' AND o.id <> e.id AND o.embedding_dims = e.embedding_dims
                              AND o.first_seen <= e.first_seen
              WHERE e.tenant_id = $1 AND e.id = $2 AND e.status = 'active'
              ORDER BY o.embedding <=> e.embedding LIMIT 3"#,
            tenant.as_str(),
            id
        )
        .map(|r| (r.id, r.name, r.similarity))
        .fetch_all(&mut *conn)
        .await?;
        if let Some((into, ..)) =
            near.into_iter().find(|(_, other, similarity)| *similarity >= threshold as f64 && !distinct(&name, other))
        {
            merge(conn, tenant, user, id, into, change).await?;
            merged += 1;
        }
    }
    if merged > 0 {
        super::snapshot::refresh(conn, tenant, user, scan_limit).await?;
    }
    Ok(merged)
}
