//! engram's foundation: settings, the parsed types every layer speaks, the database and
//! its migrations, the embedders and the LLM, API keys, metrics, the clock, text rules.
//! It imports nothing of engram's other crates.

pub mod auth;
pub mod clock;
pub mod configuration;
pub mod db;
pub mod domain;
pub mod metrics;
pub mod models;
pub mod stored_texts;
pub mod stored_vectors;
pub mod telemetry;
pub mod tls;
