//! Listings of a user's sessions (level-1 summaries) and period summaries (level 2),
//! latest first, as the API serves them. Read on the read pool; the jobs write them.

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::db::{Database, begin_tenant_tx};
use crate::domain::{TenantId, UserId};

#[derive(Debug, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Session {
    pub session_id: String,
    pub started_at: DateTime<Utc>,
    pub last_event_at: DateTime<Utc>,
    pub event_count: i32,
    pub ended_at: Option<DateTime<Utc>>,
    pub summary: Option<String>,
    pub summary_event_ids: Vec<Uuid>,
    pub summarized_at: Option<DateTime<Utc>>,
    pub archived_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct PeriodSummary {
    pub id: Uuid,
    /// `week` or `month`
    pub period: String,
    pub period_start: NaiveDate,
    pub period_end: NaiveDate,
    pub summary: String,
    pub session_ids: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The user's latest `limit` sessions with their summaries.
pub async fn latest(db: &Database, tenant: &TenantId, user: &UserId, limit: i64) -> sqlx::Result<Vec<Session>> {
    let mut tx = begin_tenant_tx(&db.read_pool, tenant).await?;
    let rows = sqlx::query_as(
        "SELECT session_id, started_at, last_event_at, event_count, ended_at, summary, summary_event_ids,
                summarized_at, archived_at
           FROM sessions WHERE tenant_id = $1 AND user_id = $2
          ORDER BY last_event_at DESC LIMIT $3",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(limit)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows)
}

/// The user's latest `limit` period summaries.
pub async fn latest_periods(
    db: &Database,
    tenant: &TenantId,
    user: &UserId,
    limit: i64,
) -> sqlx::Result<Vec<PeriodSummary>> {
    let mut tx = begin_tenant_tx(&db.read_pool, tenant).await?;
    let rows = sqlx::query_as(
        "SELECT id, period, period_start, period_end, summary, session_ids, created_at, updated_at
           FROM period_summaries WHERE tenant_id = $1 AND user_id = $2
          ORDER BY period_start DESC LIMIT $3",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(limit)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows)
}
