//! Access statistics without write latency: every memory a lookup serves is counted
//! here, in memory, and the counts reach `access_count` / `last_accessed_at` in
//! batches — every `search.access_flush_ms`, and on shutdown — so lookups stay
//! read-only SQL and can run on a read replica.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::db::begin_tenant_tx;
use crate::domain::TenantId;

#[derive(Default)]
pub struct AccessRecorder {
    pending: Mutex<HashMap<(TenantId, Uuid), (i32, DateTime<Utc>)>>,
}

impl AccessRecorder {
    pub fn record(&self, tenant: &TenantId, ids: impl IntoIterator<Item = Uuid>, at: DateTime<Utc>) {
        let mut pending = self.pending.lock().expect("access lock");
        for id in ids {
            let entry = pending.entry((tenant.clone(), id)).or_insert((0, at));
            entry.0 += 1;
            entry.1 = entry.1.max(at);
        }
    }

    pub fn pending(&self) -> usize {
        self.pending.lock().expect("access lock").len()
    }

    /// Writes the buffered counts, one statement per tenant; returns the memories updated.
    /// Counts that cannot be written are put back for the next flush.
    pub async fn flush(&self, pool: &PgPool) -> sqlx::Result<usize> {
        let drained: Vec<_> = std::mem::take(&mut *self.pending.lock().expect("access lock")).into_iter().collect();
        let mut by_tenant: HashMap<TenantId, (Vec<Uuid>, Vec<i32>, Vec<DateTime<Utc>>)> = HashMap::new();
        for ((tenant, id), (count, at)) in drained {
            let batch = by_tenant.entry(tenant).or_default();
            batch.0.push(id);
            batch.1.push(count);
            batch.2.push(at);
        }
        let mut updated = 0;
        for (tenant, (ids, counts, times)) in by_tenant {
            match write(pool, &tenant, &ids, &counts, &times).await {
                Ok(n) => updated += n,
                Err(err) => {
                    let mut pending = self.pending.lock().expect("access lock");
                    for ((id, count), at) in ids.into_iter().zip(counts).zip(times) {
                        let entry = pending.entry((tenant.clone(), id)).or_insert((0, at));
                        entry.0 += count;
                        entry.1 = entry.1.max(at);
                    }
                    return Err(err);
                }
            }
        }
        Ok(updated)
    }
}

async fn write(pool: &PgPool, tenant: &TenantId, ids: &[Uuid], counts: &[i32], times: &[DateTime<Utc>]) -> sqlx::Result<usize> {
    let mut tx = begin_tenant_tx(pool, tenant).await?;
    let done = sqlx::query(
        "UPDATE memories m SET access_count = m.access_count + a.n,
                last_accessed_at = greatest(m.last_accessed_at, a.at)
           FROM unnest($2::uuid[], $3::int[], $4::timestamptz[]) AS a(id, n, at)
          WHERE m.tenant_id = $1 AND m.id = a.id",
    )
    .bind(tenant.as_str())
    .bind(ids)
    .bind(counts)
    .bind(times)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(done.rows_affected() as usize)
}
