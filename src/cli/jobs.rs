//! `engram job run|list`: the same code the scheduler and the admin API use.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use chrono::{DateTime, Utc};
use clap::Subcommand;

use engram_base::configuration::Settings;
use engram_base::db::Database;
use engram_base::domain::{TenantId, UserId};
use engram_base::metrics::Metrics;
use engram_core::jobs::control::{self, ControlError};
use engram_core::jobs::{Definition, Executor, Models, Run, Scope, Trigger, definition};

#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Run one job now and print its counts.
    Run {
        name: String,
        /// Only this tenant (default: every tenant; `default` when --user is given).
        #[arg(long)]
        tenant: Option<String>,
        /// Only this user of the tenant.
        #[arg(long)]
        user: Option<String>,
        /// Compute and report everything, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Run as of this RFC 3339 time (replays, backfills).
        #[arg(long)]
        now: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Jobs with their schedule, state, last and next run.
    List {
        #[arg(long)]
        json: bool,
    },
}

/// A job command with its arguments checked before the database is touched.
pub struct Prepared {
    jobs: Arc<BTreeMap<String, Definition>>,
    action: Action,
}

enum Action {
    Run { name: String, scope: Scope, dry_run: bool, now: Option<DateTime<Utc>>, json: bool },
    List { json: bool },
}

impl Prepared {
    pub fn new(command: &JobCommand, settings: &Settings) -> anyhow::Result<Self> {
        let jobs = Arc::new(definition::load_dir(&settings.jobs.dir)?);
        let action = match command {
            JobCommand::List { json } => Action::List { json: *json },
            JobCommand::Run { name, tenant, user, dry_run, now, json } => {
                if !jobs.contains_key(name) {
                    bail!(
                        "no job named `{name}`; jobs in {}: {}",
                        settings.jobs.dir.display(),
                        jobs.keys().cloned().collect::<Vec<_>>().join(", ")
                    );
                }
                let tenant = match (tenant, user) {
                    (Some(t), _) => {
                        Some(TenantId::parse(t.as_str()).map_err(|e| anyhow::anyhow!("--tenant: {}", e.message))?)
                    }
                    (None, Some(_)) => Some(TenantId::parse("default").expect("a valid id")),
                    (None, None) => None,
                };
                let user = user
                    .as_deref()
                    .map(|u| UserId::parse(u).map_err(|e| anyhow::anyhow!("--user: {}", e.message)))
                    .transpose()?;
                let now =
                    now.as_deref().map(|t| DateTime::parse_from_rfc3339(t).map(|t| t.to_utc())).transpose().map_err(
                        |err| anyhow::anyhow!("--now: expected an RFC 3339 time like 2026-01-31T12:00:00Z ({err})"),
                    )?;
                Action::Run { name: name.clone(), scope: Scope { tenant, user }, dry_run: *dry_run, now, json: *json }
            }
        };
        Ok(Self { jobs, action })
    }

    pub async fn run(self, db: &Database, settings: &Settings) -> anyhow::Result<()> {
        match self.action {
            Action::List { json } => list(db, &self.jobs, json).await,
            Action::Run { name, scope, dry_run, now, json } => {
                let run_id = control::trigger(&db.pool, &self.jobs, &name, &scope, Trigger::Cli, dry_run, now)
                    .await
                    .map_err(|err| match err {
                        ControlError::Database(err) => anyhow::Error::new(err).context("cannot queue the run"),
                        other => anyhow::anyhow!("{other}"),
                    })?;
                let (shutdown, shutdown_rx) = tokio::sync::watch::channel(false);
                tokio::spawn(async move {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        eprintln!("stopping after the unit in flight…");
                        let _ = shutdown.send(true);
                    }
                });
                let metrics = Metrics::new();
                let models = Models::from_settings(settings, &metrics, &self.jobs)?;
                let executor = Executor {
                    pool: db.pool.clone(),
                    jobs: self.jobs.clone(),
                    metrics,
                    models,
                    settings: settings.jobs.clone(),
                    worker_id: format!("cli:{}", std::process::id()),
                    shutdown: shutdown_rx,
                };
                let lock_wait = Duration::from_secs(settings.jobs.stale_secs.max(5));
                let run = executor.run_now(&name, run_id, lock_wait).await?;
                print_run(&run, json)?;
                if run.status != engram_core::jobs::runs::RunStatus::Succeeded {
                    bail!("run {} ended {}", run.id, run.status);
                }
                Ok(())
            }
        }
    }
}

fn print_run(run: &Run, json: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, run)?;
        writeln!(out)?;
        return Ok(());
    }
    let dry = if run.dry_run { " (dry run: nothing changed)" } else { "" };
    writeln!(out, "run {} of {}: {}{dry}", run.id, run.job, run.status)?;
    if let Some(reason) = &run.stop_reason {
        writeln!(out, "  stopped early: {}", reason.as_str())?;
    }
    if let Some(error) = &run.error {
        writeln!(out, "  error: {error}")?;
    }
    if let Some(counts) = run.counts.as_object() {
        for (action, n) in counts {
            writeln!(out, "  {action:<28} {n}")?;
        }
    }
    Ok(())
}

async fn list(db: &Database, jobs: &BTreeMap<String, Definition>, json: bool) -> anyhow::Result<()> {
    let overview = control::overview(&db.pool, jobs, &control::Reach::Installation).await?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &overview)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(out, "{:<20} {:<16} {:<8} {:<7} {:<22} next run", "job", "schedule", "enabled", "paused", "last run")?;
    for job in overview {
        let last = job
            .last_run
            .map_or_else(|| "never".to_owned(), |r| format!("{} {}", r.status, r.created_at.format("%m-%d %H:%M")));
        let next = job.next_run_at.map_or_else(|| "-".to_owned(), |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string());
        writeln!(
            out,
            "{:<20} {:<16} {:<8} {:<7} {:<22} {next}",
            job.name, job.schedule, job.enabled, job.paused, last
        )?;
    }
    Ok(())
}
