//! What a job is to the runner: the [`Job`] trait each job implements on its typed
//! parameters, and the [`Unit`] of work it is handed. A leaf module: the jobs import
//! it, and it imports none of them (the registry in `jobs/mod.rs` names them).

use std::future::Future;
use std::pin::Pin;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::definition::Budget;
use super::{Counts, Models, Run, Scope};
use crate::domain::{TenantId, UserId};
use crate::memories::decay::DecayParams;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One user's share of a run, as the job sees it.
pub struct Unit<'a> {
    /// The job's name: its changes are recorded as by `job:<name>`.
    pub job: &'a str,
    pub run_id: Uuid,
    pub tenant: &'a TenantId,
    pub user: &'a UserId,
    pub now: DateTime<Utc>,
    pub budget: &'a Budget,
    /// What the run's units finished before this one started counted.
    pub earlier: Counts,
}

impl Unit<'_> {
    /// A change this unit makes to a memory, for its history row.
    pub fn change(&self, reason: impl Into<String>) -> crate::memories::Change {
        crate::memories::Change::by(format!("job:{}", self.job), Some(self.run_id), reason)
    }
}

/// How the runner executes a job's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitMode {
    /// Each unit one transaction as its tenant, with its checkpoint; `custom_plans`
    /// when its statements should be planned for each user's size (10 memories or
    /// 100,000: the user's rows or the HNSW index).
    Transaction { custom_plans: bool },
    /// Steps that cannot run in a transaction (index DDL): idempotent, no checkpoints;
    /// a dry run only counts.
    OutsideTransaction,
}

/// A job: its parameters (parsed from `[params]` of `jobs/NAME.toml`) and what it
/// does with them. Register a new one with one line in `jobs/mod.rs`.
pub trait Job: std::fmt::Debug + Send + Sync {
    /// Checks what serde cannot (ranges, combinations); `concurrency` is the file's.
    fn check(&self, _concurrency: usize) -> Result<(), String> {
        Ok(())
    }

    /// The users this job may have work for, within `scope`.
    fn candidates<'a>(
        &'a self,
        pool: &'a PgPool,
        scope: &'a Scope,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, sqlx::Result<Vec<(String, String)>>>;

    fn mode(&self) -> UnitMode {
        UnitMode::Transaction { custom_plans: true }
    }

    /// Work that belongs to no user, done once before the units, in a transaction of
    /// its own (rolled back in a dry run).
    fn before_units<'a>(
        &'a self,
        _conn: &'a mut PgConnection,
        _run: &'a Run,
        _now: DateTime<Utc>,
    ) -> BoxFuture<'a, sqlx::Result<Counts>> {
        Box::pin(async { Ok(Counts::default()) })
    }

    /// One unit in the runner's transaction ([`UnitMode::Transaction`]).
    fn run_unit<'a>(
        &'a self,
        _conn: &'a mut PgConnection,
        _unit: &'a Unit<'a>,
        _models: &'a Models,
    ) -> BoxFuture<'a, anyhow::Result<Counts>> {
        Box::pin(async { anyhow::bail!("this job runs its units outside a transaction") })
    }

    /// One unit on the pool ([`UnitMode::OutsideTransaction`]).
    fn run_outside<'a>(
        &'a self,
        _pool: &'a PgPool,
        _unit: &'a Unit<'a>,
        _models: &'a Models,
        _dry_run: bool,
    ) -> BoxFuture<'a, anyhow::Result<Counts>> {
        Box::pin(async { anyhow::bail!("this job runs its units in a transaction") })
    }

    /// The prompt (`jobs/prompts/NAME.md`) its LLM path sends, checked at startup when
    /// an LLM is configured.
    fn prompt(&self) -> Option<&'static str> {
        None
    }

    /// The decay this job scores memories with, which lookups then rank by too.
    fn ranking_decay(&self) -> Option<&DecayParams> {
        None
    }
}
