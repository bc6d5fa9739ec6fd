//! `job_runs`: every run's record, and the SQL that enqueues, claims and finishes them.
//! These are control-plane statements: they run as the service role, across tenants.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::Scope;
pub use super::run_state::{RunStatus, StopReason, Trigger};
use engram_base::domain::TenantId;

/// Advisory-lock key spaces (the first half of the two-key form): the second key is
/// `hashtext(job)`.
pub const RUN_LOCK: i32 = 0x656e_6731; // held for a run's whole duration
const ENQUEUE_LOCK: i32 = 0x656e_6732; // held while checking for overlaps and inserting

#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Run {
    pub id: Uuid,
    pub job: String,
    /// The scope: no tenant means every tenant; a user is always within a tenant.
    pub tenant_id: Option<String>,
    pub user_id: Option<String>,
    pub trigger: Trigger,
    pub status: RunStatus,
    pub dry_run: bool,
    /// Items by action, e.g. `{"users": 12, "evicted": 40}`.
    #[schema(value_type = Object)]
    pub counts: Value,
    pub error: Option<String>,
    /// Why a run stopped before its last unit.
    pub stop_reason: Option<StopReason>,
    pub worker_id: Option<String>,
    pub tick_at: Option<DateTime<Utc>>,
    pub as_of: Option<DateTime<Utc>>,
    #[serde(skip)]
    pub pass_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub heartbeat_at: Option<DateTime<Utc>>,
}

impl Run {
    pub fn scope(&self) -> Scope {
        Scope::from_columns(self.tenant_id.as_deref(), self.user_id.as_deref())
    }

    pub fn is_finished(&self) -> bool {
        !matches!(self.status, RunStatus::Queued | RunStatus::Running)
    }
}

/// A request for a run.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    pub job: &'a str,
    pub scope: &'a Scope,
    pub trigger: Trigger,
    pub dry_run: bool,
    pub as_of: Option<DateTime<Utc>>,
    /// Set for scheduled runs: the tick they are for.
    pub tick_at: Option<DateTime<Utc>>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Enqueued {
    Queued(Uuid),
    /// A queued or running run of this job covers an overlapping scope.
    Overlaps(Uuid),
    /// Another replica already enqueued this tick.
    TickTaken,
    /// Scheduled runs of this job are paused.
    Paused,
}

