//! The worker role: cron timers that enqueue scheduled runs, and an executor loop that
//! starts queued runs (from ticks, the admin API or another replica) whenever the job
//! is free. Also refreshes the gauges that need a query.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_cron_scheduler::{Job as CronJob, JobScheduler};

use super::runs::{self, Enqueued, NewRun};
use super::{Definition, Executor, Models, RunOutcome, Scope, Trigger};
use crate::memories::Status;
use engram_base::configuration::JobSettings;
use engram_base::metrics::Metrics;

/// A started worker; `stop` shuts it down gracefully.
pub struct Worker {
    shutdown: watch::Sender<bool>,
    scheduler: JobScheduler,
    executor_loop: JoinHandle<()>,
}

impl Worker {
    /// Starts the cron timers of every enabled job and the executor loop.
    pub async fn start(
        pool: PgPool,
        jobs: Arc<BTreeMap<String, Definition>>,
        metrics: Metrics,
        models: Models,
        settings: JobSettings,
    ) -> anyhow::Result<Self> {
        let (shutdown, shutdown_rx) = watch::channel(false);
        let worker_id = format!("{}:{}", hostname(), std::process::id());
        let executor = Executor {
            pool: pool.clone(),
            jobs: jobs.clone(),
            metrics: metrics.clone(),
            models,
            settings,
            worker_id,
            shutdown: shutdown_rx,
        };
        // Overdue alerts count from the last success, or for a job that never succeeded
        // from when the installation first scheduled it (never from this start).
        let names: Vec<&str> = jobs.keys().map(String::as_str).collect();
        for (job, at) in runs::last_success_or_known_since(&pool, &names).await? {
            metrics.job_last_success.with_label_values(&[&job]).set(at.timestamp() as f64);
        }
        let wake = Arc::new(Notify::new());
        let scheduler = JobScheduler::new().await?;
        for definition in jobs.values().filter(|d| d.enabled) {
            let expression = definition.schedule.as_str().to_owned();
            let (pool, wake, definition) = (pool.clone(), wake.clone(), definition.clone());
            let timer = CronJob::new_async_tz(expression, Utc, move |_, _| {
                let (pool, wake, definition) = (pool.clone(), wake.clone(), definition.clone());
                Box::pin(async move { enqueue_tick(&pool, &definition, &wake).await })
            })?;
            scheduler.add(timer).await?;
        }
        scheduler.start().await?;
        if let Some(redact) = jobs.get("redact").filter(|d| d.enabled) {
            let fingerprint = crate::ingest::secrets::fingerprint(&executor.models.secret_kinds);
            if runs::swap_secret_rules(&pool, &fingerprint).await? {
                tracing::info!("the secret rules changed; queueing a redact run");
                enqueue_tick_at(&pool, redact, &wake, Utc::now()).await;
            }
        }
        let executor_loop = tokio::spawn(executor_loop(executor, wake));
        tracing::info!(jobs = jobs.len(), "worker started");
        Ok(Self { shutdown, scheduler, executor_loop })
    }

    /// Stops the timers, lets runs in progress finish their unit in flight and record
    /// themselves as cancelled, waiting at most the configured grace period.
    pub async fn stop(mut self) {
        let _ = self.shutdown.send(true);
        if let Err(err) = self.scheduler.shutdown().await {
            tracing::warn!(error = %err, "cron timers did not stop cleanly");
        }
        let _ = self.executor_loop.await;
    }
}

/// One cron tick: enqueue the run for it unless another replica did, the job is
/// paused, or a run of it is still going.
async fn enqueue_tick(pool: &PgPool, definition: &Definition, wake: &Notify) {
    let Some(tick) = definition.schedule.latest_at_or_before(Utc::now()) else { return };
    enqueue_tick_at(pool, definition, wake, tick).await
}

/// Enqueues the run for `tick`, as a scheduled run.
async fn enqueue_tick_at(pool: &PgPool, definition: &Definition, wake: &Notify, tick: DateTime<Utc>) {
    let scope = Scope::all();
    let run = NewRun {
        job: &definition.name,
        scope: &scope,
        trigger: Trigger::Schedule,
        dry_run: false,
        as_of: None,
        tick_at: Some(tick),
    };
    match runs::enqueue(pool, run).await {
        Ok(Enqueued::Queued(id)) => {
            tracing::info!(job = definition.name, %id, %tick, "scheduled run queued");
            wake.notify_one();
        }
        Ok(Enqueued::Overlaps(id)) => {
            tracing::info!(job = definition.name, %id, "tick skipped: a run is still in progress")
        }
        Ok(Enqueued::Paused) => tracing::debug!(job = definition.name, "tick skipped: paused"),
        Ok(Enqueued::TickTaken) => tracing::debug!(job = definition.name, "tick already queued by another replica"),
        Err(err) => tracing::error!(job = definition.name, error = %err, "cannot queue the scheduled run"),
    }
}

