//! Every change to a memory after it was created: refreshed by a restatement, merged
//! into a duplicate, superseded, evicted, restored, marked less certain by a
//! correction, purged. Each writes its `memory_history` row in one format — action,
//! actor, run, reason, before and after — in the caller's transaction.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{Action, Status};
use engram_base::domain::{Owner, TenantId, UserId};

/// Who changes a memory and why: `job:<name>` with its run, `key:<id>`, or the source
/// of a correction.
#[derive(Debug, Clone)]
pub struct Change {
    pub actor: String,
    pub run_id: Option<Uuid>,
    pub reason: String,
}

impl Change {
    pub fn by(actor: impl Into<String>, run_id: Option<Uuid>, reason: impl Into<String>) -> Self {
        Self { actor: actor.into(), run_id, reason: reason.into() }
    }
}

/// One history row.
pub(super) async fn record(
    conn: &mut PgConnection,
    owner: Owner<'_>,
    memory: Uuid,
    action: Action,
    before: Option<Value>,
    after: Option<Value>,
    change: &Change,
) -> sqlx::Result<()> {
    let Owner { tenant, user } = owner;
    sqlx::query!("INSERT INTO memory_history (tenant_id, id, memory_id, user_id, action, before, after, reason, job_run_id, actor)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", tenant.as_str(), Uuid::now_v7(), memory, user.as_str(), action as _, before, after, &change.reason, change.run_id, &change.actor)
    .execute(conn)
    .await?;
    Ok(())
}

/// The user said it again: `event` joins the memory's sources.
pub async fn refresh(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    id: Uuid,
    event: Uuid,
    change: &Change,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE memories SET updated_at = now(), source_event_ids = array_append(source_event_ids, $3)
          WHERE tenant_id = $1 AND id = $2",
        tenant.as_str(),
        id,
        event
    )
    .execute(&mut *conn)
    .await?;
    record(
        conn,
        Owner::new(tenant, user),
        id,
        Action::Updated,
        None,
        Some(json!({"source_event_ids": [event]})),
        change,
    )
    .await
}

/// A served memory was reported wrong or outdated: its confidence halves (not below
/// 0.05), and the consolidation jobs resolve the rest.
pub async fn doubt(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    id: Uuid,
    change: &Change,
) -> sqlx::Result<()> {
    let (before, after): (f32, f32) = sqlx::query!(
        r#"UPDATE memories m SET confidence = greatest(0.05, m.confidence * 0.5), updated_at = now()
           FROM memories old WHERE old.tenant_id = m.tenant_id AND old.id = m.id
            AND m.tenant_id = $1 AND m.id = $2
         RETURNING old.confidence AS "before!", m.confidence AS "after!""#,
        tenant.as_str(),
        id
    )
    .map(|r| (r.before, r.after))
    .fetch_one(&mut *conn)
    .await?;
    let (before, after) = (json!({"confidence": before}), json!({"confidence": after}));
    record(conn, Owner::new(tenant, user), id, Action::Updated, Some(before), Some(after), change).await
}

/// Folds `other` into `survivor`: the higher importance, all sources, all accesses;
/// `other` becomes `merged`. `content`, when given, replaces the survivor's text.
pub async fn merge(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    survivor: Uuid,
    other: Uuid,
    content: Option<&str>,
    change: &Change,
) -> sqlx::Result<()> {
    sqlx::query!(
        "WITH o AS (SELECT importance, source_event_ids FROM memories WHERE tenant_id = $1 AND id = $3)
         UPDATE memories s SET importance = greatest(s.importance, o.importance),
                source_event_ids = ARRAY(SELECT DISTINCT e FROM unnest(s.source_event_ids || o.source_event_ids) e),
                content = coalesce($4, s.content), updated_at = now()
           FROM o WHERE s.tenant_id = $1 AND s.id = $2",
        tenant.as_str(),
        survivor,
        other,
        content
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "WITH o AS (SELECT access_count, last_accessed_at FROM memory_access WHERE tenant_id = $1 AND memory_id = $3)
         INSERT INTO memory_access (tenant_id, memory_id, user_id, access_count, last_accessed_at)
         SELECT $1, $2, $4, o.access_count, o.last_accessed_at FROM o
         ON CONFLICT (tenant_id, memory_id) DO UPDATE
            SET access_count = memory_access.access_count + excluded.access_count,
                last_accessed_at = greatest(memory_access.last_accessed_at, excluded.last_accessed_at)",
        tenant.as_str(),
        survivor,
        other,
        user.as_str()
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!("UPDATE memories SET status = 'merged', superseded_by = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2", tenant.as_str(), other, survivor)
    .execute(&mut *conn)
    .await?;
    let merged_into = json!({"status": Status::Merged, "superseded_by": survivor});
    record(
        conn,
        Owner::new(tenant, user),
        other,
        Action::Merged,
        Some(json!({"status": Status::Active})),
        Some(merged_into),
        change,
    )
    .await?;
    let absorbed = json!({"absorbed": other, "content": content});
    record(conn, Owner::new(tenant, user), survivor, Action::Updated, None, Some(absorbed), change).await
}

/// Marks `old` superseded by `new` as of `at` (its validity ends there; the row stays
/// for `as_of` searches and history). False if `old` was not active.
pub async fn supersede(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    old: Uuid,
    new: Uuid,
    at: DateTime<Utc>,
    change: &Change,
) -> sqlx::Result<bool> {
    let done = sqlx::query!("UPDATE memories SET status = 'superseded', valid_to = greatest($4, valid_from), superseded_by = $3, updated_at = now()
          WHERE tenant_id = $1 AND id = $2 AND status = 'active'", tenant.as_str(), old, new, at)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    let after = json!({"status": Status::Superseded, "superseded_by": new, "valid_to": at});
    record(
        conn,
        Owner::new(tenant, user),
        old,
        Action::Superseded,
        Some(json!({"status": Status::Active})),
        Some(after),
        change,
    )
    .await?;
    Ok(true)
}

/// Evicts one active, unpinned memory; false if it was not.
pub async fn evict(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    id: Uuid,
    change: &Change,
) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "UPDATE memories SET status = 'evicted', updated_at = now()
          WHERE tenant_id = $1 AND id = $2 AND status = 'active' AND NOT pinned",
        tenant.as_str(),
        id
    )
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    let (before, after) = (json!({"status": Status::Active}), json!({"status": Status::Evicted}));
    record(conn, Owner::new(tenant, user), id, Action::Evicted, Some(before), Some(after), change).await?;
    Ok(true)
}