/// Queues a run unless one of the same job with an overlapping scope at the same level
/// is queued or running: a tenant's runs are checked against that tenant's, runs over
/// every tenant (the schedule's) against each other — so no tenant's queued run can
/// make a tick skip, and a conflict never names another tenant's run. Runs of one job
/// execute one at a time anyway. Checks and insert happen under a per-job transaction
/// lock, so two replicas cannot both pass the check.
pub async fn enqueue(pool: &PgPool, run: NewRun<'_>) -> sqlx::Result<Enqueued> {
    let mut tx = pool.begin().await?;
    sqlx::query!("SELECT FROM pg_advisory_xact_lock($1, hashtext($2))", ENQUEUE_LOCK, run.job)
        .execute(&mut *tx)
        .await?;
    if run.trigger == Trigger::Schedule && is_paused(&mut tx, run.job).await? {
        return Ok(Enqueued::Paused);
    }
    // A run recorded as running while nobody holds the job's run lock died with its
    // worker; it must not block new runs.
    let idle =
        sqlx::query_scalar!(r#"SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS "idle!""#, RUN_LOCK, run.job)
            .fetch_one(&mut *tx)
            .await?;
    if idle {
        abandon_dead_runs(&mut tx, run.job).await?;
    }
    let (tenant, user) = run.scope.columns();
    let overlapping = sqlx::query_scalar!(
        "SELECT id FROM job_runs
          WHERE job = $1 AND status IN ('queued', 'running')
            AND tenant_id IS NOT DISTINCT FROM $2::text
            AND (user_id IS NULL OR $3::text IS NULL OR user_id = $3)
          ORDER BY created_at LIMIT 1",
        run.job,
        tenant,
        user,
    )
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(id) = overlapping {
        return Ok(Enqueued::Overlaps(id));
    }
    let id = Uuid::now_v7();
    let inserted = sqlx::query!(
        "INSERT INTO job_runs (id, tenant_id, user_id, job, trigger, status, dry_run, as_of, tick_at)
         VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8)
         ON CONFLICT (job, tick_at) WHERE tick_at IS NOT NULL DO NOTHING",
        id,
        tenant,
        user,
        run.job,
        run.trigger.as_str(),
        run.dry_run,
        run.as_of,
        run.tick_at,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(if inserted.rows_affected() == 1 { Enqueued::Queued(id) } else { Enqueued::TickTaken })
}

/// Takes the job's run lock on `conn` (a connection of its own, held for the run).
/// While it is held no other process runs this job, so any run still marked running
/// belongs to a worker that died: those are marked abandoned here.
pub async fn try_lock_job(conn: &mut PgConnection, job: &str) -> sqlx::Result<bool> {
    let locked = sqlx::query_scalar!(r#"SELECT pg_try_advisory_lock($1, hashtext($2)) AS "locked!""#, RUN_LOCK, job)
        .fetch_one(&mut *conn)
        .await?;
    if locked {
        abandon_dead_runs(conn, job).await?;
    }
    Ok(locked)
}

/// Marks runs of `job` still recorded as running abandoned. Only call while holding the
/// job's run lock: then no live worker is running it.
async fn abandon_dead_runs(conn: &mut PgConnection, job: &str) -> sqlx::Result<()> {
    let abandoned = sqlx::query!(
        "UPDATE job_runs SET status = 'abandoned', finished_at = now(),
                error = 'the worker running it stopped (its lock was released without an end record)'
          WHERE job = $1 AND status = 'running'",
        job,
    )
    .execute(conn)
    .await?;
    if abandoned.rows_affected() > 0 {
        tracing::warn!(job, runs = abandoned.rows_affected(), "marked runs of a stopped worker abandoned");
    }
    Ok(())
}

pub async fn unlock_job(conn: &mut PgConnection, job: &str) -> sqlx::Result<()> {
    sqlx::query!("SELECT FROM pg_advisory_unlock($1, hashtext($2))", RUN_LOCK, job).execute(conn).await?;
    Ok(())
}

/// Marks the oldest queued run of `job` (or the run `only`) running on `worker`. A run
/// that repeats the scope of an abandoned or cancelled one continues its pass, so units
/// that run finished are not done again. Call with the job's run lock held.
pub async fn claim(conn: &mut PgConnection, job: &str, only: Option<Uuid>, worker: &str) -> sqlx::Result<Option<Run>> {
    sqlx::query_as!(
        Run,
        r#"WITH next AS (
            SELECT id, tenant_id, user_id, dry_run FROM job_runs
             WHERE job = $1 AND status = 'queued' AND ($2::uuid IS NULL OR id = $2)
             ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED
         ), previous AS (
            SELECT p.status, p.pass_id FROM job_runs p, next
             WHERE p.job = $1 AND p.started_at IS NOT NULL AND NOT p.dry_run AND NOT next.dry_run
               AND p.tenant_id IS NOT DISTINCT FROM next.tenant_id AND p.user_id IS NOT DISTINCT FROM next.user_id
             ORDER BY p.started_at DESC LIMIT 1
         )
         UPDATE job_runs r
            SET status = 'running', worker_id = $3, started_at = now(), heartbeat_at = now(),
                pass_id = coalesce((SELECT pass_id FROM previous WHERE status IN ('abandoned', 'cancelled')), r.id)
           FROM next WHERE r.id = next.id
         RETURNING r.id, r.job, r.tenant_id, r.user_id, r.trigger AS "trigger: Trigger", r.status AS "status: RunStatus", r.dry_run, r.counts,
                r.error, r.stop_reason AS "stop_reason: StopReason", r.worker_id, r.tick_at, r.as_of, r.pass_id, r.created_at,
                r.started_at, r.finished_at, r.heartbeat_at"#,
        job,
        only,
        worker,
    )
    .fetch_optional(conn)
    .await
}

pub async fn heartbeat(pool: &PgPool, id: Uuid, counts: &Value) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE job_runs SET heartbeat_at = now(), counts = $2 WHERE id = $1 AND status = 'running'",
        id,
        counts
    )
    .execute(pool)
    .await?;
    Ok(())
}

pub async fn finish(
    pool: &PgPool,
    id: Uuid,
    status: RunStatus,
    counts: &Value,
    error: Option<&str>,
    stop_reason: Option<StopReason>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE job_runs SET status = $2, counts = $3, error = $4, stop_reason = $5, finished_at = now(), heartbeat_at = now()
          WHERE id = $1",
        id,
        status as _,
        counts,
        error,
        stop_reason as _,
    )
    .execute(pool)
    .await?;
    Ok(())
}

