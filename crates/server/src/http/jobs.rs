//! `/admin/v1/jobs…`: list jobs, trigger runs, read a run, pause and resume schedules.
//! A tenant's `admin` key sees and triggers only its own tenant's runs; schedules and
//! runs over every tenant need the `operator` scope. Queued runs are executed by a
//! worker replica.

use actix_web::{HttpResponse, get, post, web};
use serde::Deserialize;
use utoipa_actix_web::service_config::ServiceConfig;
use uuid::Uuid;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::Body;
use super::openapi::{ErrorBody, JobList, Paused, Queued};
use super::state::AppState;
use engram_base::auth::{Principal, Scope as KeyScope};
use engram_base::domain::TenantId;
use engram_base::domain::{UserId, ValidationError};
use engram_core::jobs::control::{self, ControlError, Reach};
use engram_core::jobs::{Run, Scope, Trigger};

/// An operator reaches the whole installation; anyone else their own tenant.
fn reach_of(principal: &Principal) -> Reach {
    if principal.has(KeyScope::Operator) { Reach::Installation } else { Reach::Tenant(principal.tenant.clone()) }
}

impl From<ControlError> for ApiError {
    fn from(err: ControlError) -> Self {
        match err {
            ControlError::UnknownJob(_) => ApiError::NotFound(err.to_string()),
            ControlError::Overlaps { .. } => ApiError::Conflict(err.to_string()),
            ControlError::Database(err) => err.into(),
        }
    }
}

