//! The rerank stage against a stub reranker on loopback: the request in the shape the
//! TEI / Cohere-style servers read, both answer shapes, and engram's own order whenever
//! the reranker is slow, failing or unreadable — counted in the metrics.

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{TestApp, spawn_app_with, test_settings};

const MEMORIES: [&str; 3] =
    ["Prefers tea in the morning", "Drinks green tea after lunch", "Keeps a jar of oolong at the office"];

async fn app_with_reranker(stub: &MockServer, timeout_ms: u64) -> (TestApp, String) {
    let mut settings = test_settings();
    settings.rerank.url = Some(stub.uri());
    settings.rerank.model = Some("bge-reranker".into());
    settings.rerank.api_key = Some("rerank-secret".into());
    settings.rerank.timeout_ms = timeout_ms;
    let app = spawn_app_with(settings).await;
    let key = app.key("acme", "read,ingest").await;
    for content in MEMORIES {
        let response = app.post_as(&key, "/v1/users/tea/memories", &json!({"content": content})).await;
        assert_eq!(response.status(), 201);
    }
    (app, key)
}

async fn found(app: &TestApp, key: &str) -> Vec<(String, f64)> {
    let body =
        app.search(key, &json!({"user_id": "tea", "query": "what tea does the user drink?", "min_score": 0})).await;
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["content"].as_str().unwrap().to_owned(), r["score"].as_f64().unwrap()))
        .collect()
}

/// What the stub saw: the documents of the one rerank request.
async fn sent_documents(stub: &MockServer) -> Vec<String> {
    let requests = stub.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&requests.last().unwrap().body).unwrap();
    assert_eq!(body["documents"], body["texts"], "both names carry the documents");
    body["documents"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn the_reranker_orders_the_candidates_and_its_relevance_is_the_score() {
    let stub = MockServer::start().await;
    let (app, key) = app_with_reranker(&stub, 2000).await;
    let before: Vec<String> = {
        // What engram ranks without the stub answering yet: a 404 from it keeps its order.
        found(&app, &key).await.into_iter().map(|(c, _)| c).collect()
    };
    let sent = sent_documents(&stub).await;
    assert_eq!(sent, before, "the best candidates are sent, best first");

    // Cohere's shape, relevance the reverse of engram's order.
    let results: Vec<Value> =
        (0..sent.len()).map(|i| json!({"index": i, "relevance_score": 0.2 + 0.3 * i as f64})).collect();
    Mock::given(method("POST"))
        .and(path("/rerank"))
        .and(header("authorization", "Bearer rerank-secret"))
        .and(body_partial_json(json!({"query": "what tea does the user drink?", "model": "bge-reranker"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"results": results})))
        .mount(&stub)
        .await;
    let after = found(&app, &key).await;
    let order: Vec<String> = after.iter().map(|(c, _)| c.clone()).collect();
    let reversed: Vec<String> = before.iter().rev().cloned().collect();
    assert_eq!(order, reversed);
    assert!((after[0].1 - (0.2 + 0.3 * (sent.len() - 1) as f64)).abs() < 1e-9, "{after:?}");
    let metrics = app.metrics().await;
    assert!(metrics.contains("engram_rerank_calls_total{outcome=\"ok\"} 1"), "{metrics}");
    assert!(metrics.contains("engram_rerank_calls_total{outcome=\"error\"} 1"), "the 404 before");
}

#[tokio::test]
async fn tei_logits_are_read_and_kept_in_their_order() {
    let stub = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/rerank"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([
            {"index": 2, "score": 6.0}, {"index": 0, "score": -2.0}, {"index": 1, "score": 1.0}
        ])))
        .mount(&stub)
        .await;
    let (app, key) = app_with_reranker(&stub, 2000).await;
    let sent = {
        let _ = found(&app, &key).await;
        sent_documents(&stub).await
    };
    let after = found(&app, &key).await;
    assert_eq!(after[0].0, sent[2]);
    assert_eq!(after[1].0, sent[1]);
    assert!(after.iter().all(|(_, s)| (0.0..=1.0).contains(s)), "{after:?}");
}

#[tokio::test]
async fn a_slow_or_broken_reranker_leaves_engrams_order() {
    let stub = MockServer::start().await;
    let (app, key) = app_with_reranker(&stub, 200).await;
    let order = |results: Vec<(String, f64)>| results.into_iter().map(|(content, _)| content).collect::<Vec<_>>();
    let own = order(found(&app, &key).await);
    for template in [
        ResponseTemplate::new(200).set_delay(Duration::from_secs(2)).set_body_json(json!([])),
        ResponseTemplate::new(500).set_body_string("model not loaded"),
        ResponseTemplate::new(200).set_body_json(json!({"results": [{"index": 0, "relevance_score": 0.9}]})),
    ] {
        stub.reset().await;
        Mock::given(method("POST")).and(path("/rerank")).respond_with(template).mount(&stub).await;
        assert_eq!(order(found(&app, &key).await), own, "engram's own ranking");
    }
    let metrics = app.metrics().await;
    assert!(metrics.contains("engram_rerank_calls_total{outcome=\"timeout\"} 1"), "{metrics}");
    assert!(metrics.contains("engram_rerank_calls_total{outcome=\"error\"} 3"), "{metrics}");
}

#[test]
fn rerank_settings_are_checked_by_key() {
    let settings = |pairs: &[(&str, &str)]| {
        let env = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        engram_base::configuration::Settings::load(None, env).map(|_| ()).unwrap_err().to_string()
    };
    assert!(settings(&[("ENGRAM_RERANK__URL", "localhost:8080")]).contains("rerank.url"));
    assert!(settings(&[("ENGRAM_RERANK__CANDIDATES", "1")]).contains("rerank.candidates"));
    assert!(settings(&[("ENGRAM_RERANK__TIMEOUT_MS", "0")]).contains("rerank.timeout_ms"));
}
