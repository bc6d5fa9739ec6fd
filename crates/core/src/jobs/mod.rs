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
mod embed_events;
mod evict;
mod extract_facts;
pub mod index_large_users;
pub mod job;
mod llm_usage;
mod purge;
mod redact;
mod reembed;
mod reflect;
mod registry;
mod run_state;
mod runner;
pub mod runs;
pub mod scheduler;
mod summarize_periods;
mod summarize_sessions;

pub use definition::Definition;
pub use definition::load_prompts;
pub use job::{Budget, Candidate, Counts, Job, Models, Scope, Unit, Units};

pub use runner::{Executor, RunOutcome};
pub use runs::{Enqueued, NewRun, Run, Trigger};
/// The summaries' vectors, for an import.
pub use summarize_periods::VECTORS as PERIOD_VECTORS;
pub use summarize_sessions::VECTORS as SESSION_VECTORS;
