//! `job_checkpoints`: one row per (job, user) — the unit's lock (`FOR UPDATE SKIP
//! LOCKED`), the pass that last finished it, and the backoff of a failing unit. The
//! runner's bookkeeping, in one place.

use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::job::Candidate;
use crate::users;
use engram_base::db::begin_tenant_tx;
use engram_base::domain::{TenantId, UserId};

/// Locks the user's checkpoint of `job` for this transaction, creating it if need be;
/// false when another run holds it.
pub async fn lock(conn: &mut PgConnection, tenant: &TenantId, user: &UserId, job: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar!(r#"WITH fresh AS (
            INSERT INTO job_checkpoints (tenant_id, user_id, job) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1
         )
         SELECT EXISTS (SELECT FROM fresh)
             OR EXISTS (SELECT FROM job_checkpoints WHERE tenant_id = $1 AND user_id = $2 AND job = $3 FOR UPDATE SKIP LOCKED) AS "locked!""#, tenant.as_str(), user.as_str(), job)
    .fetch_one(conn)
    .await
}

/// Marks the unit done for `pass`, forgetting earlier failures.
pub async fn done(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    job: &str,
    pass: Uuid,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE job_checkpoints SET pass_id = $4, done_at = now(), failures = 0, retry_after = NULL, last_error = NULL
          WHERE tenant_id = $1 AND user_id = $2 AND job = $3",
        tenant.as_str(),
        user.as_str(),
        job,
        pass
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The `seq` of the last event of the user's that `job` has read (its watermark), 0 before the first.
pub async fn last_seq(conn: &mut PgConnection, tenant: &TenantId, user: &UserId, job: &str) -> sqlx::Result<i64> {
    let seq: Option<i64> = sqlx::query_scalar!(r#"SELECT coalesce((state ->> 'seq')::bigint, 0) AS "seq!" FROM job_checkpoints WHERE tenant_id = $1 AND user_id = $2 AND job = $3"#, tenant.as_str(), user.as_str(), job)
    .fetch_optional(conn)
    .await?;
    Ok(seq.unwrap_or(0))
}

/// Moves `job`'s watermark for the user to `seq`.
pub async fn set_last_seq(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    job: &str,
    seq: i64,
) -> sqlx::Result<()> {
    sqlx::query!("INSERT INTO job_checkpoints (tenant_id, user_id, job, state) VALUES ($1, $2, $3, jsonb_build_object('seq', $4::bigint))
         ON CONFLICT (tenant_id, job, user_id) DO UPDATE SET state = job_checkpoints.state || jsonb_build_object('seq', $4::bigint)", tenant.as_str(), user.as_str(), job, seq)
    .execute(conn)
    .await?;
    Ok(())
}

/// Forgets earlier failures of a unit (and their backoff), for jobs that keep no
/// checkpoints of their own.
pub async fn clear(pool: &PgPool, tenant: &TenantId, user: &UserId, job: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "DELETE FROM job_checkpoints WHERE tenant_id = $1 AND user_id = $2 AND job = $3",
        tenant.as_str(),
        user.as_str(),
        job
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// The candidates this pass has not finished, least recently processed first (so a
/// budget-limited run still reaches everyone over time), and how many are waiting out
/// a backoff after failures.
pub async fn pending(
    pool: &PgPool,
    job: &str,
    candidates: &[Candidate],
    pass: Uuid,
) -> sqlx::Result<(Vec<Candidate>, i64)> {
    let (tenants, users): (Vec<&str>, Vec<&str>) = candidates.iter().map(|(t, u)| (t.as_str(), u.as_str())).unzip();
    let rows: Vec<(TenantId, UserId, bool)> = sqlx::query!(
        r#"SELECT c.t AS "t!: TenantId", c.u AS "u!: UserId", coalesce(k.retry_after > now(), false) AS "waiting!"
           FROM unnest($1::text[], $2::text[]) AS c(t, u)
           LEFT JOIN job_checkpoints k ON k.tenant_id = c.t AND k.job = $3 AND k.user_id = c.u
          WHERE k.pass_id IS DISTINCT FROM $4
          ORDER BY k.done_at NULLS FIRST, c.t, c.u"#,
        &tenants as _,
        &users as _,
        job,
        pass
    )
    .map(|r| (r.t, r.u, r.waiting))
    .fetch_all(pool)
    .await?;
    let deferred = rows.iter().filter(|(_, _, waiting)| *waiting).count() as i64;
    Ok((rows.into_iter().filter(|(_, _, waiting)| !waiting).map(|(t, u, _)| (t, u)).collect(), deferred))
}

/// A failed unit waits 1, 2, 4 … minutes (at most a day) before a run tries it again.
/// Nothing is recorded for a user forgotten meanwhile.
pub async fn record_failure(
    pool: &PgPool,
    job: &str,
    tenant: &TenantId,
    user: &UserId,
    error: &str,
) -> sqlx::Result<()> {
    let error: String = error.chars().take(500).collect();
    let mut tx = begin_tenant_tx(pool, tenant).await?;
    users::hold(&mut tx, tenant, &[user.as_str()]).await?;
    if !users::exists(&mut tx, tenant, user.as_str()).await? {
        return Ok(());
    }
    sqlx::query!(
        "INSERT INTO job_checkpoints (tenant_id, user_id, job, failures, retry_after, last_error)
         VALUES ($1, $2, $3, 1, now() + interval '1 minute', $4)
         ON CONFLICT (tenant_id, job, user_id) DO UPDATE
            SET failures = job_checkpoints.failures + 1,
                retry_after = now() + least(interval '1 minute' * power(2, job_checkpoints.failures), interval '1 day'),
                last_error = $4",
        tenant.as_str(),
        user.as_str(),
        job,
        error
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// A job's own state for the user (`{}` before the first), beside its watermark.
pub async fn state(conn: &mut PgConnection, tenant: &TenantId, user: &UserId, job: &str) -> sqlx::Result<Value> {
    let state: Option<Value> = sqlx::query_scalar!(
        "SELECT state FROM job_checkpoints WHERE tenant_id = $1 AND user_id = $2 AND job = $3",
        tenant.as_str(),
        user.as_str(),
        job
    )
    .fetch_optional(conn)
    .await?;
    Ok(state.unwrap_or_else(|| Value::Object(Default::default())))
}

/// Merges `fields` into the job's state for the user; a field set to null is removed.
pub async fn set_state(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    job: &str,
    fields: &Value,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO job_checkpoints (tenant_id, user_id, job, state) VALUES ($1, $2, $3, jsonb_strip_nulls($4))
         ON CONFLICT (tenant_id, job, user_id) DO UPDATE SET state = jsonb_strip_nulls(job_checkpoints.state || $4)",
        tenant.as_str(),
        user.as_str(),
        job,
        fields
    )
    .execute(conn)
    .await?;
    Ok(())
}
