//! Access statistics without write latency: every memory a lookup serves is counted
//! here, in memory, and the counts reach `memory_access` in batches — every
//! `search.access_flush_ms`, and on shutdown — so lookups stay read-only SQL and can
//! run on a read replica.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::memories::{self, access::Counted};
use engram_base::db::begin_tenant_tx;
use engram_base::domain::{TenantId, UserId};

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

/// Writes one tenant's counts. One flush of a tenant
/// runs at a time (a transaction lock on the tenant's flush key): two replicas flushing
/// counts of the same memories at once would otherwise lock their rows in whatever order
/// each plan meets them (a bitmap scan's is the heap's) and could wait for each other in
/// a cycle. Waiting for the other flush costs nothing a lookup sees; locking the rows in
/// one order first, by a statement of its own, cost as much as the update again.
async fn write(pool: &PgPool, tenant: &TenantId, batch: &Pending) -> sqlx::Result<usize> {
    let rows: Vec<Counted> = batch
        .iter()
        .map(|((_, memory), (user, count, last))| Counted {
            memory: *memory,
            user: user.as_str(),
            count: *count,
            last: *last,
        })
        .collect();
    let mut tx = begin_tenant_tx(pool, tenant).await?;
    // Seed 2 keeps the key apart from ingest's session locks (0) and users' life locks (1).
    sqlx::query!("SELECT FROM pg_advisory_xact_lock(hashtextextended($1, 2))", tenant.as_str())
        .execute(&mut *tx)
        .await?;
    // Under the users' life locks, counts of memories forgotten meanwhile are dropped.
    let mut held: Vec<&str> = rows.iter().map(|row| row.user).collect();
    held.sort_unstable();
    held.dedup();
    crate::users::hold(&mut tx, tenant, &held).await?;
    let written = memories::access::add(&mut tx, tenant, &rows).await?;
    tx.commit().await?;
    Ok(written as usize)
}
