//! Access counts (`memory_access`), which a memory's decay score reads: added in
//! batches by the lookups' recorder (`crate::access`), moved or removed with the memory
//! by `lifecycle` and `edit`.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use engram_base::domain::TenantId;

/// How often a memory was served since the last flush, to whom, and when last.
pub struct Counted<'a> {
    pub memory: Uuid,
    pub user: &'a str,
    pub count: i32,
    pub last: DateTime<Utc>,
}

/// Adds counts to the memories' rows; returns how many rows were written. A memory
/// counted before has its row updated (one heap-only update); only a memory counted for
/// the first time is checked to still exist and inserted — the check and the insert's
/// conflict test cost twice the update, and in a steady state almost every count is of a
/// memory counted before.
pub async fn add(conn: &mut PgConnection, tenant: &TenantId, counted: &[Counted<'_>]) -> sqlx::Result<i64> {
    let mut rows: Vec<&Counted> = counted.iter().collect();
    // Sorted as PostgreSQL sorts uuids (bytewise, as `Uuid` does), for the insert.
    rows.sort_unstable_by_key(|row| row.memory);
    let ids: Vec<Uuid> = rows.iter().map(|row| row.memory).collect();
    let users: Vec<&str> = rows.iter().map(|row| row.user).collect();
    let counts: Vec<i32> = rows.iter().map(|row| row.count).collect();
    let times: Vec<DateTime<Utc>> = rows.iter().map(|row| row.last).collect();
    let written: i64 = sqlx::query_scalar!(
        r#"WITH batch AS (
            SELECT * FROM unnest($2::uuid[], $3::text[], $4::int[], $5::timestamptz[]) AS x(id, u, n, at)
         ), counted AS (
            UPDATE memory_access a
               SET access_count = a.access_count + b.n, last_accessed_at = greatest(a.last_accessed_at, b.at)
              FROM batch b
             WHERE a.tenant_id = $1 AND a.memory_id = ANY($2) AND a.memory_id = b.id
            RETURNING a.memory_id
         ), first AS (
            INSERT INTO memory_access (tenant_id, memory_id, user_id, access_count, last_accessed_at)
            SELECT $1, x.id, x.u, x.n, x.at FROM batch x
             WHERE NOT EXISTS (SELECT FROM counted c WHERE c.memory_id = x.id)
               AND EXISTS (SELECT FROM memories m WHERE m.tenant_id = $1 AND m.id = x.id)
             ORDER BY x.id
            ON CONFLICT (tenant_id, memory_id) DO UPDATE
               SET access_count = memory_access.access_count + excluded.access_count,
                   last_accessed_at = greatest(memory_access.last_accessed_at, excluded.last_accessed_at)
            RETURNING 1
         )
         SELECT (SELECT count(*) FROM counted) + (SELECT count(*) FROM first) AS "written!""#,
        tenant.as_str(),
        &ids,
        &users as _,
        &counts,
        &times
    )
    .fetch_one(conn)
    .await?;
    Ok(written)
}
