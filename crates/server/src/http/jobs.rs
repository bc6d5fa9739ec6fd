//! `/admin/v1/jobs…`: list jobs, trigger runs, read a run, pause and resume schedules.
//! Each handler calls one operation of [`engram_core::service::jobs`], which says who
//! may reach what.

use actix_web::{HttpResponse, get, post, web};
use utoipa_actix_web::service_config::ServiceConfig;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::{Body, Query, parse_json};
use super::openapi::{ErrorBody, KeyRefused, Refused};
use super::state::AppState;
use engram_base::domain::RunId;
use engram_core::jobs::Run;
use engram_core::service::jobs::{self, JobList, Paused, Queued, RunPage, TriggerRequest};
use engram_core::service::users::PageQuery;

#[utoipa::path(
    tag = "jobs",
    responses((status = 200, description = "Every job with its schedule, state, last run and next tick", body = JobList),
              KeyRefused),
    security(("api_key" = []))
)]
#[get("/admin/v1/jobs")]
async fn list_jobs(state: web::Data<AppState>, principal: Authorized<need::Jobs>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(jobs::list(&state, &principal).await?))
}

#[utoipa::path(
    tag = "jobs",
    params(("job" = String, Path)),
    request_body = TriggerRequest,
    responses((status = 202, description = "Queued; a worker runs it", body = Queued),
              Refused, (status = 404, description = "No such job", body = ErrorBody),
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
    let request: TriggerRequest =
        if body.0.iter().all(u8::is_ascii_whitespace) { TriggerRequest::default() } else { parse_json(&body.0)? };
    Ok(HttpResponse::Accepted().json(jobs::trigger(&state, &principal, &path, request).await?))
}

#[utoipa::path(
    tag = "jobs",
    params(("run_id" = Uuid, Path)),
    responses((status = 200, description = "The run: status, counts, timestamps", body = Run),
              Refused, (status = 404, description = "No such run", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/admin/v1/jobs/runs/{run_id}")]
async fn get_run(
    state: web::Data<AppState>,
    principal: Authorized<need::Jobs>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = RunId::parse(&path)?;
    Ok(HttpResponse::Ok().json(jobs::run(&state, &principal, id).await?))
}

#[utoipa::path(
    tag = "jobs",
    params(("job" = String, Path), ("limit" = Option<i64>, Query, description = "1–200, default 20"),
           ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page")),
    responses((status = 200, description = "The job's runs, newest first", body = RunPage),
              Refused, (status = 404, description = "No such job", body = ErrorBody)),
    security(("api_key" = []))
)]
#[get("/admin/v1/jobs/{job}/runs")]
async fn list_runs(
    state: web::Data<AppState>,
    principal: Authorized<need::Jobs>,
    path: web::Path<String>,
    query: Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(jobs::runs(&state, &principal, &path, query.0).await?))
}

#[utoipa::path(
    tag = "jobs",
    params(("job" = String, Path)),
    responses((status = 200, description = "Paused on every replica until resumed", body = Paused),
              KeyRefused,
              (status = 404, description = "No such job", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/admin/v1/jobs/{job}/pause")]
async fn pause(
    state: web::Data<AppState>,
    principal: Authorized<need::Operator>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(jobs::set_paused(&state, &principal, &path, true).await?))
}

#[utoipa::path(
    tag = "jobs",
    params(("job" = String, Path)),
    responses((status = 200, description = "The schedule runs again", body = Paused),
              KeyRefused,
              (status = 404, description = "No such job", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/admin/v1/jobs/{job}/resume")]
async fn resume(
    state: web::Data<AppState>,
    principal: Authorized<need::Operator>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(jobs::set_paused(&state, &principal, &path, false).await?))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(list_jobs).service(list_runs).service(get_run).service(trigger_run).service(pause).service(resume);
}
