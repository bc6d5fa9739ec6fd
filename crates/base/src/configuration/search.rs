//! `[search]` of `engram.toml`: lookups, their ranking across tiers, and the context block.

use std::path::PathBuf;

use serde::Deserialize;

/// How a lookup orders its candidates (`search.ranker`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RankerChoice {
    /// Weights fitted on labelled evidence, read from `search.ranker_file`; the blend
    /// when that file cannot be read.
    Learned,
    /// The hand-set blend: relevance × tier × time.
    #[default]
    Blend,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchSettings {
    pub default_limit: usize,
    pub max_limit: usize,
    /// Results below this score are dropped; a lookup with none left is a miss. Unset:
    /// the ranker's own (the learned ranker's file names the probability it abstains
    /// below; the blend's is 0.3).
    pub default_min_score: Option<f64>,
    pub max_query_chars: usize,
    /// The most candidates taken from each of the vector and the keyword search; a
    /// lookup takes twice its `limit` (at least 10), up to this.
    pub candidates: usize,
    /// pgvector's `hnsw.ef_search` for lookups in the shared HNSW graph.
    pub ef_search: u32,
    /// `hnsw.ef_search` for users with an HNSW index of their own (`index_large_users`):
    /// every node of their graph is theirs, so a shorter walk finds as much.
    pub user_index_ef_search: u32,
    /// Users with at most this many active memories (and, separately, raw turns) are
    /// searched by reading their rows; users with more through the HNSW and text indexes.
    pub scan_limit: u32,
    /// How often buffered access statistics are written.
    pub access_flush_ms: u64,
    /// The tier weight of raw turns on the one scale (facts: 0.8 + 0.2 × decay).
    pub event_weight: f64,
    /// Times `event_weight` for turns of the assistant, a tool or the system.
    pub other_turn_weight: f64,
    /// The weight of a result outside the window of a time phrase in the query.
    pub outside_window_weight: f64,
    pub context_default_tokens: usize,
    pub context_max_tokens: usize,
    /// The share of a context's budget for the current session's latest turns (with
    /// `session_id`).
    pub context_working_share: f64,
    /// The most of a context's budget the profile (identity and personal facts) takes.
    pub context_profile_share: f64,
    /// The share of a context's budget its relations section may take.
    pub context_relations_share: f64,
    /// Relevant lines of a context score at least this (lower than `default_min_score`:
    /// a model reading the block can use a weaker match; the hit still counts by that).
    /// Unset: the ranker's own (the blend's is 0.2).
    pub context_min_score: Option<f64>,
    pub ranker: RankerChoice,
    /// The learned ranker's weights; a relative path is found in the working directory,
    /// and in a release next to the binary.
    pub ranker_file: PathBuf,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            default_limit: 5,
            max_limit: 50,
            default_min_score: None,
            max_query_chars: 2000,
            candidates: 40,
            ef_search: 400,
            user_index_ef_search: 100,
            scan_limit: 2000,
            access_flush_ms: 1000,
            event_weight: 0.8,
            other_turn_weight: 0.8,
            outside_window_weight: 0.7,
            context_default_tokens: 512,
            context_max_tokens: 8192,
            context_working_share: 0.3,
            context_profile_share: 0.2,
            context_relations_share: 0.15,
            context_min_score: None,
            ranker: RankerChoice::Blend,
            ranker_file: PathBuf::from("ranker/learned.json"),
        }
    }
}
