//! Reading memories: a user's listing, one memory, and its history.

use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

use super::{Action, HistoryEntry, Kind, Memory, Status};
use engram_base::domain::{Category, TenantId, UserId};

/// A memory row with its access statistics (kept in `memory_access`).
const MEMORY_SELECT: &str = "SELECT m.id, m.user_id, m.kind, m.category, m.key, m.value, m.content, m.importance, m.confidence, \
     m.status, m.pinned, m.source_event_ids, m.source_quote, m.derived_from, coalesce(a.access_count, 0) AS access_count, \
     a.last_accessed_at, m.valid_from, m.valid_to, m.superseded_by, m.embedding_model, m.created_at, m.updated_at, m.metadata \
     FROM memories m LEFT JOIN memory_access a ON a.tenant_id = m.tenant_id AND a.memory_id = m.id";

/// Filters of a memory listing; every field was validated by the caller.
#[derive(Debug, Default, Clone)]
pub struct ListFilter {
    pub category: Option<Category>,
    pub status: Option<Status>,
    pub kind: Option<Kind>,
    pub key: Option<String>,
    /// Keyset cursor: the last id of the previous page (ids are time-ordered UUIDv7).
    pub after: Option<Uuid>,
    pub limit: i64,
}

/// One page, newest first, in a stable order: rows inserted meanwhile never shift it.
pub async fn list(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    filter: &ListFilter,
) -> sqlx::Result<Vec<Memory>> {
    let mut q = QueryBuilder::<Postgres>::new(format!("{MEMORY_SELECT} WHERE m.tenant_id = "));
    q.push_bind(tenant.as_str()).push(" AND m.user_id = ").push_bind(user.as_str());
    q.push(" AND m.status = ").push_bind(filter.status.unwrap_or(Status::Active));
    if let Some(category) = &filter.category {
        q.push(" AND m.category = ").push_bind(category.as_str());
    }
    if let Some(kind) = filter.kind {
        q.push(" AND m.kind = ").push_bind(kind);
    }
    if let Some(key) = &filter.key {
        q.push(" AND m.key = ").push_bind(key.clone());
    }
    if let Some(after) = filter.after {
        q.push(" AND m.id < ").push_bind(after);
    }
    q.push(" ORDER BY m.id DESC LIMIT ").push_bind(filter.limit);
    q.build_query_as().fetch_all(conn).await
}

pub async fn get(conn: &mut PgConnection, tenant: &TenantId, user: &UserId, id: Uuid) -> sqlx::Result<Option<Memory>> {
    sqlx::query!(
        r#"SELECT m.id, m.user_id, m.kind AS "kind: Kind", m.category, m.key, m.value, m.content, m.importance,
                  m.confidence, m.status AS "status: Status", m.pinned, m.source_event_ids, m.source_quote, m.derived_from,
                  coalesce(a.access_count, 0) AS "access_count!", a.last_accessed_at AS "last_accessed_at?", m.valid_from,
                  m.valid_to, m.superseded_by, m.embedding_model, m.created_at, m.updated_at, m.metadata
             FROM memories m LEFT JOIN memory_access a ON a.tenant_id = m.tenant_id AND a.memory_id = m.id
            WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.id = $3"#,
        tenant.as_str(),
        user.as_str(),
        id
    )
    .try_map(|r| {
        Ok(Memory {
            id: r.id,
            user_id: r.user_id,
            kind: r.kind,
            category: Category::try_from(r.category).map_err(|e| sqlx::Error::Decode(e.into()))?,
            key: r.key,
            value: r.value,
            content: r.content,
            importance: r.importance,
            confidence: r.confidence,
            status: r.status,
            pinned: r.pinned,
            source_event_ids: r.source_event_ids,
            source_quote: r.source_quote,
            derived_from: r.derived_from,
            access_count: r.access_count,
            last_accessed_at: r.last_accessed_at,
            valid_from: r.valid_from,
            valid_to: r.valid_to,
            superseded_by: r.superseded_by,
            embedding_model: r.embedding_model,
            created_at: r.created_at,
            updated_at: r.updated_at,
            metadata: r.metadata,
            decay: 0.0,
        })
    })
    .fetch_optional(conn)
    .await
}

pub async fn history(conn: &mut PgConnection, tenant: &TenantId, id: Uuid) -> sqlx::Result<Vec<HistoryEntry>> {
    sqlx::query_as!(
        HistoryEntry,
        r#"SELECT id, action AS "action: Action", before, after, reason, job_run_id, actor, created_at
           FROM memory_history WHERE tenant_id = $1 AND memory_id = $2 ORDER BY created_at, id"#,
        tenant.as_str(),
        id
    )
    .fetch_all(conn)
    .await
}