/// A memory to evict in a batch, with what its history row says of it.
pub struct Eviction {
    pub id: Uuid,
    pub reason: String,
    /// Recorded as the history row's `after`, beside the new status (score, rank …).
    pub details: Value,
}

/// Evicts the user's `victims` in one statement, each with its history row, as of `at`;
/// returns how many were evicted (memories no longer active are left alone).
pub async fn evict_all(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    victims: &[Eviction],
    at: DateTime<Utc>,
    actor: &str,
    run_id: Option<Uuid>,
) -> sqlx::Result<i64> {
    if victims.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Uuid> = victims.iter().map(|v| v.id).collect();
    let reasons: Vec<&str> = victims.iter().map(|v| v.reason.as_str()).collect();
    let details: Vec<&Value> = victims.iter().map(|v| &v.details).collect();
    sqlx::query_scalar!(r#"WITH v AS (SELECT * FROM unnest($3::uuid[], $4::text[], $5::jsonb[]) AS v(id, reason, details)),
         evicted AS (
            UPDATE memories m SET status = 'evicted', updated_at = $6
              FROM v WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.id = v.id AND m.status = 'active'
            RETURNING m.id, v.reason, v.details
         ), history AS (
            INSERT INTO memory_history (tenant_id, id, memory_id, user_id, action, before, after, reason, job_run_id, actor)
            SELECT $1, uuidv7(), e.id, $2, 'evicted', jsonb_build_object('status', 'active'),
                   jsonb_build_object('status', 'evicted') || e.details, e.reason, $7, $8
              FROM evicted e
         )
         SELECT count(*) AS "evicted!" FROM evicted"#, tenant.as_str(), user.as_str(), &ids, &reasons as _, &details as _, at, run_id, actor)
    .fetch_one(conn)
    .await
}

/// Deletes every memory of a user being forgotten, with their history and access rows;
/// returns the rows removed from `memory_access`, `memory_history` and `memories`.
pub async fn forget_user(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
) -> sqlx::Result<[(&'static str, u64); 3]> {
    engram_base::db::delete_user_rows(conn, tenant, user, ["memory_access", "memory_history", "memories"]).await
}

/// What `purge` removed.
pub struct Purged {
    pub memories: i64,
    pub history: i64,
    pub access: i64,
}

/// Hard-deletes the user's memories removed (evicted, merged, deleted) before
/// `removed_before` or superseded before `superseded_before`, with their history and
/// access rows: past retention, nothing of them is kept.
pub async fn purge(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    removed_before: DateTime<Utc>,
    superseded_before: DateTime<Utc>,
) -> sqlx::Result<Purged> {
    let (memories, history, access): (i64, i64, i64) = sqlx::query!(
        r#"WITH gone AS (
            DELETE FROM memories
             WHERE tenant_id = $1 AND user_id = $2
               AND ((status IN ('evicted', 'merged', 'deleted') AND updated_at < $3)
                    OR (status = 'superseded' AND updated_at < $4))
            RETURNING id
         ), history AS (
            DELETE FROM memory_history WHERE tenant_id = $1 AND memory_id IN (SELECT id FROM gone) RETURNING 1
         ), access AS (
            DELETE FROM memory_access WHERE tenant_id = $1 AND memory_id IN (SELECT id FROM gone) RETURNING 1
         )
         SELECT (SELECT count(*) FROM gone) AS "memories!", (SELECT count(*) FROM history) AS "history!", (SELECT count(*) FROM access) AS "access!""#,
        tenant.as_str(),
        user.as_str(),
        removed_before,
        superseded_before
    )
    .map(|r| (r.memories, r.history, r.access))
    .fetch_one(conn)
    .await?;
    Ok(Purged { memories, history, access })
}