#[utoipa::path(
    tag = "jobs",
    responses((status = 200, description = "Every job with its schedule, state, last run and next tick", body = JobList),
              (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/admin/v1/jobs")]
async fn list_jobs(state: web::Data<AppState>, principal: Authorized<need::Jobs>) -> Result<HttpResponse, ApiError> {
    let jobs = control::overview(&state.db.pool, &state.jobs, &reach_of(&principal)).await?;
    Ok(HttpResponse::Ok().json(JobList { jobs }))
}

/// A trigger; every field is optional and an empty body is fine.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerRequest {
    /// Only this user of the tenant; all its users when absent.
    user_id: Option<String>,
    /// The key's own tenant when absent; another tenant only with the `operator` scope.
    tenant: Option<String>,
    /// Every tenant (the schedule's scope); needs the `operator` scope.
    #[serde(default)]
    all_tenants: bool,
    /// Compute and report, change nothing.
    #[serde(default)]
    dry_run: bool,
}

#[utoipa::path(
    tag = "jobs",
    params(("job" = String, Path)),
    request_body = TriggerRequest,
    responses((status = 202, description = "Queued; a worker runs it", body = Queued),
              (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody),
              (status = 403, description = "The key lacks the scope", body = ErrorBody), (status = 404, description = "No such job", body = ErrorBody),
              (status = 409, description = "A run of this job for an overlapping scope is queued or running", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/admin/v1/jobs/{job}/runs")]
async fn trigger_run(
    state: web::Data<AppState>,
    principal: Authorized<need::Jobs>,
    path: web::Path<String>,
    body: Body,
) -> Result<HttpResponse, ApiError> {
    let request: TriggerRequest = if body.0.iter().all(u8::is_ascii_whitespace) {
        TriggerRequest::default()
    } else {
        serde_json::from_slice(&body.0).map_err(|err| ValidationError::new("body", err.to_string()))?
    };
    let operator = principal.has(KeyScope::Operator);
    let tenant = match request.tenant {
        Some(tenant) if tenant != principal.tenant.as_str() && !operator => {
            return Err(ApiError::Forbidden(KeyScope::Operator));
        }
        Some(tenant) => TenantId::parse(tenant)?,
        None => principal.tenant.clone(),
    };
    let scope = match (request.all_tenants, request.user_id) {
        (true, _) if !operator => return Err(ApiError::Forbidden(KeyScope::Operator)),
        (true, Some(_)) => return Err(ValidationError::new("all_tenants", "cannot be combined with user_id").into()),
        (true, None) => Scope::all(),
        (false, Some(user)) => Scope::user(tenant, UserId::parse(user)?),
        (false, None) => Scope::tenant(tenant),
    };
    let job = path.into_inner();
    let run_id =
        control::trigger(&state.db.pool, &state.jobs, &job, &scope, Trigger::Admin, request.dry_run, None).await?;
    tracing::info!(job, %run_id, "run queued by an operator");
    Ok(HttpResponse::Accepted().json(Queued { run_id }))
}

#[utoipa::path(
    tag = "jobs",
    params(("run_id" = Uuid, Path)),
    responses((status = 200, description = "The run: status, counts, timestamps", body = Run),
              (status = 400, description = "Not a UUID", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody),
              (status = 403, description = "The key lacks the scope", body = ErrorBody), (status = 404, description = "No such run", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/admin/v1/jobs/runs/{run_id}")]
async fn get_run(
    state: web::Data<AppState>,
    principal: Authorized<need::Jobs>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = Uuid::parse_str(&path).map_err(|_| ValidationError::new("run_id", "must be a UUID"))?;
    let run = control::run(&state.db.pool, id, &reach_of(&principal))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no run {id}")))?;
    Ok(HttpResponse::Ok().json(run))
}

/// A page of a job's runs; `next_cursor` is absent on the last.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct RunPage {
    pub runs: Vec<Run>,
    pub next_cursor: Option<String>,
}

#[utoipa::path(
    tag = "jobs",
    params(("job" = String, Path), ("limit" = Option<i64>, Query, description = "1–200, default 20"),
           ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page")),
    responses((status = 200, description = "The job's runs, newest first", body = RunPage),
              (status = 400, description = "Invalid input; `field` names it", body = ErrorBody), (status = 401, description = "No valid key", body = ErrorBody),
              (status = 403, description = "The key lacks the scope", body = ErrorBody), (status = 404, description = "No such job", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/admin/v1/jobs/{job}/runs")]
async fn list_runs(
    state: web::Data<AppState>,
    principal: Authorized<need::Jobs>,
    path: web::Path<String>,
    req: actix_web::HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let params = super::extract::query(&req, &["limit", "cursor"])?;
    let limit = params.int("limit", 20, 1..=engram_core::service::users::MAX_PAGE)?;
    let before = params
        .text("cursor")
        .map(|c| Uuid::parse_str(c).map_err(|_| ValidationError::new("cursor", "is not a cursor this API returned")))
        .transpose()?;
    let runs = control::runs(&state.db.pool, &state.jobs, &path, &reach_of(&principal), before, limit).await?;
    let next_cursor = (runs.len() as i64 == limit).then(|| runs.last().map(|r| r.id.to_string())).flatten();
    Ok(HttpResponse::Ok().json(RunPage { runs, next_cursor }))
}

async fn set_paused(
    state: &AppState,
    principal: &Principal,
    job: &str,
    paused: bool,
) -> Result<HttpResponse, ApiError> {
    control::set_paused(&state.db.pool, &state.jobs, job, paused, &format!("key:{}", principal.key_id)).await?;
    tracing::info!(job, paused, "job schedule switched");
    Ok(HttpResponse::Ok().json(Paused { job: job.to_owned(), paused }))
}

#[utoipa::path(
    tag = "jobs",
    params(("job" = String, Path)),
    responses((status = 200, description = "Paused on every replica until resumed", body = Paused),
              (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody),
              (status = 404, description = "No such job", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/admin/v1/jobs/{job}/pause")]
async fn pause(
    state: web::Data<AppState>,
    principal: Authorized<need::Operator>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    set_paused(&state, &principal, &path, true).await
}

#[utoipa::path(
    tag = "jobs",
    params(("job" = String, Path)),
    responses((status = 200, description = "The schedule runs again", body = Paused),
              (status = 401, description = "No valid key", body = ErrorBody), (status = 403, description = "The key lacks the scope", body = ErrorBody),
              (status = 404, description = "No such job", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/admin/v1/jobs/{job}/resume")]
async fn resume(
    state: web::Data<AppState>,
    principal: Authorized<need::Operator>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    set_paused(&state, &principal, &path, false).await
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(list_jobs).service(list_runs).service(get_run).service(trigger_run).service(pause).service(resume);
}
