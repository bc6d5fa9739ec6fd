//! What a lookup returns, and what a memory is: typed once, named in one place.

use serde::Serialize;

/// A stated fact, or an insight a job derived from facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, sqlx::Type, utoipa::ToSchema)]
#[sqlx(type_name = "text", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Fact,
    Insight,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fact => "fact",
            Self::Insight => "insight",
        }
    }
}

/// The kind of a search or context result: a memory, or a summary of sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    Fact,
    Insight,
    SessionSummary,
    PeriodSummary,
    /// A raw turn of a conversation (episodic memory).
    Event,
    /// A relation between two entities of the user's graph.
    Relation,
}

impl ResultKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fact => "fact",
            Self::Insight => "insight",
            Self::SessionSummary => "session_summary",
            Self::PeriodSummary => "period_summary",
            Self::Event => "event",
            Self::Relation => "relation",
        }
    }

    /// The memory kind, for results that are memories.
    pub fn memory(self) -> Option<Kind> {
        match self {
            Self::Fact => Some(Kind::Fact),
            Self::Insight => Some(Kind::Insight),
            Self::SessionSummary | Self::PeriodSummary | Self::Event | Self::Relation => None,
        }
    }
}

impl From<Kind> for ResultKind {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::Fact => Self::Fact,
            Kind::Insight => Self::Insight,
        }
    }
}
