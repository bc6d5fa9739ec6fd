//! `POST /v1/feedback`: a client's verdict on a memory it was served.

use actix_web::{HttpResponse, post, web};
use serde_json::json;

use super::auth::require;
use super::error::ApiError;
use super::extract::JsonBody;
use super::state::AppState;
use crate::auth::{Principal, Scope};
use crate::feedback::{self, FeedbackError, FeedbackRequest};

#[post("/v1/feedback")]
async fn post_feedback(
    state: web::Data<AppState>,
    principal: Principal,
    body: JsonBody<FeedbackRequest>,
) -> Result<HttpResponse, ApiError> {
    require(&principal, Scope::Read)?;
    let (id, correction) = feedback::submit(&state.db, &principal.tenant, body.0).await.map_err(|err| match err {
        FeedbackError::Invalid(err) => ApiError::Invalid(err),
        FeedbackError::NotFound(_) => ApiError::NotFound(err.to_string()),
        FeedbackError::Database(err) => err.into(),
    })?;
    if correction {
        state.metrics.corrections.with_label_values(&["feedback"]).inc();
    }
    Ok(HttpResponse::Created().json(json!({"id": id})))
}

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(post_feedback);
}
