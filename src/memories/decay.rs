//! Decay: how much a memory still matters. The formula is the SQL function
//! `engram_decay` (migrations/…_read_path.sql); this module holds its parameters,
//! the per-category decay rates, shared by search and the evict job.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Per-category decay rates λ (per day): recency = exp(-λ · days since last touched).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecayParams {
    pub default_lambda: f64,
    pub lambdas: BTreeMap<String, f64>,
}

impl Default for DecayParams {
    fn default() -> Self {
        // Half-lives: identity never decays; preferences ~4.5 months; projects ~5 weeks.
        let lambdas = [
            ("identity", 0.0),
            ("personal", 0.002),
            ("preference", 0.005),
            ("lesson", 0.005),
            ("technical", 0.01),
            ("decision", 0.01),
            ("relationship", 0.003),
            ("project", 0.02),
            ("statement", 0.02),
            ("event", 0.03),
        ];
        Self { default_lambda: 0.01, lambdas: lambdas.into_iter().map(|(k, v)| (k.to_owned(), v)).collect() }
    }
}

impl DecayParams {
    /// The rates as JSON for the `$lambdas ->> category` lookup in SQL.
    pub fn lambdas_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.lambdas).expect("a map of numbers serialises")
    }
}
