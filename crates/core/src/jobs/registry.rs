//! Every job engram knows. Adding a job is a file in `src/jobs/` that implements
//! [`Job`] on its params, and one line here.

use std::sync::Arc;

use super::job::{AnyJob, Job};
use super::{
    dedup, embed_events, evict, extract_facts, index_large_users, purge, redact, reembed, reflect, summarize_periods,
    summarize_sessions,
};

/// Parses a job's `[params]` into the job.
pub(crate) type ParseParams = fn(toml::Table) -> Result<Arc<dyn AnyJob>, String>;

/// Every job engram knows, by the name of its file (`jobs/NAME.toml`), with the parser
/// of its `[params]`. Adding a job is a file in `src/jobs/` and a line here.
pub(crate) const REGISTRY: &[(&str, ParseParams)] = &[
    ("summarize_sessions", params::<summarize_sessions::SummarizeParams>),
    ("summarize_periods", params::<summarize_periods::PeriodParams>),
    ("extract_facts", params::<extract_facts::ExtractParams>),
    ("dedup", params::<dedup::DedupParams>),
    ("embed_events", params::<embed_events::EmbedParams>),
    ("reembed", params::<reembed::ReembedParams>),
    ("evict", params::<evict::EvictParams>),
    ("reflect", params::<reflect::ReflectParams>),
    ("purge", params::<purge::PurgeParams>),
    ("index_large_users", params::<index_large_users::IndexParams>),
    ("redact", params::<redact::RedactParams>),
];

/// A job's `[params]` as its typed parameters; errors carry the `params.` path.
fn params<T: Job + serde::de::DeserializeOwned + 'static>(table: toml::Table) -> Result<Arc<dyn AnyJob>, String> {
    typed::<T>(table).map(|params| Arc::new(params) as Arc<dyn AnyJob>)
}

/// A job's `[params]` as `T`; errors carry the `params.` path.
fn typed<T: serde::de::DeserializeOwned>(table: toml::Table) -> Result<T, String> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner().to_string();
        let inner = inner.trim_end();
        if path == "." { format!("params: {inner}") } else { format!("params.{path}: {inner}") }
    })
}
