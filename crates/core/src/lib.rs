//! What engram does with memory: events in, memories and the graph, lookups and the
//! context block, forgetting, the worker's jobs, and the operations (`service`) that the
//! HTTP API, MCP and the command line call.

pub mod access;
pub mod context;
pub mod feedback;
pub mod graph;
pub mod imports;
pub mod ingest;
pub mod jobs;
pub mod memories;
pub mod privacy;
pub mod search;
pub mod service;
pub mod sessions;
pub mod user_indexes;
pub mod users;
pub mod webhooks;
