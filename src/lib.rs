//! engram: long-term memory for AI agents on PostgreSQL + pgvector.
//!
//! The binary's subcommands live in [`cli`]; the HTTP application is built by
//! [`startup::Application`]; everything that talks to the database takes a [`db::Database`].

pub mod access;
pub mod auth;
pub mod bench;
pub mod cli;
pub mod clock;
pub mod configuration;
pub mod context;
pub mod db;
pub mod domain;
pub mod eval;
pub mod event_vectors;
pub mod feedback;
pub mod graph;
pub mod http;
pub mod ingest;
pub mod jobs;
pub mod mcp;
pub mod memories;
pub mod metrics;
pub mod models;
pub mod privacy;
pub mod search;
pub mod service;
pub mod sessions;
pub mod startup;
pub mod stored_vectors;
pub mod technologies;
pub mod telemetry;
pub mod text;
pub mod user_indexes;
pub mod users;
