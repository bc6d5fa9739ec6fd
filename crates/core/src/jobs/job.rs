//! What a job is to the runner: the [`Job`] trait each job implements on its typed
//! parameters, and the [`Unit`] of work it is handed. A leaf module: the jobs import
//! it, and it imports none of them (the registry in `jobs/mod.rs` names them).

use std::future::Future;
use std::pin::Pin;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::memories::decay::DecayParams;
use engram_base::domain::{Actor, TenantId, UserId};
use engram_base::models::{Embedder, Llm, Prompts};

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
        crate::memories::Change::by(Actor::Job(self.job.to_owned()), Some(self.run_id), reason)
    }
}

/// How the runner executes a job's units, with the job's method for one unit: a job
/// says which way it runs by the trait it implements, so one wired to the wrong way
/// does not compile.
pub enum Units<'a> {
    /// Each unit one transaction as its tenant, with its checkpoint; `custom_plans`
    /// when its statements should be planned for each user's size (10 memories or
    /// 100,000: the user's rows or the HNSW index).
    InTransaction { custom_plans: bool, job: &'a dyn AnyInTransaction },
    /// Steps that cannot run in a transaction (index DDL): idempotent, no checkpoints;
    /// a dry run only counts.
    OutsideTransaction(&'a dyn AnyOutsideTransaction),
}

/// A job whose units each run in the runner's transaction ([`Units::InTransaction`]).
pub trait InTransaction: Send + Sync {
    fn run_unit(
        &self,
        conn: &mut PgConnection,
        unit: &Unit<'_>,
        models: &Models,
    ) -> impl Future<Output = anyhow::Result<Counts>> + Send;
}

/// A job whose units run on the pool, outside a transaction ([`Units::OutsideTransaction`]).
pub trait OutsideTransaction: Send + Sync {
    fn run_outside(
        &self,
        pool: &PgPool,
        unit: &Unit<'_>,
        models: &Models,
        dry_run: bool,
    ) -> impl Future<Output = anyhow::Result<Counts>> + Send;
}

/// One user a job may have work for.
pub type Candidate = (TenantId, UserId);

/// A job: its parameters (parsed from `[params]` of `jobs/NAME.toml`) and what it
/// does with them, in plain `async fn`s. Register a new one with one line in
/// `jobs/registry.rs`; the runner holds it as an [`AnyJob`].
pub trait Job: std::fmt::Debug + Send + Sync {
    /// Checks what serde cannot (ranges, combinations); `concurrency` is the file's.
    fn check(&self, _concurrency: usize) -> Result<(), String> {
        Ok(())
    }

    /// The users this job may have work for, within `scope` (`models`: for work that
    /// depends on the configured models, such as vectors of another model).
    fn candidates(
        &self,
        pool: &PgPool,
        scope: &Scope,
        now: DateTime<Utc>,
        models: &Models,
    ) -> impl Future<Output = sqlx::Result<Vec<Candidate>>> + Send;

    /// How its units run, and the method that runs one.
    fn units(&self) -> Units<'_>;

    /// Work that belongs to no user, done once before the units, in a transaction of
    /// its own (rolled back in a dry run).
    fn before_units(
        &self,
        _conn: &mut PgConnection,
        _scope: &Scope,
        _run_id: Uuid,
        _now: DateTime<Utc>,
    ) -> impl Future<Output = sqlx::Result<Counts>> + Send {
        async { Ok(Counts::default()) }
    }

    /// The prompts (`jobs/prompts/NAME.md`) its LLM path sends, checked at startup when
    /// an LLM is configured.
    fn prompts(&self) -> &'static [&'static str] {
        &[]
    }

    /// The decay this job scores memories with, which lookups then rank by too.
    fn ranking_decay(&self) -> Option<&DecayParams> {
        None
    }
}

