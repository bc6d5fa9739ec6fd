//! Embeddings and LLM calls behind one interface each.
//!
//! [`Embedder`] turns texts into [`Embedding`]s with the built-in local model
//! (on ONNX Runtime: the multilingual Universal Sentence Encoder by default, or the English
//! all-MiniLM-L6-v2) or any OpenAI-compatible endpoint.
//! [`Llm`] asks an OpenAI-compatible chat endpoint for structured output; with
//! `llm.provider = none` there is no LLM and jobs use their non-LLM fallbacks.
//! Remote calls are retried by error class under a per-call deadline ([`retry`]).

pub mod answers;
mod cache;
mod embedder;
mod embedding;
mod llm;
mod local;
mod openai;
mod prompt;
mod rerank;
pub mod retry;
pub mod segmenter;

pub use embedder::{Embedder, models_dir};
pub use embedding::Embedding;
pub use llm::{Llm, TokenBudget, extract_json};
pub use prompt::{Prompt, Prompts};
pub use rerank::Reranker;
pub use segmenter::Segmenter;

use crate::tls::{ConnectFailure, endpoint_of};

/// The span of one call to a model: which model, for what (a job or prompt name, never
/// user data), and, recorded when known, its outcome and tokens. Its duration is the call's.
pub(crate) fn model_span(kind: &'static str, model: &str, purpose: &str) -> tracing::Span {
    tracing::info_span!(
        "model call",
        otel.name = %format!("{kind} {model}"),
        otel.kind = "client",
        gen_ai.request.model = %model,
        purpose = %purpose,
        outcome = tracing::field::Empty,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        inputs = tracing::field::Empty,
    )
}

impl ModelError {
    /// A request that got no answer: which endpoint, and why (TLS, refused, timed out).
    pub fn from_request(err: &reqwest::Error) -> Self {
        let endpoint = err.url().map_or_else(|| "the endpoint".into(), endpoint_of);
        match ConnectFailure::diagnose(err) {
            Some(cause) => Self::Connect { endpoint, cause },
            None if err.is_timeout() => Self::Connect { endpoint, cause: ConnectFailure::TimedOut },
            None => Self::Exhausted { attempts: 1, last: format!("the request to {endpoint} failed") },
        }
    }
}

/// Why a model call failed. The `Display` text is safe to log: it never holds
/// prompts, completions, input texts or keys.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    #[error("{0}")]
    NotInstalled(String),
    #[error("the endpoint rejected the request with HTTP {status}: {message}")]
    Rejected { status: u16, message: String },
    #[error("gave up after {attempts} attempt(s): {last}")]
    Exhausted { attempts: u32, last: String },
    #[error("the endpoint answered with something that is not the expected JSON: {0}")]
    Malformed(String),
    #[error("the endpoint returned {got}-dimensional embeddings; {expected} are configured")]
    Dimension { expected: usize, got: usize },
    #[error("the run's LLM token budget of {0} tokens is spent")]
    BudgetExceeded(u64),
    #[error("the local model failed: {0}")]
    Local(String),
    #[error("invalid model configuration: {0}")]
    Config(String),
    #[error("cannot connect to {endpoint}: {cause}")]
    Connect { endpoint: String, cause: crate::tls::ConnectFailure },
}

impl ModelError {
    /// The bounded `status` label of `engram_llm_requests_total`.
    pub fn status_label(&self) -> &'static str {
        match self {
            Self::Rejected { status: 429, .. } => "rate_limited",
            Self::Rejected { .. } => "rejected",
            Self::Connect { cause, .. } if cause.is_tls() => "tls_error",
            Self::Exhausted { .. } | Self::Connect { .. } => "unavailable",
            Self::Malformed(_) | Self::Dimension { .. } => "malformed",
            Self::BudgetExceeded(_) => "budget_exceeded",
            Self::NotInstalled(_) | Self::Local(_) | Self::Config(_) => "error",
        }
    }
}
