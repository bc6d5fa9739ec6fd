//! A run's states: who asked for it, where it stands, and why it stopped early; stored as
//! text in `job_runs` and compared as types.

use serde::Serialize;

/// Who asked for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, sqlx::Type, utoipa::ToSchema)]
#[sqlx(type_name = "text", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    Schedule,
    Admin,
    Cli,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Schedule => "schedule",
            Self::Admin => "admin",
            Self::Cli => "cli",
        }
    }
}

/// Where a run is: queued, then running, then one of the finished states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, sqlx::Type, utoipa::ToSchema)]
#[sqlx(type_name = "text", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
    Abandoned,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Abandoned => "abandoned",
        }
    }
}

/// Tests and logs read a status as its name.
impl PartialEq<&str> for RunStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a run stopped before its last unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, sqlx::Type, utoipa::ToSchema)]
#[sqlx(type_name = "text", rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    MaxUsers,
    MaxLlmTokens,
    Timeout,
    Shutdown,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxUsers => "max_users",
            Self::MaxLlmTokens => "max_llm_tokens",
            Self::Timeout => "timeout",
            Self::Shutdown => "shutdown",
        }
    }
}