/// A [`Job`] as the registry and the runner hold it, behind `dyn`: the one place its
/// futures are boxed, for every job at once.
pub trait AnyJob: std::fmt::Debug + Send + Sync {
    fn check(&self, concurrency: usize) -> Result<(), String>;
    fn candidates<'a>(
        &'a self,
        pool: &'a PgPool,
        scope: &'a Scope,
        now: DateTime<Utc>,
        models: &'a Models,
    ) -> BoxFuture<'a, sqlx::Result<Vec<Candidate>>>;
    fn units(&self) -> Units<'_>;
    fn before_units<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        scope: &'a Scope,
        run_id: Uuid,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, sqlx::Result<Counts>>;
    fn prompts(&self) -> &'static [&'static str];
    fn ranking_decay(&self) -> Option<&DecayParams>;
}

impl<J: Job> AnyJob for J {
    fn check(&self, concurrency: usize) -> Result<(), String> {
        Job::check(self, concurrency)
    }

    fn candidates<'a>(
        &'a self,
        pool: &'a PgPool,
        scope: &'a Scope,
        now: DateTime<Utc>,
        models: &'a Models,
    ) -> BoxFuture<'a, sqlx::Result<Vec<Candidate>>> {
        Box::pin(Job::candidates(self, pool, scope, now, models))
    }

    fn units(&self) -> Units<'_> {
        Job::units(self)
    }

    fn before_units<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        scope: &'a Scope,
        run_id: Uuid,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, sqlx::Result<Counts>> {
        Box::pin(Job::before_units(self, conn, scope, run_id, now))
    }

    fn prompts(&self) -> &'static [&'static str] {
        Job::prompts(self)
    }

    fn ranking_decay(&self) -> Option<&DecayParams> {
        Job::ranking_decay(self)
    }
}

/// An [`InTransaction`] behind `dyn`, for [`Units`].
pub trait AnyInTransaction: Send + Sync {
    fn run_unit<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        unit: &'a Unit<'a>,
        models: &'a Models,
    ) -> BoxFuture<'a, anyhow::Result<Counts>>;
}

impl<J: InTransaction> AnyInTransaction for J {
    fn run_unit<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        unit: &'a Unit<'a>,
        models: &'a Models,
    ) -> BoxFuture<'a, anyhow::Result<Counts>> {
        Box::pin(InTransaction::run_unit(self, conn, unit, models))
    }
}

/// An [`OutsideTransaction`] behind `dyn`, for [`Units`].
pub trait AnyOutsideTransaction: Send + Sync {
    fn run_outside<'a>(
        &'a self,
        pool: &'a PgPool,
        unit: &'a Unit<'a>,
        models: &'a Models,
        dry_run: bool,
    ) -> BoxFuture<'a, anyhow::Result<Counts>>;
}

impl<J: OutsideTransaction> AnyOutsideTransaction for J {
    fn run_outside<'a>(
        &'a self,
        pool: &'a PgPool,
        unit: &'a Unit<'a>,
        models: &'a Models,
        dry_run: bool,
    ) -> BoxFuture<'a, anyhow::Result<Counts>> {
        Box::pin(OutsideTransaction::run_outside(self, pool, unit, models, dry_run))
    }
}

/// Per-run limits; a run that reaches one stops cleanly and records why.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Budget {
    /// Users (units) processed by one run.
    pub max_users: u64,
    /// LLM tokens (prompt + completion) one run may spend.
    pub max_llm_tokens: u64,
    /// The share of one user's active memories a single run may remove (at least one).
    pub max_removed_fraction: f64,
}

impl Default for Budget {
    fn default() -> Self {
        Self { max_users: 100_000, max_llm_tokens: 2_000_000, max_removed_fraction: 0.2 }
    }
}

/// The models jobs use: the embedder always, the LLM when one is configured (without
/// it every job takes its fallback path), and the prompts, read once.
#[derive(Clone)]
pub struct Models {
    pub embedder: Arc<Embedder>,
    pub llm: Option<Arc<Llm>>,
    pub prompts: Arc<Prompts>,
    /// The graph's settings and aliases, for `extract_facts` and `dedup`.
    pub graph: Arc<crate::graph::Graph>,
    /// The kinds of secret `ingest.redact` lists, which `redact` applies to stored rows.
    pub secret_kinds: Arc<Vec<String>>,
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
