//! Access statistics without write latency: every memory a lookup serves is counted
//! here, in memory, and the counts reach `memory_access` in batches — every
//! `search.access_flush_ms`, and on shutdown — so lookups stay read-only SQL and can
//! run on a read replica.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::db::begin_tenant_tx;
use crate::domain::{TenantId, UserId};

/// Buffered counts: (tenant, memory) → (user, accesses, last access).
type Pending = HashMap<(TenantId, Uuid), (UserId, i32, DateTime<Utc>)>;

#[derive(Default)]
pub struct AccessRecorder {
    pending: Mutex<Pending>,
}

impl AccessRecorder {
    pub fn record(&self, tenant: &TenantId, user: &UserId, ids: impl IntoIterator<Item = Uuid>, at: DateTime<Utc>) {
        let mut pending = self.pending.lock().expect("access lock");
        for id in ids {
            let entry = pending.entry((tenant.clone(), id)).or_insert((user.clone(), 0, at));
            entry.1 += 1;
            entry.2 = entry.2.max(at);
        }
    }

    /// Drops the buffered counts of a forgotten user. (Another replica's buffer may
    /// still hold some: the flush writes counts only for memories that still exist.)
    pub fn forget_user(&self, tenant: &TenantId, user: &UserId) {
        self.pending.lock().expect("access lock").retain(|(t, _), (u, ..)| !(t == tenant && u == user));
    }

    pub fn pending(&self) -> usize {
        self.pending.lock().expect("access lock").len()
    }

    /// Writes the buffered counts, one statement per tenant; returns the memories updated.
    /// Counts that cannot be written are put back for the next flush.
    pub async fn flush(&self, pool: &PgPool) -> sqlx::Result<usize> {
        let drained: Pending = std::mem::take(&mut *self.pending.lock().expect("access lock"));
        let mut by_tenant: HashMap<TenantId, Pending> = HashMap::new();
        for (key, value) in drained {
            by_tenant.entry(key.0.clone()).or_default().insert(key, value);
        }
        let mut updated = 0;
        for (tenant, batch) in by_tenant {
            match write(pool, &tenant, &batch).await {
                Ok(n) => updated += n,
                Err(err) => {
                    let mut pending = self.pending.lock().expect("access lock");
                    for (key, (user, count, at)) in batch {
                        let entry = pending.entry(key).or_insert((user, 0, at));
                        entry.1 += count;
                        entry.2 = entry.2.max(at);
                    }
                    return Err(err);
                }
            }
        }
        Ok(updated)
    }
}

/// Writes one tenant's counts: a memory counted before has its row updated (one heap-only
/// update); only a memory counted for the first time is checked to still exist and
/// inserted — the check and the insert's conflict test cost twice the update, and in a
/// steady state almost every count is of a memory counted before. One flush of a tenant
/// runs at a time (a transaction lock on the tenant's flush key): two replicas flushing
/// counts of the same memories at once would otherwise lock their rows in whatever order
/// each plan meets them (a bitmap scan's is the heap's) and could wait for each other in
/// a cycle. Waiting for the other flush costs nothing a lookup sees; locking the rows in
/// one order first, by a statement of its own, cost as much as the update again.
async fn write(pool: &PgPool, tenant: &TenantId, batch: &Pending) -> sqlx::Result<usize> {
    // Sorted as PostgreSQL sorts uuids (bytewise, as `Uuid` does), for the insert.
    let mut rows: Vec<_> = batch.iter().map(|((_, id), (user, count, at))| (*id, user.as_str(), *count, *at)).collect();
    rows.sort_unstable_by_key(|row| row.0);
    let ids: Vec<Uuid> = rows.iter().map(|row| row.0).collect();
    let users: Vec<&str> = rows.iter().map(|row| row.1).collect();
    let counts: Vec<i32> = rows.iter().map(|row| row.2).collect();
    let times: Vec<DateTime<Utc>> = rows.iter().map(|row| row.3).collect();
    let mut tx = begin_tenant_tx(pool, tenant).await?;
    // Seed 2 keeps the key apart from ingest's session locks (0) and users' life locks (1).
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 2))")
        .bind(tenant.as_str())
        .execute(&mut *tx)
        .await?;
    // Under the users' life locks, counts of memories forgotten meanwhile are dropped.
    let mut held: Vec<&str> = users.clone();
    held.sort_unstable();
    held.dedup();
    crate::users::hold(&mut tx, tenant, &held).await?;
    let written: i64 = sqlx::query_scalar(
        "WITH batch AS (
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
         SELECT (SELECT count(*) FROM counted) + (SELECT count(*) FROM first)",
    )
    .bind(tenant.as_str())
    .bind(&ids)
    .bind(&users)
    .bind(&counts)
    .bind(&times)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(written as usize)
}
