//! The one mapping from failures to HTTP responses:
//! `{"error": {"code": "snake_case", "message": "human text"}}`. An operation's
//! [`Error`] keeps its code and message and gets its status here; the rest are what
//! only HTTP fails with (no key, a body too large, a rate limit, not ready).
//! Server-side failures are logged and reach the client as a bare 500/503.

use super::openapi::{ErrorBody, ErrorDetail};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use engram_base::domain::ValidationError;
use engram_core::service::Error;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// What an operation failed with.
    #[error(transparent)]
    Service(#[from] Error),
    #[error("a valid API key is required: send `Authorization: Bearer <key>`")]
    Unauthorized,
    #[error("requests from this origin are not allowed: list it in server.cors_origins")]
    OriginNotAllowed,
    #[error("the request body exceeds the limit of {0} bytes")]
    PayloadTooLarge(usize),
    #[error("the request body must be JSON: send `Content-Type: application/json`")]
    UnsupportedMediaType,
    #[error("this API key is over its rate limit; retry after the number of seconds in Retry-After")]
    RateLimited(std::time::Duration),
    /// `/readyz`: why this process is not ready.
    #[error("{0}")]
    NotReady(String),
}

impl ApiError {
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::Service(Error::NotFound(message.into()))
    }

    /// What the client is told: code, message and, for invalid input, the field.
    pub fn body(&self) -> ErrorBody {
        let code = match self {
            Self::Service(err) => return err.body(),
            Self::Unauthorized => "unauthorized",
            Self::OriginNotAllowed => "forbidden",
            Self::PayloadTooLarge(_) => "payload_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::RateLimited(_) => "rate_limited",
            Self::NotReady(_) => "not_ready",
        };
        ErrorBody { error: ErrorDetail { code, message: self.to_string(), field: None } }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::Service(err) => match err {
                Error::Invalid(_) => StatusCode::BAD_REQUEST,
                Error::Forbidden(_) | Error::OtherUser(_) => StatusCode::FORBIDDEN,
                Error::NotFound(_) => StatusCode::NOT_FOUND,
                Error::Conflict(_) => StatusCode::CONFLICT,
                Error::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
                Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            },
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::OriginNotAllowed => StatusCode::FORBIDDEN,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::NotReady(_) => StatusCode::SERVICE_UNAVAILABLE,
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

impl From<ValidationError> for ApiError {
    fn from(err: ValidationError) -> Self {
        Self::Service(err.into())
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        Self::Service(err.into())
    }
}
