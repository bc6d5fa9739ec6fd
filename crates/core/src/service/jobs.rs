//! Job control: list the jobs, trigger a run, read runs, pause and resume schedules. A
//! tenant's `admin` key sees and triggers only its own tenant's runs; schedules and runs
//! over every tenant need the `operator` scope. Queued runs are executed by a worker.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::input::Page;
use super::users::PageQuery;
use super::{AppState, Error};
use crate::jobs::control::{self, JobOverview, Reach};
use crate::jobs::{Run, Scope, Trigger};
use engram_base::auth::{Principal, Scope as KeyScope};
use engram_base::domain::{RunId, TenantId, UserId, ValidationError};

#[derive(Serialize, ToSchema)]
pub struct JobList {
    pub jobs: Vec<JobOverview>,
}

#[derive(Serialize, ToSchema)]
pub struct Queued {
    pub run_id: Uuid,
}

#[derive(Serialize, ToSchema)]
pub struct Paused {
    pub job: String,
    pub paused: bool,
}

/// A page of a job's runs; `next_cursor` is absent on the last.
#[derive(Serialize, ToSchema)]
pub struct RunPage {
    pub runs: Vec<Run>,
    pub next_cursor: Option<String>,
}

/// A trigger; every field is optional and an empty body is fine.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerRequest {
    /// Only this user of the tenant; all its users when absent.
    #[schema(value_type = Option<String>)]
    pub user_id: Option<UserId>,
    /// The key's own tenant when absent; another tenant only with the `operator` scope.
    #[schema(value_type = Option<String>)]
    pub tenant: Option<TenantId>,
    /// Every tenant (the schedule's scope); needs the `operator` scope.
    #[serde(default)]
    pub all_tenants: bool,
    /// Compute and report, change nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// An operator reaches the whole installation; anyone else their own tenant.
fn reach_of(principal: &Principal) -> Reach {
    if principal.has(KeyScope::Operator) { Reach::Installation } else { Reach::Tenant(principal.tenant.clone()) }
}

/// Every job with its schedule, state, last run and next tick.
pub async fn list(state: &AppState, principal: &Principal) -> Result<JobList, Error> {
    Ok(JobList { jobs: control::overview(&state.db.pool, &state.jobs, &reach_of(principal)).await? })
}

/// Queues a run of `job` over what `request` names.
pub async fn trigger(
    state: &AppState,
    principal: &Principal,
    job: &str,
    request: TriggerRequest,
) -> Result<Queued, Error> {
    let operator = principal.has(KeyScope::Operator);
    let tenant = match request.tenant {
        Some(tenant) if tenant != principal.tenant && !operator => return Err(Error::Forbidden(KeyScope::Operator)),
        Some(tenant) => tenant,
        None => principal.tenant.clone(),
    };
    let scope = match (request.all_tenants, request.user_id) {
        (true, _) if !operator => return Err(Error::Forbidden(KeyScope::Operator)),
        (true, Some(_)) => return Err(ValidationError::new("all_tenants", "cannot be combined with user_id").into()),
        (true, None) => Scope::all(),
        (false, Some(user)) => Scope::user(tenant, user),
        (false, None) => Scope::tenant(tenant),
    };
    let run_id =
        control::trigger(&state.db.pool, &state.jobs, job, &scope, Trigger::Admin, request.dry_run, None).await?;
    tracing::info!(job, %run_id, "run queued by an operator");
    Ok(Queued { run_id })
}

/// One run: status, counts, timestamps.
pub async fn run(state: &AppState, principal: &Principal, id: RunId) -> Result<Run, Error> {
    control::run(&state.db.pool, id.0, &reach_of(principal))
        .await?
        .ok_or_else(|| Error::NotFound(format!("no run {id}")))
}

/// A job's runs, newest first; `limit` 1–200, 20 when absent.
pub async fn runs(state: &AppState, principal: &Principal, job: &str, query: PageQuery) -> Result<RunPage, Error> {
    let page = Page::new(query.limit, query.cursor, 20)?;
    let runs =
        control::runs(&state.db.pool, &state.jobs, job, &reach_of(principal), page.after_id(), page.limit).await?;
    let next_cursor = page.next(&runs, |r| r.id.to_string());
    Ok(RunPage { runs, next_cursor })
}

/// Pauses or resumes `job`'s schedule on every replica.
pub async fn set_paused(state: &AppState, principal: &Principal, job: &str, paused: bool) -> Result<Paused, Error> {
    control::set_paused(&state.db.pool, &state.jobs, job, paused, &principal.actor().to_string()).await?;
    tracing::info!(job, paused, "job schedule switched");
    Ok(Paused { job: job.to_owned(), paused })
}
