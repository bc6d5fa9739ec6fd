//! What operators do with jobs — list, trigger, pause, resume — shared by the admin
//! API and the `engram job` commands.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use super::runs::{self, Enqueued, NewRun, Run};
use super::{Definition, Scope, Trigger};
use engram_base::domain::TenantId;

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("no job named `{0}`")]
    UnknownJob(String),
    #[error("job `{job}` already has run {run} queued or running for an overlapping scope")]
    Overlaps { job: String, run: Uuid },
    #[error("database error")]
    Database(#[from] sqlx::Error),
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct JobOverview {
    pub name: String,
    /// 6-field cron with seconds, UTC.
    pub schedule: String,
    /// Whether the job file enables the schedule.
    pub enabled: bool,
    /// Whether an operator paused the schedule (honoured by every replica).
    pub paused: bool,
    /// The next scheduled tick, when enabled and not paused.
    pub next_run_at: Option<DateTime<Utc>>,
    pub last_run: Option<Run>,
}

/// Whose runs an administrator sees and acts on: a tenant's admin its own tenant's,
/// an operator (or the CLI) every run of the installation.
#[derive(Debug, Clone)]
pub enum Reach {
    Tenant(TenantId),
    Installation,
}

impl Reach {
    /// The tenant runs are limited to; `None` for the whole installation.
    pub fn tenant(&self) -> Option<&TenantId> {
        match self {
            Self::Tenant(tenant) => Some(tenant),
            Self::Installation => None,
        }
    }
}

/// Every job with its schedule, and the latest run within `reach`.
pub async fn overview(
    pool: &PgPool,
    jobs: &BTreeMap<String, Definition>,
    reach: &Reach,
) -> Result<Vec<JobOverview>, ControlError> {
    let paused = runs::paused(pool).await?;
    let mut latest: BTreeMap<String, Run> =
        runs::latest(pool, reach.tenant()).await?.into_iter().map(|r| (r.job.clone(), r)).collect();
    let now = Utc::now();
    Ok(jobs
        .values()
        .map(|d| {
            let is_paused = paused.contains(&d.name);
            JobOverview {
                name: d.name.clone(),
                schedule: d.schedule.as_str().to_owned(),
                enabled: d.enabled,
                paused: is_paused,
                next_run_at: (d.enabled && !is_paused).then(|| d.schedule.next_after(now)).flatten(),
                last_run: latest.remove(&d.name),
            }
        })
        .collect())
}

/// One run, if it lies within `reach`.
pub async fn run(pool: &PgPool, id: Uuid, reach: &Reach) -> Result<Option<Run>, ControlError> {
    Ok(runs::get(pool, id)
        .await?
        .filter(|run| reach.tenant().is_none_or(|t| run.tenant_id.as_deref() == Some(t.as_str()))))
}

/// The runs of `job` within `reach`, newest first, older than the run `before`.
pub async fn runs(
    pool: &PgPool,
    jobs: &BTreeMap<String, Definition>,
    job: &str,
    reach: &Reach,
    before: Option<Uuid>,
    limit: i64,
) -> Result<Vec<Run>, ControlError> {
    if !jobs.contains_key(job) {
        return Err(ControlError::UnknownJob(job.to_owned()));
    }
    Ok(runs::of_job(pool, job, reach.tenant(), before, limit).await?)
}

/// Queues a run of `job` over `scope`; an executor (a worker replica, or the caller
/// with [`super::Executor::run_now`]) runs it.
pub async fn trigger(
    pool: &PgPool,
    jobs: &BTreeMap<String, Definition>,
    job: &str,
    scope: &Scope,
    trigger: Trigger,
    dry_run: bool,
    as_of: Option<DateTime<Utc>>,
) -> Result<Uuid, ControlError> {
    if !jobs.contains_key(job) {
        return Err(ControlError::UnknownJob(job.to_owned()));
    }
    match runs::enqueue(pool, NewRun { job, scope, trigger, dry_run, as_of, tick_at: None }).await? {
        Enqueued::Queued(id) => Ok(id),
        Enqueued::Overlaps(run) => Err(ControlError::Overlaps { job: job.to_owned(), run }),
        Enqueued::TickTaken | Enqueued::Paused => unreachable!("only scheduled runs have ticks or honour pauses"),
    }
}

/// Pauses or resumes the schedule of `job`.
pub async fn set_paused(
    pool: &PgPool,
    jobs: &BTreeMap<String, Definition>,
    job: &str,
    paused: bool,
    by: &str,
) -> Result<(), ControlError> {
    if !jobs.contains_key(job) {
        return Err(ControlError::UnknownJob(job.to_owned()));
    }
    runs::set_paused(pool, job, paused, by).await?;
    Ok(())
}
