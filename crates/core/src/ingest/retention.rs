//! Raw turns past retention: the `purge` job deletes the turns of sessions archived
//! before its cutoff (their summaries stay).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use engram_base::domain::{TenantId, UserId};

/// Deletes the user's turns of sessions archived before `before`; returns how many.
pub async fn delete_archived(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    before: DateTime<Utc>,
) -> sqlx::Result<i64> {
    let deleted = sqlx::query!(
        "DELETE FROM events e USING sessions s
          WHERE e.tenant_id = $1 AND e.user_id = $2 AND s.tenant_id = $1 AND s.user_id = $2
            AND s.session_id = e.session_id AND s.archived_at < $3",
        tenant.as_str(),
        user.as_str(),
        before
    )
    .execute(conn)
    .await?
    .rows_affected();
    Ok(deleted as i64)
}
