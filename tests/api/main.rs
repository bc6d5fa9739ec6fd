//! Integration tests: each test gets its own freshly migrated database on the real
//! PostgreSQL that `scripts/test` starts, and its own server on a random port.

mod admin_jobs;
mod auth;
mod cleanup;
mod connections;
mod consolidation;
mod consolidation_llm;
mod context;
mod control_plane;
mod current_state;
mod embedded;
mod episodic;
mod forget;
mod forget_requests;
mod graph;
mod hardening;
mod health;
mod helpers;
mod ingest;
mod isolation;
mod jobs;
mod measure;
mod memory_control;
mod models_llm_e2e;
mod models_local;
mod models_openai;
mod observability;
mod openapi;
mod operations;
mod pipeline;
mod processes;
mod read_api;
mod reembed;
mod search;
mod sharper_facts;
mod user_indexes;
