//! The consolidation worker: jobs declared in `jobs/*.toml`, run on a schedule or on
//! demand, safe with any number of replicas.
//!
//! How replicas share the work, with PostgreSQL as the only coordinator:
//! - **Ticks.** Every worker replica runs the same cron timers (tokio-cron-scheduler,
//!   in process). A tick only *enqueues* a run, and `(job, tick_at)` is unique in
//!   `job_runs`, so N replicas enqueue it once. Admin and CLI triggers enqueue too.
//! - **Runs.** An executor claims a queued run only while holding the job's session
//!   advisory lock on a connection of its own, kept for the whole run: one run of a job
//!   at a time across all replicas. A worker that dies loses its connection and with it
//!   the lock; the next executor to take the lock marks its run abandoned.
//! - **Units.** A run works user by user. Each unit locks its `job_checkpoints` row
//!   (`FOR UPDATE SKIP LOCKED`), does its changes and history rows, and records the
//!   run's pass in the checkpoint, all in one transaction as the tenant. A crash loses
//!   the unit in flight only; a run that repeats the scope of an abandoned or cancelled
//!   one continues its pass and skips the units already done. A failing unit is
//!   recorded and retried with backoff by later runs; the run goes on. A job's
//!   `concurrency` runs that many units at once, each on its own connection.
//! - **Dry runs** do every unit's work and roll its transaction back.
//! - `index_large_users` is the exception to both: index DDL cannot run in a
//!   transaction, so its units are idempotent steps without checkpoints, and its dry
//!   runs only count.

mod checkpoints;
pub mod control;
mod dedup;
pub mod definition;
mod evict;
mod extract_facts;
pub mod facts;
pub mod index_large_users;
pub mod job;
mod llm_usage;
mod purge;
mod reflect;
mod runner;
pub mod runs;
pub mod scheduler;
mod summarize_periods;
mod summarize_sessions;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::domain::{TenantId, UserId};
use crate::models::{Embedder, Llm, Prompts};

pub use definition::{Budget, Definition};
pub use job::{Job, Unit, UnitMode};

/// Every job engram knows, by the name of its file (`jobs/NAME.toml`), with the parser
/// of its `[params]`. Adding a job is a file in `src/jobs/` and a line here.
pub(crate) const REGISTRY: &[(&str, definition::ParseParams)] = &[
    ("summarize_sessions", definition::params::<summarize_sessions::SummarizeParams>),
    ("summarize_periods", definition::params::<summarize_periods::PeriodParams>),
    ("extract_facts", definition::params::<extract_facts::ExtractParams>),
    ("dedup", definition::params::<dedup::DedupParams>),
    ("evict", definition::params::<evict::EvictParams>),
    ("reflect", definition::params::<reflect::ReflectParams>),
    ("purge", definition::params::<purge::PurgeParams>),
    ("index_large_users", definition::params::<index_large_users::IndexParams>),
];
pub use runner::{Executor, RunOutcome};
pub use runs::{Enqueued, NewRun, Run};

/// The models jobs use: the embedder always, the LLM when one is configured (without
/// it every job takes its fallback path), and the prompts, read once.
#[derive(Clone)]
pub struct Models {
    pub embedder: Arc<Embedder>,
    pub llm: Option<Arc<Llm>>,
    pub prompts: Arc<Prompts>,
}

impl Models {
    /// The configured embedder and LLM, and the prompts of `jobs.dir` for `jobs`.
    pub fn from_settings(
        settings: &crate::configuration::Settings,
        metrics: &crate::metrics::Metrics,
        jobs: &BTreeMap<String, Definition>,
    ) -> anyhow::Result<Self> {
        let llm = Llm::from_settings(&settings.llm, metrics.clone())?.map(Arc::new);
        Ok(Self {
            embedder: Arc::new(Embedder::from_settings(&settings.embeddings, &settings.home, metrics.clone())?),
            prompts: load_prompts(&settings.jobs.dir, llm.is_some(), jobs)?,
            llm,
        })
    }
}

/// The prompts in `<jobs_dir>/prompts`. With an LLM, every prompt one of `jobs` sends
/// must be there and well-formed, or startup stops naming the file.
pub fn load_prompts(jobs_dir: &Path, llm: bool, jobs: &BTreeMap<String, Definition>) -> anyhow::Result<Arc<Prompts>> {
    let prompts = Prompts::load_dir(&jobs_dir.join("prompts"))?;
    if llm {
        prompts.require(jobs.values().filter_map(|d| d.job.prompt()))?;
    }
    Ok(Arc::new(prompts))
}

/// What a run covers: every tenant, one tenant, or one user of one tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub tenant: Option<TenantId>,
    pub user: Option<UserId>,
}

impl Scope {
    pub fn all() -> Self {
        Self::default()
    }

    pub fn tenant(tenant: TenantId) -> Self {
        Self { tenant: Some(tenant), user: None }
    }

    pub fn user(tenant: TenantId, user: UserId) -> Self {
        Self { tenant: Some(tenant), user: Some(user) }
    }

    /// From stored columns, which were valid when written.
    pub fn from_columns(tenant: Option<&str>, user: Option<&str>) -> Self {
        Self { tenant: tenant.and_then(|t| TenantId::parse(t).ok()), user: user.and_then(|u| UserId::parse(u).ok()) }
    }

    pub fn columns(&self) -> (Option<&str>, Option<&str>) {
        (self.tenant.as_ref().map(|t| t.as_str()), self.user.as_ref().map(|u| u.as_str()))
    }
}

/// Who asked for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, sqlx::Type, utoipa::ToSchema)]
#[sqlx(type_name = "text", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    Schedule,
    Admin,
    Cli,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Schedule => "schedule",
            Self::Admin => "admin",
            Self::Cli => "cli",
        }
    }
}

/// Items by action: what a unit or a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts(BTreeMap<String, i64>);

impl Counts {
    pub fn add(&mut self, action: &str, n: i64) {
        if n != 0 {
            *self.0.entry(action.to_owned()).or_default() += n;
        }
    }

    pub fn merge(&mut self, other: &Counts) {
        for (action, n) in &other.0 {
            self.add(action, *n);
        }
    }

    pub fn get(&self, action: &str) -> i64 {
        self.0.get(action).copied().unwrap_or(0)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(&self.0).expect("a map of integers serialises")
    }
}
