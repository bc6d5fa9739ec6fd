//! `purge`: hard-deletes what retention says is past keeping — memories evicted, merged
//! or deleted (and, later, superseded ones) longer than their retention, with their
//! history and access rows; raw events of archived sessions; old job runs. The content
//! is gone; the counts stay in the run record.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::job::{Candidate, InTransaction, Job, Unit, Units};
use super::runs;
use super::{Counts, Models, Scope};
use crate::ingest;
use crate::memories::lifecycle;
use engram_base::domain::{TenantId, UserId};

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PurgeParams {
    /// Evicted, merged and deleted memories are kept this long (restorable meanwhile).
    pub removed_retention_days: f64,
    /// Superseded memories answer `as_of` searches this far back.
    pub superseded_retention_days: f64,
    /// Raw events of archived sessions (their summaries stay).
    pub archived_events_retention_days: f64,
    /// Finished job runs.
    pub job_runs_retention_days: f64,
}

impl Default for PurgeParams {
    fn default() -> Self {
        Self {
            removed_retention_days: 30.0,
            superseded_retention_days: 365.0,
            archived_events_retention_days: 30.0,
            job_runs_retention_days: 90.0,
        }
    }
}

impl PurgeParams {
    fn cutoffs(&self, now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>, DateTime<Utc>) {
        let before = |days: f64| now - chrono::Duration::milliseconds((days * 86_400_000.0) as i64);
        (
            before(self.removed_retention_days),
            before(self.superseded_retention_days),
            before(self.archived_events_retention_days),
        )
    }
}

/// Users with memories or archived events past retention.
pub async fn candidates(
    pool: &PgPool,
    params: &PurgeParams,
    scope: &Scope,
    now: DateTime<Utc>,
) -> sqlx::Result<Vec<Candidate>> {
    let (tenant, user) = scope.columns();
    let (removed, superseded, events) = params.cutoffs(now);
    sqlx::query!(
        r#"SELECT tenant_id AS "tenant_id!: TenantId", user_id AS "user_id!: UserId" FROM memories
          WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)
            AND ((status IN ('evicted', 'merged', 'deleted') AND updated_at < $3)
                 OR (status = 'superseded' AND updated_at < $4))
         UNION
         SELECT tenant_id, user_id FROM relations
          WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)
            AND status IN ('superseded', 'deleted') AND updated_at < $4
         UNION
         SELECT tenant_id, user_id FROM sessions
          WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2) AND archived_at < $5"#,
        tenant,
        user,
        removed,
        superseded,
        events
    )
    .map(|r| (r.tenant_id, r.user_id))
    .fetch_all(pool)
    .await
}

pub async fn run_unit(conn: &mut PgConnection, params: &PurgeParams, unit: &Unit<'_>) -> anyhow::Result<Counts> {
    let (removed, superseded, events) = params.cutoffs(unit.now);
    let purged = lifecycle::purge(conn, unit.tenant, unit.user, removed, superseded).await?;
    let graph_rows = crate::graph::store::purge(conn, unit.tenant, unit.user, superseded).await?;
    let deleted_events = ingest::retention::delete_archived(conn, unit.tenant, unit.user, events).await?;
    let mut counts = Counts::default();
    counts.add("memories_deleted", purged.memories);
    counts.add("history_deleted", purged.history);
    counts.add("access_rows_deleted", purged.access);
    counts.add("events_deleted", deleted_events);
    counts.add("graph_rows_deleted", graph_rows);
    Ok(counts)
}

/// Finished runs past retention within the run's scope (a tenant's purge removes only
/// that tenant's records), never the current one.
pub async fn old_runs(
    conn: &mut PgConnection,
    params: &PurgeParams,
    scope: &Scope,
    current: Uuid,
    now: DateTime<Utc>,
) -> sqlx::Result<Counts> {
    let cutoff = now - chrono::Duration::milliseconds((params.job_runs_retention_days * 86_400_000.0) as i64);
    let (tenant, user) = scope.columns();
    let deleted = runs::delete_finished(conn, tenant, user, current, cutoff).await?;
    let mut counts = Counts::default();
    counts.add("job_runs_deleted", deleted);
    Ok(counts)
}

impl Job for PurgeParams {
    async fn before_units(
        &self,
        conn: &mut PgConnection,
        scope: &Scope,
        run_id: Uuid,
        now: DateTime<Utc>,
    ) -> sqlx::Result<Counts> {
        old_runs(conn, self, scope, run_id, now).await
    }

    async fn candidates(
        &self,
        pool: &PgPool,
        scope: &Scope,
        now: DateTime<Utc>,
        _models: &Models,
    ) -> sqlx::Result<Vec<Candidate>> {
        candidates(pool, self, scope, now).await
    }

    fn units(&self) -> Units<'_> {
        Units::InTransaction { custom_plans: false, job: self }
    }
}

impl InTransaction for PurgeParams {
    async fn run_unit(&self, conn: &mut PgConnection, unit: &Unit<'_>, _models: &Models) -> anyhow::Result<Counts> {
        run_unit(conn, self, unit).await
    }
}
