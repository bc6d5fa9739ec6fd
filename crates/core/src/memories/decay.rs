//! Decay: how much a memory still matters. The formula is the SQL function
//! `engram_decay` (migrations/…_read_path.sql), which the evict job scores with;
//! search, which ranks a few candidates in the service, computes the same with
//! [`DecayParams::weight`]. This module holds its parameters, the per-category decay
//! rates.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
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
    /// `engram_decay` of a memory of `category` with `importance`, last touched (accessed,
    /// or else created) at `touched` and accessed `accesses` times, as of `at`:
    /// importance × recency × access frequency, where recency = exp(−λ · days since
    /// touched) and frequency = 0.5 + 0.5 · min(1, ln(1 + accesses) / ln(11)).
    pub fn weight(
        &self,
        importance: f64,
        touched: DateTime<Utc>,
        accesses: i32,
        category: &str,
        at: DateTime<Utc>,
    ) -> f64 {
        let lambda = self.lambdas.get(category).copied().unwrap_or(self.default_lambda);
        let seconds = (at - touched).num_microseconds().map_or(f64::MAX, |us| us as f64 / 1e6);
        let recency = (-lambda * (seconds / 86_400.0).max(0.0)).exp();
        let frequency = 0.5 + 0.5 * ((1.0 + f64::from(accesses.max(0))).ln() / 11f64.ln()).min(1.0);
        importance * recency * frequency
    }

    /// The rates as JSON for the `$lambdas ->> category` lookup in SQL.
    pub fn lambdas_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.lambdas).expect("a map of numbers serialises")
    }
}
