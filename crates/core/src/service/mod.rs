//! The operations engram offers, whatever the transport. HTTP handlers (`http/`) and
//! MCP tools (`mcp/`) only translate a request into one of these calls and map its
//! [`Error`] once each. Every operation takes the shared [`AppState`], the caller's
//! [`Principal`](engram_base::auth::Principal) (its tenant, scopes and bound user) and typed
//! input, and returns typed output: a tool and its route cannot disagree.

pub mod error;
pub mod events;
pub mod feedback;
pub mod graph;
pub mod input;
pub mod jobs;
pub mod lookups;
pub mod memories;
pub mod scopes;
pub mod state;
pub mod users;
pub mod webhooks;

pub use error::Error;
pub use state::AppState;
