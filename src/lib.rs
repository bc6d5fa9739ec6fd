//! engram: long-term memory for AI agents on PostgreSQL + pgvector.
//!
//! The binary's subcommands live in [`cli`]; the HTTP application is built by
//! [`startup::Application`]; everything that talks to the database takes a [`db::Database`].

pub mod auth;
pub mod bench;
pub mod cli;
pub mod configuration;
pub mod db;
pub mod domain;
pub mod http;
pub mod ingest;
pub mod metrics;
pub mod models;
pub mod startup;
pub mod telemetry;
