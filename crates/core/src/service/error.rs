//! What an operation can fail with, in the domain's terms. Each transport maps these
//! once: `http/error.rs` to a status and `{"error": …}` body, `mcp/` to a tool error
//! carrying the same body.

use serde::Serialize;
use utoipa::ToSchema;

use crate::ingest::IngestError;
use crate::search::SearchError;
use engram_base::auth::Scope;
use engram_base::domain::{UserId, ValidationError};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller's input, naming the field.
    #[error("{0}")]
    Invalid(#[from] ValidationError),
    /// The caller's key lacks a scope.
    #[error("this API key lacks the `{0}` scope")]
    Forbidden(Scope),
    /// The caller's key is bound to another user.
    #[error("this API key is bound to user `{0}` and reaches no other user")]
    OtherUser(UserId),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// The database or a model endpoint cannot answer now; a retry may succeed.
    #[error("the service is temporarily unavailable")]
    Unavailable,
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl From<sqlx::Error> for Error {
    fn from(err: sqlx::Error) -> Self {
        if database_gone(&err) {
            tracing::error!(error = %err, "database unavailable");
            return Self::Unavailable;
        }
        Self::Internal(err.into())
    }
}

/// The database cannot answer now, but may on a retry: no connection to be had, or the
/// connection lost — cut, or ended by a server shutting down or restarting (SQLSTATE
/// class 08, and 57P01–57P03).
fn database_gone(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(err) => err
            .code()
            .is_some_and(|code| code.starts_with("08") || matches!(code.as_ref(), "57P01" | "57P02" | "57P03")),
        _ => false,
    }
}

impl From<SearchError> for Error {
    fn from(err: SearchError) -> Self {
        match err {
            SearchError::Embedding(err) => {
                tracing::error!(error = %err, "cannot embed a query");
                Self::Unavailable
            }
            SearchError::Database(err) => err.into(),
        }
    }
}

impl From<crate::context::ContextError> for Error {
    fn from(err: crate::context::ContextError) -> Self {
        match err {
            crate::context::ContextError::Invalid(err) => Self::Invalid(err),
            crate::context::ContextError::Search(err) => err.into(),
            crate::context::ContextError::Database(err) => err.into(),
        }
    }
}

impl From<IngestError> for Error {
    fn from(err: IngestError) -> Self {
        match err {
            IngestError::Invalid(err) => Self::Invalid(err),
            IngestError::Contended | IngestError::IdTaken(_) => Self::Conflict(err.to_string()),
            IngestError::Database(err) => err.into(),
        }
    }
}

impl From<crate::jobs::control::ControlError> for Error {
    fn from(err: crate::jobs::control::ControlError) -> Self {
        use crate::jobs::control::ControlError;
        match err {
            ControlError::UnknownJob(_) => Self::NotFound(err.to_string()),
            ControlError::Overlaps { .. } => Self::Conflict(err.to_string()),
            ControlError::Database(err) => err.into(),
        }
    }
}

impl From<engram_base::models::ModelError> for Error {
    fn from(err: engram_base::models::ModelError) -> Self {
        tracing::error!(error = %err, "cannot embed a memory");
        Self::Unavailable
    }
}

impl Error {
    /// The error's `code`, the same whatever the transport.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid_request",
            Self::Forbidden(_) | Self::OtherUser(_) => "forbidden",
            Self::NotFound(_) => "not_found",
            Self::Conflict(_) => "conflict",
            Self::Unavailable => "unavailable",
            Self::Internal(_) => "internal",
        }
    }

    /// What the caller is told. An internal failure is logged here, and the caller
    /// learns nothing of it.
    pub fn body(&self) -> ErrorBody {
        if let Self::Internal(err) = self {
            tracing::error!(error = format!("{err:#}"), "request failed");
        }
        let field = match self {
            Self::Invalid(err) => Some(err.field.clone()),
            _ => None,
        };
        ErrorBody::new(self.code(), self.to_string(), field)
    }
}

/// `{"error": {"code", "message", "field"?}}`: every error engram answers.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

impl ErrorBody {
    pub fn new(code: &'static str, message: String, field: Option<String>) -> Self {
        Self { error: ErrorDetail { code, message, field } }
    }
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `invalid_request`, `unauthorized`, `forbidden`, `not_found`, `conflict`,
    /// `payload_too_large`, `unsupported_media_type`, `rate_limited`, `unavailable`,
    /// `not_ready`, `internal`
    pub code: &'static str,
    pub message: String,
    /// The offending field of an `invalid_request`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}
