//! The rerank stage's client: a query and documents to a cross-encoder behind
//! `POST {rerank.url}/rerank`, a relevance per document back. One request serves the
//! servers that share the shape (TEI, vLLM, llama.cpp's server, Cohere, Jina): it names
//! the documents both `documents` and `texts`, and either answer — `[{index, score}]` or
//! `{"results": [{index, relevance_score}]}` — is read. Every call has a deadline, and a
//! call that fails in any way is an error the caller answers by keeping its own order.

use std::time::{Duration, Instant};

use prometheus::{HistogramVec, IntCounterVec};
use serde_json::{Value, json};

use super::ModelError;
use crate::configuration::RerankSettings;
use crate::metrics::Metrics;
use crate::tls::Trust;
use tracing::Instrument;

pub struct Reranker {
    http: reqwest::Client,
    endpoint: String,
    model: Option<String>,
    api_key: Option<String>,
    /// How many of a lookup's best candidates are sent.
    pub candidates: usize,
    deadline: Duration,
    calls: IntCounterVec,
    duration: HistogramVec,
}

impl Reranker {
    /// The reranker `settings` describe; none without `rerank.url`.
    pub fn from_settings(
        settings: &RerankSettings,
        trust: &Trust,
        metrics: &Metrics,
    ) -> Result<Option<Self>, ModelError> {
        let Some(url) = &settings.url else { return Ok(None) };
        let http = trust.http_client(Duration::from_secs(2)).map_err(ModelError::Config)?;
        Ok(Some(Self {
            http,
            endpoint: format!("{}/rerank", url.trim_end_matches('/')),
            model: settings.model.clone(),
            api_key: settings.api_key.clone(),
            candidates: settings.candidates,
            deadline: Duration::from_millis(settings.timeout_ms),
            calls: metrics.rerank_calls.clone(),
            duration: metrics.rerank_duration.clone(),
        }))
    }

    /// A relevance in 0–1 for each of `documents`, in their order.
    pub async fn scores(&self, query: &str, documents: &[&str]) -> Result<Vec<f64>, ModelError> {
        let started = Instant::now();
        let span = super::model_span("rerank", self.model.as_deref().unwrap_or("reranker"), "rerank");
        span.record("inputs", documents.len());
        let answer = tokio::time::timeout(self.deadline, self.call(query, documents)).instrument(span.clone()).await;
        self.duration.with_label_values::<&str>(&[]).observe(started.elapsed().as_secs_f64());
        let (outcome, result) = match answer {
            Err(_) => ("timeout", Err(ModelError::Exhausted { attempts: 1, last: "the deadline passed".into() })),
            Ok(Ok(scores)) => ("ok", Ok(scores)),
            Ok(Err(err)) => ("error", Err(err)),
        };
        self.calls.with_label_values(&[outcome]).inc();
        span.record("outcome", outcome);
        result
    }

    async fn call(&self, query: &str, documents: &[&str]) -> Result<Vec<f64>, ModelError> {
        let mut body = json!({
            "query": query,
            "documents": documents,
            "texts": documents,
            "top_n": documents.len(),
            "return_documents": false,
        });
        if let Some(model) = &self.model {
            body["model"] = json!(model);
        }
        let mut headers = reqwest::header::HeaderMap::new();
        crate::telemetry::traces::inject(&mut headers);
        let mut request = self.http.post(&self.endpoint).headers(headers).json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| ModelError::from_request(&e))?;
        let status = response.status().as_u16();
        if status >= 400 {
            let text = response.text().await.unwrap_or_default();
            return Err(ModelError::Rejected { status, message: text.chars().take(200).collect() });
        }
        let answer: Value = response.json().await.map_err(|e| ModelError::Malformed(e.to_string()))?;
        read(&answer, documents.len())
    }
}

/// The scores in an answer, by document; every document must have one. Scores outside
/// 0–1 are logits (some servers answer raw), put on engram's scale by the logistic function.
fn read(answer: &Value, documents: usize) -> Result<Vec<f64>, ModelError> {
    let entries = answer
        .as_array()
        .or_else(|| answer["results"].as_array())
        .ok_or_else(|| ModelError::Malformed("no list of results".into()))?;
    let mut scores: Vec<Option<f64>> = vec![None; documents];
    for entry in entries {
        let index = entry["index"].as_u64().map(|i| i as usize);
        let score = entry["relevance_score"].as_f64().or_else(|| entry["score"].as_f64());
        if let (Some(index), Some(score)) = (index, score)
            && index < documents
            && score.is_finite()
        {
            scores[index] = Some(score);
        }
    }
    let scores: Vec<f64> = scores
        .into_iter()
        .collect::<Option<_>>()
        .ok_or_else(|| ModelError::Malformed("not every document has a score".into()))?;
    if scores.iter().all(|s| (0.0..=1.0).contains(s)) {
        Ok(scores)
    } else {
        Ok(scores.into_iter().map(|s| 1.0 / (1.0 + (-s).exp())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_answer_shapes_are_read_by_index() {
        let tei = json!([{"index": 1, "score": 0.9}, {"index": 0, "score": 0.2}]);
        assert_eq!(read(&tei, 2).unwrap(), vec![0.2, 0.9]);
        let cohere = json!({"results": [{"index": 0, "relevance_score": 0.4}, {"index": 1, "relevance_score": 0.7}]});
        assert_eq!(read(&cohere, 2).unwrap(), vec![0.4, 0.7]);
    }

    #[test]
    fn logits_are_put_on_a_zero_to_one_scale_keeping_their_order() {
        let raw = read(&json!([{"index": 0, "score": -3.0}, {"index": 1, "score": 4.5}]), 2).unwrap();
        assert!(raw[0] < 0.1 && raw[1] > 0.9);
    }

    #[test]
    fn an_answer_that_leaves_a_document_out_is_malformed() {
        assert!(read(&json!([{"index": 0, "score": 0.5}]), 2).is_err());
        assert!(read(&json!({"error": "model not loaded"}), 1).is_err());
    }
}
