//! `[rerank]` of `engram.toml`: an optional rerank stage between a lookup's candidates
//! and its results, served by a cross-encoder behind a `/rerank` endpoint.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RerankSettings {
    /// The reranker's base URL, to which engram appends `/rerank` (TEI, vLLM, llama.cpp's
    /// server, Cohere, Jina); none: no rerank stage.
    pub url: Option<String>,
    /// The model to name in the request, for servers that serve several.
    pub model: Option<String>,
    /// Sent as `Authorization: Bearer …` when set.
    pub api_key: Option<String>,
    /// How many of a lookup's best candidates, of every tier together, are reranked.
    pub candidates: usize,
    /// The deadline of one call; past it, or on any failure, a lookup keeps engram's order.
    pub timeout_ms: u64,
}

impl Default for RerankSettings {
    fn default() -> Self {
        Self { url: None, model: None, api_key: None, candidates: 20, timeout_ms: 1000 }
    }
}

impl RerankSettings {
    /// The first problem with these settings, naming the key.
    pub fn check(&self) -> Result<(), String> {
        if let Some(url) = &self.url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err("rerank.url: expected an http:// or https:// URL".into());
        }
        if !(2..=100).contains(&self.candidates) {
            return Err("rerank.candidates: must be between 2 and 100".into());
        }
        if !(1..=30_000).contains(&self.timeout_ms) {
            return Err("rerank.timeout_ms: must be between 1 and 30000".into());
        }
        Ok(())
    }
}
