//! The one mapping from failures to HTTP responses:
//! `{"error": {"code": "snake_case", "message": "human text"}}`.
//! Server-side failures are logged here and reach the client as a bare 500/503.

use super::openapi::{ErrorBody, ErrorDetail};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use engram_base::auth::Scope;
use engram_base::domain::ValidationError;
use engram_core::service::Error;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Invalid(#[from] ValidationError),
    #[error("a valid API key is required: send `Authorization: Bearer <key>`")]
    Unauthorized,
    #[error("this API key lacks the `{0}` scope")]
    Forbidden(Scope),
    #[error("this API key is bound to user `{0}` and reaches no other user")]
    OtherUser(String),
    #[error("requests from this origin are not allowed: list it in server.cors_origins")]
    OriginNotAllowed,
    #[error("the request body exceeds the limit of {0} bytes")]
    PayloadTooLarge(usize),
    #[error("the request body must be JSON: send `Content-Type: application/json`")]
    UnsupportedMediaType,
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("this API key is over its rate limit; retry after the number of seconds in Retry-After")]
    RateLimited(std::time::Duration),
    #[error("the service is temporarily unavailable")]
    Unavailable,
    /// `/readyz`: why this process is not ready.
    #[error("{0}")]
    NotReady(String),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl ApiError {
    fn code(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid_request",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden(_) | Self::OtherUser(_) | Self::OriginNotAllowed => "forbidden",
            Self::PayloadTooLarge(_) => "payload_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::NotFound(_) => "not_found",
            Self::Conflict(_) => "conflict",
            Self::RateLimited(_) => "rate_limited",
            Self::Unavailable => "unavailable",
            Self::NotReady(_) => "not_ready",
            Self::Internal(_) => "internal",
        }
    }
}

impl ApiError {
    /// What the client is told: code, message and, for invalid input, the field. An
    /// internal failure is logged here, and the client learns nothing of it.
    pub fn body(&self) -> ErrorBody {
        if let Self::Internal(err) = self {
            tracing::error!(error = format!("{err:#}"), "request failed");
        }
        let field = match self {
            Self::Invalid(err) => Some(err.field.clone()),
            _ => None,
        };
        ErrorBody { error: ErrorDetail { code: self.code(), message: self.to_string(), field } }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Invalid(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::OtherUser(_) | Self::OriginNotAllowed => StatusCode::FORBIDDEN,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable | Self::NotReady(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let body = self.body();
        let mut response = HttpResponse::build(self.status_code());
        if matches!(self, Self::Unauthorized) {
            response.insert_header(("WWW-Authenticate", "Bearer"));
        }
        if let Self::RateLimited(wait) = self {
            // Whole seconds, rounded up: a client that waits that long gets through.
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            response.insert_header(("Retry-After", seconds.max(1).to_string()));
        }
        response.json(body)
    }
}

impl From<Error> for ApiError {
    fn from(err: Error) -> Self {
        match err {
            Error::Invalid(err) => Self::Invalid(err),
            Error::Forbidden(scope) => Self::Forbidden(scope),
            Error::OtherUser(user) => Self::OtherUser(user.to_string()),
            Error::NotFound(message) => Self::NotFound(message),
            Error::Conflict(message) => Self::Conflict(message),
            Error::Unavailable => Self::Unavailable,
            Error::Internal(err) => Self::Internal(err),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        Error::from(err).into()
    }
}
