//! Values parsed once at the edge: after construction they are known to be valid,
//! so inner code never checks them again.

mod actor;
pub mod event;
mod ids;
mod kinds;
mod owner;

pub use actor::Actor;
pub use engram_language::facts::Category;
pub use event::{NewEvent, Role};
pub use ids::{ClientEventId, Cursor, EntityId, MemoryId, RunId, SessionId, TenantId, UserId};
pub use kinds::{Kind, ResultKind};
pub use owner::Owner;

/// A client mistake in one named field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ValidationError {
    pub field: String,
    pub message: String,
}

impl ValidationError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }

    /// The same error one level down: `user_id` inside `events[3]`.
    pub fn within(mut self, parent: &str) -> Self {
        self.field = format!("{parent}.{}", self.field);
        self
    }
}
