//! Webhooks: a tenant's subscriptions, the outbox of deliveries not yet made and the
//! record of attempts. A change is put in the outbox by the change's own transaction —
//! by the database's triggers for memories and failed runs (migration
//! `data_in_and_out`), by [`user_deleted`] for a deleted user — so no change is lost to
//! a crash between it and its delivery. [`deliver`] sends them.
//!
//! This module is the only writer of `webhooks`, `webhook_outbox` (besides the
//! triggers) and `webhook_deliveries`.

pub mod deliver;

use chrono::{DateTime, Utc};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use utoipa::ToSchema;
use uuid::Uuid;

use engram_base::domain::{TenantId, UserId};

/// What a subscriber can be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum Event {
    #[serde(rename = "memory.created")]
    MemoryCreated,
    #[serde(rename = "memory.updated")]
    MemoryUpdated,
    #[serde(rename = "memory.deleted")]
    MemoryDeleted,
    #[serde(rename = "memory.superseded")]
    MemorySuperseded,
    #[serde(rename = "user.deleted")]
    UserDeleted,
    #[serde(rename = "job.failed")]
    JobFailed,
}

impl Event {
    pub const ALL: [Self; 6] = [
        Self::MemoryCreated,
        Self::MemoryUpdated,
        Self::MemoryDeleted,
        Self::MemorySuperseded,
        Self::UserDeleted,
        Self::JobFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::MemoryCreated => "memory.created",
            Self::MemoryUpdated => "memory.updated",
            Self::MemoryDeleted => "memory.deleted",
            Self::MemorySuperseded => "memory.superseded",
            Self::UserDeleted => "user.deleted",
            Self::JobFailed => "job.failed",
        }
    }

    /// Whether a delivery of it carries the memory's content.
    pub fn carries_content(self) -> bool {
        matches!(self, Self::MemoryCreated | Self::MemoryUpdated)
    }
}

/// A subscription as listed: never its secret.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, ToSchema)]
pub struct Webhook {
    pub id: Uuid,
    pub url: String,
    #[schema(value_type = Vec<Event>)]
    pub events: Vec<String>,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
    /// Deliveries waiting in the outbox.
    pub pending: i64,
    /// The oldest waiting delivery's time, if any waits.
    pub oldest_pending_at: Option<DateTime<Utc>>,
}

/// A new subscription, with the secret that signs its deliveries (shown only here).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CreatedWebhook {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<Event>,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
    /// HMAC-SHA256 key of the `Engram-Signature` header; keep it, it is not shown again.
    pub secret: String,
}

/// One attempt to deliver.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, ToSchema)]
pub struct Delivery {
    /// The delivery's id, as its body's `id` carries it: the same on every attempt.
    pub delivery_id: i64,
    pub event: String,
    pub attempt: i32,
    /// `delivered`, `failed` (to be tried again), `expired` (given up after 24 hours) or
    /// `refused` (the host is no longer allowed).
    pub outcome: String,
    pub status_code: Option<i32>,
    pub error: Option<String>,
    pub duration_ms: i32,
    pub attempted_at: DateTime<Utc>,
}

/// Stores a subscription of `tenant` and makes its secret.
pub async fn create(
    conn: &mut PgConnection,
    tenant: &TenantId,
    url: &str,
    events: &[Event],
    description: Option<&str>,
) -> sqlx::Result<CreatedWebhook> {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    let secret = format!("whsec_{}", deliver::hex(&bytes));
    let id = Uuid::now_v7();
    let names: Vec<&str> = events.iter().map(|e| e.as_str()).collect();
    let created_at: DateTime<Utc> = sqlx::query_scalar!(
        "INSERT INTO webhooks (tenant_id, id, url, events, secret, description) VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING created_at",
        tenant.as_str(),
        id,
        url,
        &names as _,
        &secret,
        description
    )
    .fetch_one(conn)
    .await?;
    Ok(CreatedWebhook {
        id,
        url: url.to_owned(),
        events: events.to_vec(),
        description: description.map(str::to_owned),
        created_at,
        secret,
    })
}

/// The tenant's subscriptions, oldest first, with what waits for each.
pub async fn list(conn: &mut PgConnection, tenant: &TenantId) -> sqlx::Result<Vec<Webhook>> {
    sqlx::query_as!(
        Webhook,
        r#"SELECT w.id, w.url, w.events, w.description, w.created_at,
                count(o.id) AS "pending!", min(o.created_at) AS "oldest_pending_at?"
           FROM webhooks w LEFT JOIN webhook_outbox o ON o.tenant_id = w.tenant_id AND o.webhook_id = w.id
          WHERE w.tenant_id = $1
          GROUP BY w.tenant_id, w.id ORDER BY w.created_at, w.id"#,
        tenant.as_str()
    )
    .fetch_all(conn)
    .await
}

/// Removes a subscription with what waits for it and its record; whether it existed.
pub async fn delete(conn: &mut PgConnection, tenant: &TenantId, id: Uuid) -> sqlx::Result<bool> {
    sqlx::query!("DELETE FROM webhook_outbox WHERE tenant_id = $1 AND webhook_id = $2", tenant.as_str(), id)
        .execute(&mut *conn)
        .await?;
    sqlx::query!("DELETE FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2", tenant.as_str(), id)
        .execute(&mut *conn)
        .await?;
    let done = sqlx::query!("DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2", tenant.as_str(), id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// The subscription's latest attempts, newest first; `None` when it is not the tenant's.
pub async fn deliveries(
    conn: &mut PgConnection,
    tenant: &TenantId,
    id: Uuid,
    limit: i64,
) -> sqlx::Result<Option<Vec<Delivery>>> {
    let exists: bool = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT FROM webhooks WHERE tenant_id = $1 AND id = $2) AS "exists!""#,
        tenant.as_str(),
        id
    )
    .fetch_one(&mut *conn)
    .await?;
    if !exists {
        return Ok(None);
    }
    let found = sqlx::query_as!(
        Delivery,
        "SELECT delivery_id, event, attempt, outcome, status_code, error, duration_ms, attempted_at
           FROM webhook_deliveries WHERE tenant_id = $1 AND webhook_id = $2 ORDER BY id DESC LIMIT $3",
        tenant.as_str(),
        id,
        limit
    )
    .fetch_all(conn)
    .await?;
    Ok(Some(found))
}

/// In the deletion's transaction, after the user's rows are gone (the outbox's among
/// them): a `user.deleted` for each subscriber to it.
pub async fn user_deleted(conn: &mut PgConnection, tenant: &TenantId, user: &UserId) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO webhook_outbox (tenant_id, webhook_id, event, user_id)
         SELECT tenant_id, id, 'user.deleted', $2 FROM webhooks WHERE tenant_id = $1 AND 'user.deleted' = ANY (events)",
        tenant.as_str(),
        user.as_str()
    )
    .execute(conn)
    .await?;
    Ok(())
}