async fn executor_loop(executor: Executor, wake: Arc<Notify>) {
    let settings = executor.settings.clone();
    let mut shutdown = executor.shutdown.clone();
    let mut running: HashMap<String, JoinHandle<RunOutcome>> = HashMap::new();
    let mut gauges = tokio::time::interval(Duration::from_secs(settings.gauge_refresh_secs.max(1)));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(settings.poll_ms.max(10))) => {}
            _ = wake.notified() => {}
            _ = gauges.tick() => refresh_gauges(&executor).await,
            _ = shutdown.changed() => {}
        }
        if *shutdown.borrow() {
            break;
        }
        running.retain(|_, handle| !handle.is_finished());
        let jobs = match runs::jobs_needing_attention(&executor.pool, settings.stale_secs as f64).await {
            Ok(jobs) => jobs,
            Err(err) => {
                tracing::warn!(error = %err, "cannot look for queued runs");
                continue;
            }
        };
        for job in jobs {
            if running.contains_key(&job) || executor.definition(&job).is_none() {
                continue;
            }
            if running.len() >= settings.max_concurrent_runs.max(1) {
                break;
            }
            match executor.try_start(&job).await {
                Ok(Some(handle)) => {
                    running.insert(job, handle);
                }
                Ok(None) => {}
                Err(err) => tracing::warn!(job, error = %err, "cannot start a queued run"),
            }
        }
    }
    let grace = Duration::from_secs(settings.shutdown_grace_secs);
    for (job, handle) in running {
        if tokio::time::timeout(grace, handle).await.is_err() {
            tracing::warn!(job, "run still busy after the shutdown grace period; its unit in flight rolls back");
        }
    }
}

/// Gauges that need a query: raw events not yet consolidated into a session summary,
/// memories by status, and each job's schedule interval (0 while disabled or paused).
async fn refresh_gauges(executor: &Executor) {
    let (pool, metrics) = (&executor.pool, &executor.metrics);
    match runs::paused(pool).await {
        Ok(paused) => {
            for definition in executor.jobs.values() {
                let interval = match definition.enabled && !paused.contains(&definition.name) {
                    true => definition.schedule.interval_seconds(),
                    false => 0.0,
                };
                metrics.job_interval.with_label_values(&[&definition.name]).set(interval);
            }
        }
        Err(err) => tracing::warn!(error = %err, "cannot read paused jobs"),
    }
    let pending: sqlx::Result<i64> = sqlx::query_scalar!(
        r#"SELECT coalesce(sum(event_count), 0)::bigint AS "pending!" FROM sessions WHERE summarized_at IS NULL"#
    )
    .fetch_one(pool)
    .await;
    let by_status: sqlx::Result<Vec<(String, i64)>> =
        sqlx::query!(r#"SELECT status, count(*) AS "n!" FROM memories GROUP BY status"#)
            .map(|r| (r.status, r.n))
            .fetch_all(pool)
            .await;
    let unembedded = crate::ingest::vectors::backlog_size(pool).await;
    match (pending, by_status, unembedded) {
        (Ok(pending), Ok(by_status), Ok(unembedded)) => {
            metrics.events_pending.set(pending as f64);
            metrics.events_unembedded.set(unembedded as f64);
            for status in Status::ALL {
                let n = by_status.iter().find(|(s, _)| s == status.as_str()).map_or(0, |(_, n)| *n);
                metrics.memories.with_label_values(&[status.as_str()]).set(n as f64);
            }
        }
        (Err(err), _, _) | (_, Err(err), _) | (_, _, Err(err)) => {
            tracing::warn!(error = %err, "cannot refresh the backlog and memory gauges")
        }
    }
    let graph: sqlx::Result<Vec<(String, String, i64)>> = sqlx::query!(
        r#"SELECT 'entities' AS "table!", status AS "status!", count(*) AS "n!" FROM entities GROUP BY status
         UNION ALL SELECT 'relations', status, count(*) FROM relations GROUP BY status"#
    )
    .map(|r| (r.table, r.status, r.n))
    .fetch_all(pool)
    .await;
    match graph {
        Ok(rows) => {
            let count = |table: &str, status: &str| {
                rows.iter().find(|(t, s, _)| t == table && s == status).map_or(0.0, |(.., n)| *n as f64)
            };
            for status in ["active", "merged", "deleted"] {
                metrics.entities.with_label_values(&[status]).set(count("entities", status));
            }
            for status in ["active", "superseded", "deleted"] {
                metrics.relations.with_label_values(&[status]).set(count("relations", status));
            }
        }
        Err(err) => tracing::warn!(error = %err, "cannot refresh the graph gauges"),
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map_or_else(|_| "worker".to_owned(), |h| h.trim().to_owned())
}