pub async fn get(pool: &PgPool, id: Uuid) -> sqlx::Result<Option<Run>> {
    sqlx::query_as!(Run, r#"SELECT id, job, tenant_id, user_id, trigger AS "trigger: Trigger", status AS "status: RunStatus", dry_run, counts,
                error, stop_reason AS "stop_reason: StopReason", worker_id, tick_at, as_of, pass_id, created_at,
                started_at, finished_at, heartbeat_at FROM job_runs WHERE id = $1"#, id)
        .fetch_optional(pool)
        .await
}

/// The most recent run of each job, by job name: of `tenant`'s runs, or of all.
pub async fn latest(pool: &PgPool, tenant: Option<&TenantId>) -> sqlx::Result<Vec<Run>> {
    sqlx::query_as!(
        Run,
        r#"SELECT DISTINCT ON (job) id, job, tenant_id, user_id, trigger AS "trigger: Trigger", status AS "status: RunStatus", dry_run, counts,
                error, stop_reason AS "stop_reason: StopReason", worker_id, tick_at, as_of, pass_id, created_at,
                started_at, finished_at, heartbeat_at
             FROM job_runs WHERE $1::text IS NULL OR tenant_id = $1 ORDER BY job, created_at DESC"#,
        tenant.map(TenantId::as_str),
    )
    .fetch_all(pool)
    .await
}

/// The runs of `job`, newest first, of `tenant`'s runs or of all: `limit` of them, those
/// older than the run `before` when it is given.
pub async fn of_job(
    pool: &PgPool,
    job: &str,
    tenant: Option<&TenantId>,
    before: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<Run>> {
    sqlx::query_as!(
        Run,
        r#"SELECT id, job, tenant_id, user_id, trigger AS "trigger: Trigger", status AS "status: RunStatus", dry_run, counts,
                error, stop_reason AS "stop_reason: StopReason", worker_id, tick_at, as_of, pass_id, created_at,
                started_at, finished_at, heartbeat_at FROM job_runs
          WHERE job = $1 AND ($2::text IS NULL OR tenant_id = $2)
            AND ($3::uuid IS NULL OR (created_at, id) < (SELECT b.created_at, b.id FROM job_runs b WHERE b.id = $3))
          ORDER BY created_at DESC, id DESC LIMIT $4"#,
        job,
        tenant.map(TenantId::as_str),
        before,
        limit,
    )
    .fetch_all(pool)
    .await
}

/// Jobs with work for an executor: queued runs, or running ones whose worker has not
/// sent a heartbeat for `stale_secs` (probably dead; the run lock tells for sure).
pub async fn jobs_needing_attention(pool: &PgPool, stale_secs: f64) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        "SELECT DISTINCT job FROM job_runs
          WHERE status = 'queued' OR (status = 'running' AND heartbeat_at < now() - make_interval(secs => $1))",
        stale_secs,
    )
    .fetch_all(pool)
    .await
}

async fn is_paused(conn: &mut PgConnection, job: &str) -> sqlx::Result<bool> {
    let paused = sqlx::query_scalar!("SELECT paused FROM job_state WHERE job = $1", job).fetch_optional(conn).await?;
    Ok(paused.unwrap_or(false))
}

/// Paused jobs; their schedules enqueue nothing until resumed.
pub async fn paused(pool: &PgPool) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!("SELECT job FROM job_state WHERE paused ORDER BY job").fetch_all(pool).await
}

pub async fn set_paused(pool: &PgPool, job: &str, paused: bool, by: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO job_state (job, paused, updated_at, updated_by) VALUES ($1, $2, now(), $3)
         ON CONFLICT (job) DO UPDATE SET paused = $2, updated_at = now(), updated_by = $3",
        job,
        paused,
        by,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// When each of `jobs` last succeeded (dry runs excluded) or, for one that never did, when
/// the installation first knew it (recorded now for a new job), for the metrics after a
/// restart.
pub async fn last_success_or_known_since(pool: &PgPool, jobs: &[&str]) -> sqlx::Result<Vec<(String, DateTime<Utc>)>> {
    sqlx::query!("INSERT INTO job_state (job) SELECT unnest($1::text[]) ON CONFLICT (job) DO NOTHING", jobs as _)
        .execute(pool)
        .await?;
    let rows = sqlx::query!(
        r#"SELECT s.job, coalesce(
                    (SELECT max(finished_at) FROM job_runs r WHERE r.job = s.job AND r.status = 'succeeded' AND NOT r.dry_run),
                    s.known_since) AS "since!"
           FROM job_state s WHERE s.job = ANY($1)"#,
        jobs as _,
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|row| (row.job, row.since)).collect())
}

/// Deletes finished runs that ended before `before` within a scope (a tenant's or a
/// user's, or every one), never `current`; returns how many.
pub async fn delete_finished(
    conn: &mut PgConnection,
    tenant: Option<&str>,
    user: Option<&str>,
    current: Uuid,
    before: DateTime<Utc>,
) -> sqlx::Result<i64> {
    let deleted = sqlx::query!(
        "DELETE FROM job_runs WHERE id <> $1 AND status NOT IN ('queued', 'running') AND finished_at < $2
            AND ($3::text IS NULL OR tenant_id = $3) AND ($4::text IS NULL OR user_id = $4)",
        current,
        before,
        tenant,
        user,
    )
    .execute(conn)
    .await?
    .rows_affected();
    Ok(deleted as i64)
}

/// Records `fingerprint` as the secret rules the workers run with; true when it differs
/// from the one recorded (or none was), for one replica only.
pub async fn swap_secret_rules(pool: &PgPool, fingerprint: &str) -> sqlx::Result<bool> {
    let changed = sqlx::query_scalar!(
        r#"INSERT INTO secret_rules (fingerprint) VALUES ($1)
         ON CONFLICT (id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, changed_at = now()
          WHERE secret_rules.fingerprint IS DISTINCT FROM EXCLUDED.fingerprint
         RETURNING true AS "changed!""#,
        fingerprint,
    )
    .fetch_optional(pool)
    .await?;
    Ok(changed.unwrap_or(false))
}
