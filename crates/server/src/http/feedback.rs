//! `POST /v1/feedback`: a client's verdict on a memory it was served.

use actix_web::{HttpResponse, post, web};
use utoipa_actix_web::service_config::ServiceConfig;

use super::auth::{Authorized, need};
use super::error::ApiError;
use super::extract::JsonBody;
use super::openapi::{ErrorBody, Refused};
use super::state::AppState;
use engram_core::feedback::FeedbackRequest;
use engram_core::service::feedback::{self, Created};

#[utoipa::path(
    tag = "lookups",
    request_body = FeedbackRequest,
    responses((status = 201, description = "Stored", body = Created), Refused,
              (status = 404, description = "No such memory for this user", body = ErrorBody)),
    security(("api_key" = []))
)]
#[post("/v1/feedback")]
async fn post_feedback(
    state: web::Data<AppState>,
    principal: Authorized<need::Read>,
    body: JsonBody<FeedbackRequest>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Created().json(feedback::submit(&state, &principal, body.0).await?))
}

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(post_feedback);
}
