//! Listings of a user's raw turns, sessions (level-1 summaries) and period summaries
//! (level 2), latest first, as the API serves them, read on the read pool; `summaries`
//! writes the summaries.

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use uuid::Uuid;

use engram_base::db::{Database, begin_tenant_tx};
use engram_base::domain::{TenantId, UserId};

pub mod summaries;

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
    let rows = sqlx::query_as!(
        Session,
        "SELECT session_id, started_at, last_event_at, event_count, ended_at, summary, summary_event_ids,
                summarized_at, archived_at
           FROM sessions WHERE tenant_id = $1 AND user_id = $2
          ORDER BY last_event_at DESC LIMIT $3",
        tenant.as_str(),
        user.as_str(),
        limit
    )
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
    let rows = sqlx::query_as!(
        PeriodSummary,
        "SELECT id, period, period_start, period_end, summary, session_ids, created_at, updated_at
           FROM period_summaries WHERE tenant_id = $1 AND user_id = $2
          ORDER BY period_start DESC LIMIT $3",
        tenant.as_str(),
        user.as_str(),
        limit
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows)
}

/// One raw turn as a listing shows it.
#[derive(Debug, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Turn {
    pub id: Uuid,
    pub session_id: String,
    pub role: engram_base::domain::Role,
    pub content: String,
    pub created_at: DateTime<Utc>,
}

/// The user's turns newest first (of one session if `session` is given), `limit` of
/// them, those older than the turn `before` when it is given; an unknown `before`
/// yields nothing.
pub async fn turns(
    db: &Database,
    tenant: &TenantId,
    user: &UserId,
    session: Option<&str>,
    before: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<Turn>> {
    let mut tx = begin_tenant_tx(&db.read_pool, tenant).await?;
    let rows = sqlx::query_as!(
        Turn,
        r#"SELECT id, session_id, role AS "role: engram_base::domain::Role", content, created_at
           FROM events e
          WHERE tenant_id = $1 AND user_id = $2 AND ($3::text IS NULL OR session_id = $3)
            AND ($4::uuid IS NULL OR (created_at, id) < (SELECT b.created_at, b.id FROM events b
                                                         WHERE b.tenant_id = $1 AND b.user_id = $2 AND b.id = $4))
          ORDER BY created_at DESC, id DESC LIMIT $5"#,
        tenant.as_str(),
        user.as_str(),
        session,
        before,
        limit
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows)
}
