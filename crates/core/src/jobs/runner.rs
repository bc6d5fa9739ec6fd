//! One run of one job: take the job's lock, claim the run, work through its per-user
//! units within the budgets, record counts and metrics. The scheduler, the admin API
//! (through the scheduler's executor loop) and `engram job run` all end up here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::watch;
use tracing::Instrument;
use uuid::Uuid;

use super::definition::Definition;
use super::job::{Unit, Units};
use super::runs::{RunStatus, StopReason};
use super::{Counts, Models, Run, checkpoints, llm_usage, runs};
use crate::users;
use engram_base::configuration::JobSettings;
use engram_base::db::begin_tenant_tx_with;
use engram_base::metrics::Metrics;

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub run_id: Uuid,
    pub status: RunStatus,
    pub counts: Counts,
    pub stop_reason: Option<StopReason>,
    pub error: Option<String>,
}

/// Runs jobs for one process; cheap to clone.
#[derive(Clone)]
pub struct Executor {
    pub pool: PgPool,
    pub jobs: Arc<BTreeMap<String, Definition>>,
    pub metrics: Metrics,
    pub models: Models,
    pub settings: JobSettings,
    pub worker_id: String,
    pub shutdown: watch::Receiver<bool>,
}

impl Executor {
    pub fn definition(&self, job: &str) -> Option<&Definition> {
        self.jobs.get(job)
    }

