//! Listings of a user's sessions (level-1 summaries) and period summaries (level 2),
//! latest first, as the API serves them. Read on the read pool; the jobs write them.

use serde_json::Value;

use crate::db::{Database, begin_tenant_tx};
use crate::domain::{TenantId, UserId};

/// The user's latest `limit` sessions with their summaries, as a JSON array.
pub async fn latest(db: &Database, tenant: &TenantId, user: &UserId, limit: i64) -> sqlx::Result<Value> {
    rows(
        db,
        tenant,
        user,
        limit,
        "SELECT coalesce(jsonb_agg(s ORDER BY s.last_event_at DESC), '[]') FROM (
            SELECT session_id, started_at, last_event_at, event_count, ended_at, summary, summary_event_ids,
                   summarized_at, archived_at
              FROM sessions WHERE tenant_id = $1 AND user_id = $2
             ORDER BY last_event_at DESC LIMIT $3) s",
    )
    .await
}

/// The user's latest `limit` period summaries, as a JSON array.
pub async fn latest_periods(db: &Database, tenant: &TenantId, user: &UserId, limit: i64) -> sqlx::Result<Value> {
    rows(
        db,
        tenant,
        user,
        limit,
        "SELECT coalesce(jsonb_agg(p ORDER BY p.period_start DESC), '[]') FROM (
            SELECT id, period, period_start, period_end, summary, session_ids, created_at, updated_at
              FROM period_summaries WHERE tenant_id = $1 AND user_id = $2
             ORDER BY period_start DESC LIMIT $3) p",
    )
    .await
}

async fn rows(db: &Database, tenant: &TenantId, user: &UserId, limit: i64, sql: &'static str) -> sqlx::Result<Value> {
    let mut tx = begin_tenant_tx(&db.read_pool, tenant).await?;
    let rows =
        sqlx::query_scalar(sql).bind(tenant.as_str()).bind(user.as_str()).bind(limit).fetch_one(&mut *tx).await?;
    tx.commit().await?;
    Ok(rows)
}