    /// Runs the queued run `run_id` here and now, waiting up to `lock_wait` for a run of
    /// the same job elsewhere to finish. If an executor loop claimed it first, waits for
    /// that run instead; either way returns the finished run.
    pub async fn run_now(&self, job: &str, run_id: Uuid, lock_wait: Duration) -> anyhow::Result<Run> {
        let mut conn = self.pool.acquire().await?.detach();
        let waited = Instant::now();
        loop {
            if runs::try_lock_job(&mut conn, job).await? {
                break;
            }
            if waited.elapsed() > lock_wait {
                anyhow::bail!(
                    "another run of `{job}` is still running after {} s; try again later",
                    lock_wait.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        match runs::claim(&mut conn, job, Some(run_id), &self.worker_id).await? {
            Some(run) => {
                self.execute(run, &mut conn).await;
                conn.close().await?;
            }
            None => {
                runs::unlock_job(&mut conn, job).await?;
                conn.close().await?;
            }
        }
        loop {
            let run =
                runs::get(&self.pool, run_id).await?.ok_or_else(|| anyhow::anyhow!("run {run_id} disappeared"))?;
            if run.is_finished() {
                return Ok(run);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// If no run of `job` is in progress anywhere, claims its oldest queued run and
    /// starts it in the background. Also marks runs of dead workers abandoned.
    pub async fn try_start(&self, job: &str) -> anyhow::Result<Option<tokio::task::JoinHandle<RunOutcome>>> {
        let mut conn = self.pool.acquire().await?.detach();
        if !runs::try_lock_job(&mut conn, job).await? {
            conn.close().await?;
            return Ok(None);
        }
        let Some(run) = runs::claim(&mut conn, job, None, &self.worker_id).await? else {
            runs::unlock_job(&mut conn, job).await?;
            conn.close().await?;
            return Ok(None);
        };
        let executor = self.clone();
        Ok(Some(tokio::spawn(async move {
            let outcome = executor.execute(run, &mut conn).await;
            // Closing the connection releases the run lock.
            let _ = conn.close().await;
            outcome
        })))
    }

    /// Executes a claimed run while `lock` holds the job's run lock.
    #[tracing::instrument(name = "job run", skip_all, fields(otel.name = %format!("job {}", run.job), run_id = %run.id, job = %run.job))]
    async fn execute(&self, run: Run, _lock: &mut PgConnection) -> RunOutcome {
        let started = Instant::now();
        let outcome = match self.definition(&run.job) {
            Some(definition) => self.work(definition, &run, started).await,
            None => Err(anyhow::anyhow!("this worker has no definition of job `{}`", run.job)),
        };
        let outcome = outcome.unwrap_or_else(|err| {
            tracing::error!(error = format!("{err:#}"), "run failed");
            RunOutcome {
                run_id: run.id,
                status: RunStatus::Failed,
                counts: Counts::default(),
                stop_reason: None,
                error: Some(format!("{err:#}")),
            }
        });
        if let Err(err) = runs::finish(
            &self.pool,
            run.id,
            outcome.status,
            &outcome.counts.to_json(),
            outcome.error.as_deref(),
            outcome.stop_reason,
        )
        .await
        {
            tracing::error!(error = %err, "cannot record the end of the run");
        }
        self.metrics.job_runs.with_label_values(&[&run.job, outcome.status.as_str()]).inc();
        self.metrics.job_duration.with_label_values(&[&run.job]).observe(started.elapsed().as_secs_f64());
        if outcome.status == RunStatus::Succeeded && !run.dry_run {
            self.metrics.job_last_success.with_label_values(&[&run.job]).set(Utc::now().timestamp() as f64);
        }
        tracing::info!(status = outcome.status.as_str(), stop_reason = outcome.stop_reason.map(StopReason::as_str), counts = %outcome.counts.to_json(),
                       seconds = started.elapsed().as_secs_f64(), "run finished");
        outcome
    }

    async fn work(&self, definition: &Definition, run: &Run, started: Instant) -> anyhow::Result<RunOutcome> {
        let now = run.as_of.unwrap_or_else(Utc::now);
        let pass = run.pass_id.unwrap_or(run.id);
        let budget = &definition.budget;
        let mut counts = Counts::default();

        let mut tx = self.pool.begin().await?;
        counts.merge(&definition.job.before_units(&mut tx, &run.scope(), run.id, now).await?);
        if run.dry_run {
            tx.rollback().await?
        } else {
            tx.commit().await?
        }

        let candidates = definition.job.candidates(&self.pool, &run.scope(), now, &self.models).await?;
        let (units, deferred) = checkpoints::pending(&self.pool, &run.job, &candidates, pass).await?;
        counts.add("deferred", deferred);
        let mut stop_reason = None;
        let mut last_beat = Instant::now();
        let mut pending = units.iter();
        let mut in_flight = FuturesUnordered::new();
        loop {
            // Budgets are checked before each unit starts: units in flight finish.
            while stop_reason.is_none() && in_flight.len() < definition.concurrency {
                stop_reason = self.stop_reason(definition, &counts, in_flight.len(), started);
                if stop_reason.is_some() {
                    break;
                }
                let Some((tenant, user)) = pending.next().cloned() else { break };
                let n = counts.get("users") + counts.get("failed") + in_flight.len() as i64 + 1;
                let earlier = counts.clone();
                in_flight.push(async move {
                    let unit =
                        Unit { job: &run.job, run_id: run.id, tenant: &tenant, user: &user, now, budget, earlier };
                    let done = self
                        .run_unit(definition, run, pass, &unit)
                        .instrument(tracing::info_span!("unit", otel.name = %format!("{} unit", run.job), n))
                        .await;
                    (tenant, user, done)
                });
            }
            let Some((tenant, user, done)) = in_flight.next().await else { break };
            match done {
                Ok(Claimed::Done(unit_counts)) => {
                    counts.add("users", 1);
                    counts.merge(&unit_counts);
                    if !run.dry_run {
                        for (action, n) in unit_counts.iter() {
                            self.metrics.job_items.with_label_values(&[&run.job, action]).inc_by(n as u64);
                        }
                    }
                }
                Ok(Claimed::Locked) => counts.add("skipped_locked", 1),
                Ok(Claimed::Forgotten) => counts.add("skipped_forgotten", 1),
                Ok(Claimed::OverTenantBudget) => counts.add("skipped_tenant_llm_budget", 1),
                Err(err) => {
                    counts.add("failed", 1);
                    self.metrics.job_items.with_label_values(&[&run.job, "failed"]).inc();
                    tracing::warn!(
                        error = format!("{err:#}"),
                        "unit failed; it is retried with backoff by a later run"
                    );
                    if !run.dry_run {
                        checkpoints::record_failure(&self.pool, &run.job, &tenant, &user, &format!("{err:#}")).await?;
                    }
                }
            }
            if last_beat.elapsed() >= Duration::from_secs(self.settings.heartbeat_secs) {
                runs::heartbeat(&self.pool, run.id, &counts.to_json()).await?;
                last_beat = Instant::now();
            }
        }
        let status = match stop_reason {
            Some(StopReason::Shutdown) => RunStatus::Cancelled,
            _ if counts.get("failed") > 0 && counts.get("users") == 0 => RunStatus::Failed,
            _ => RunStatus::Succeeded,
        };
        let error = (status == RunStatus::Failed)
            .then(|| format!("all {} units failed; see the worker's log", counts.get("failed")));
        Ok(RunOutcome { run_id: run.id, status, counts, stop_reason, error })
    }

    /// Why no further unit may start, if a budget or a shutdown says so.
    fn stop_reason(
        &self,
        definition: &Definition,
        counts: &Counts,
        in_flight: usize,
        started: Instant,
    ) -> Option<StopReason> {
        if *self.shutdown.borrow() {
            Some(StopReason::Shutdown)
        } else if started.elapsed() >= definition.timeout {
            Some(StopReason::Timeout)
        } else if (counts.get("users") as u64).saturating_add(in_flight as u64) >= definition.budget.max_users {
            Some(StopReason::MaxUsers)
        } else if counts.get("llm_tokens") as u64 >= definition.budget.max_llm_tokens {
            Some(StopReason::MaxLlmTokens)
        } else {
            None
        }
    }

    /// One unit in one transaction as its tenant: hold the user's life lock, lock the
    /// checkpoint, do the job's work, mark the checkpoint done for this pass.
    async fn run_unit(
        &self,
        definition: &Definition,
        run: &Run,
        pass: Uuid,
        unit: &Unit<'_>,
    ) -> anyhow::Result<Claimed> {
        let (custom_plans, job) = match definition.job.units() {
            Units::InTransaction { custom_plans, job } => (custom_plans, job),
            Units::OutsideTransaction(job) => {
                let counts = job.run_outside(&self.pool, unit, &self.models, run.dry_run).await?;
                if !run.dry_run {
                    checkpoints::clear(&self.pool, unit.tenant, unit.user, &run.job).await?;
                }
                return Ok(Claimed::Done(counts));
            }
        };
        // Custom plans where a job's statements should differ for users with 10
        // memories and with 100,000 (the HNSW index or the user's own rows).
        // Asynchronous commit: a crash loses at most the last few units, checkpoint and
        // work together, and the next run does them again.
        let plans = if custom_plans { "force_custom_plan" } else { "auto" };
        let settings = format!("SET LOCAL plan_cache_mode = {plans}; SET LOCAL synchronous_commit = off");
        let mut tx = begin_tenant_tx_with(&self.pool, unit.tenant, &settings).await?;
        // A user forgotten since the candidates were read has nothing left to work on,
        // and must not get a checkpoint back.
        users::hold(&mut tx, unit.tenant, &[unit.user.as_str()]).await?;
        if !users::exists(&mut tx, unit.tenant, unit.user.as_str()).await? {
            return Ok(Claimed::Forgotten);
        }
        if !checkpoints::lock(&mut tx, unit.tenant, unit.user, &run.job).await? {
            return Ok(Claimed::Locked);
        }
        let daily = self.settings.tenant_daily_llm_tokens.filter(|_| self.models.llm.is_some());
        if let Some(limit) = daily
            && llm_usage::exhausted(&mut tx, unit.tenant, limit).await?
        {
            return Ok(Claimed::OverTenantBudget);
        }
        let counts = job.run_unit(&mut tx, unit, &self.models).await?;
        if counts.get("llm_tokens") > 0 {
            llm_usage::record(&mut tx, unit.tenant, counts.get("llm_tokens")).await?;
        }
        checkpoints::done(&mut tx, unit.tenant, unit.user, &run.job, pass).await?;
        if run.dry_run {
            tx.rollback().await?
        } else {
            tx.commit().await?
        }
        Ok(Claimed::Done(counts))
    }
}

/// What became of a unit the run started.
enum Claimed {
    Done(Counts),
    /// Another run holds the user's checkpoint.
    Locked,
    /// The user was forgotten after the run read its candidates.
    Forgotten,
    /// The tenant spent its `jobs.tenant_daily_llm_tokens` today; the unit waits.
    OverTenantBudget,
}
