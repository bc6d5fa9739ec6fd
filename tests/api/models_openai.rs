//! The OpenAI-compatible protocol, against a local stub server: request shape,
//! retries by error class, malformed answers and the metrics.

use std::collections::HashMap;

use engram_base::configuration::{EmbeddingProvider, EmbeddingSettings, LlmProvider, LlmSettings};
use engram_base::metrics::Metrics;
use engram_base::models::{Embedder, Llm, ModelError, Prompt, TokenBudget};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn remote(server: &MockServer, dims: u32, timeout_secs: u64) -> (Embedder, Metrics) {
    let metrics = Metrics::new();
    let settings = EmbeddingSettings {
        provider: EmbeddingProvider::Openai,
        base_url: Some(server.uri()),
        model: Some("test-embed".into()),
        api_key: Some("sk-test-key".into()),
        dimensions: Some(dims),
        timeout_secs,
        ..Default::default()
    };
    (
        Embedder::from_settings(&settings, std::path::Path::new(".engram"), &Default::default(), metrics.clone())
            .unwrap(),
        metrics,
    )
}

fn embeddings_body(vectors: &[(u32, Vec<f32>)]) -> Value {
    let data: Vec<Value> =
        vectors.iter().map(|(index, v)| json!({"object": "embedding", "index": index, "embedding": v})).collect();
    json!({"object": "list", "data": data, "model": "test-embed", "usage": {"prompt_tokens": 4, "total_tokens": 4}})
}

fn api_error(message: &str) -> Value {
    json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}})
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn embeddings_are_requested_in_the_openai_shape_and_returned_in_input_order() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/embeddings"))
        .and(header("authorization", "Bearer sk-test-key"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(embeddings_body(&[(1, vec![0.0, 2.0, 0.0]), (0, vec![3.0, 0.0, 4.0])])),
        )
        .expect(1)
        .mount(&server)
        .await;
    let (embedder, metrics) = remote(&server, 3, 10);

    let vectors = embedder.embed(&texts(&["first", "second"])).await.unwrap();

    assert_eq!(vectors[0].as_slice(), &[0.6, 0.0, 0.8], "index 0 first, normalised");
    assert_eq!(vectors[1].as_slice(), &[0.0, 1.0, 0.0]);
    let request: Value = server.received_requests().await.unwrap()[0].body_json().unwrap();
    assert_eq!(request, json!({"model": "test-embed", "input": ["first", "second"]}));
    assert!(metrics.render().contains(r#"engram_embeddings_total{model="test-embed"} 2"#));

    // Cached texts are not sent again.
    embedder.embed(&texts(&["second"])).await.unwrap();
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_and_the_call_succeeds() {
    let server = MockServer::start().await;
    Mock::given(path("/embeddings"))
        .respond_with(
            ResponseTemplate::new(429).insert_header("retry-after", "1").set_body_json(api_error("slow down")),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(path("/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(embeddings_body(&[(0, vec![1.0, 0.0, 0.0])])))
        .mount(&server)
        .await;
    let (embedder, _) = remote(&server, 3, 10);

    let started = std::time::Instant::now();
    let vector = embedder.embed_one("hello").await.unwrap();

    assert_eq!(vector.as_slice(), &[1.0, 0.0, 0.0]);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    assert!(started.elapsed() >= std::time::Duration::from_secs(1), "Retry-After was honoured");
}

#[tokio::test]
async fn errors_in_foreign_shapes_keep_their_status() {
    let server = MockServer::start().await;
    Mock::given(path("/embeddings"))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({"detail": [{"msg": "field required"}]})))
        .mount(&server)
        .await;
    let (embedder, _) = remote(&server, 3, 10);

    let err = embedder.embed_one("hello").await.unwrap_err();

    assert!(matches!(err, ModelError::Rejected { status: 422, .. }), "{err:?}");
    assert!(err.to_string().contains("field required"), "{err}");
}

#[tokio::test]
async fn a_bad_request_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(path("/embeddings"))
        .respond_with(ResponseTemplate::new(400).set_body_json(api_error("input too long")))
        .mount(&server)
        .await;
    let (embedder, _) = remote(&server, 3, 10);

    let err = embedder.embed_one("hello").await.unwrap_err();

    assert!(matches!(err, ModelError::Rejected { status: 400, .. }), "{err:?}");
    assert!(err.to_string().contains("input too long"));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_until_the_deadline_then_reported() {
    let server = MockServer::start().await;
    Mock::given(path("/embeddings"))
        .respond_with(ResponseTemplate::new(503).set_body_string("upstream overloaded"))
        .mount(&server)
        .await;
    // A deadline with room for several attempts on a busy machine (the suite runs in parallel).
    let (embedder, _) = remote(&server, 3, 8);

    let started = std::time::Instant::now();
    let err = embedder.embed_one("hello").await.unwrap_err();

    assert!(matches!(err, ModelError::Exhausted { .. }), "{err:?}");
    assert!(err.to_string().contains("503"), "{err}");
    assert!(server.received_requests().await.unwrap().len() >= 3, "retried");
    assert!(started.elapsed() < std::time::Duration::from_secs(9), "within the deadline");
}

#[tokio::test]
async fn a_closed_port_is_named_as_a_refused_connection() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let settings = EmbeddingSettings {
        provider: EmbeddingProvider::Openai,
        base_url: Some(format!("http://127.0.0.1:{port}/v1")),
        model: Some("m".into()),
        dimensions: Some(3),
        timeout_secs: 1,
        ..Default::default()
    };
    let embedder =
        Embedder::from_settings(&settings, std::path::Path::new(".engram"), &Default::default(), Metrics::new())
            .unwrap();

    let err = embedder.embed_one("hello").await.unwrap_err();

    assert!(err.to_string().contains(&format!("127.0.0.1:{port}: connection refused")), "{err}");
}

#[tokio::test]
async fn malformed_answers_and_wrong_dimensions_are_errors_not_panics() {
    let server = MockServer::start().await;
    Mock::given(path("/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{not json"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(path("/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(embeddings_body(&[(0, vec![1.0, 0.0, 0.0, 0.0])])))
        .mount(&server)
        .await;
    let (embedder, _) = remote(&server, 3, 10);

    let malformed = embedder.embed_one("a").await.unwrap_err();
    let wrong_dims = embedder.embed_one("b").await.unwrap_err();

    assert!(matches!(malformed, ModelError::Malformed(_)), "{malformed:?}");
    assert!(matches!(wrong_dims, ModelError::Dimension { expected: 3, got: 4 }), "{wrong_dims:?}");
}

#[derive(Debug, serde::Deserialize)]
struct Summary {
    summary: String,
    topics: Vec<String>,
}

fn llm(server: &MockServer) -> (Llm, Metrics) {
    let metrics = Metrics::new();
    let settings = LlmSettings {
        provider: LlmProvider::Openai,
        base_url: Some(server.uri()),
        model: Some("test-chat".into()),
        api_key: Some("sk-test-key".into()),
        timeout_secs: 10,
        ..Default::default()
    };
    (Llm::from_settings(&settings, &Default::default(), metrics.clone()).unwrap().unwrap(), metrics)
}

fn prompt() -> Prompt {
    Prompt::load(std::path::Path::new("jobs/prompts"), "summarize_session").unwrap()
}

fn vars() -> HashMap<&'static str, String> {
    HashMap::from([
        ("event_count", "2".into()),
        ("started_at", "2026-01-01T10:00:00Z".into()),
        ("ended_at", "2026-01-01T10:05:00Z".into()),
        ("transcript", "user: we picked PostgreSQL\nassistant: noted".into()),
        ("max_words", "80".into()),
    ])
}

fn chat_body(content: &str) -> Value {
    json!({
        "id": "c1", "object": "chat.completion", "created": 1, "model": "test-chat",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    })
}

#[tokio::test]
async fn structured_output_is_requested_with_a_json_schema_and_parsed_tolerantly() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(chat_body(
            "```json\n{\"summary\": \"The team chose PostgreSQL.\", \"topics\": [\"database\"]}\n```",
        )))
        .mount(&server)
        .await;
    let (llm, metrics) = llm(&server);
    let budget = TokenBudget::new(Some(1000));

    let answer: Summary = llm.complete("summarize_session", &prompt(), &vars(), &budget).await.unwrap();

    assert_eq!(answer.summary, "The team chose PostgreSQL.");
    assert_eq!(answer.topics, vec!["database"]);
    let request: Value = server.received_requests().await.unwrap()[0].body_json().unwrap();
    assert_eq!(request["model"], "test-chat");
    assert_eq!(request["response_format"]["type"], "json_schema");
    assert_eq!(request["response_format"]["json_schema"]["schema"]["required"], json!(["summary", "topics"]));
    assert_eq!(request["messages"][0]["role"], "system");
    assert!(request["messages"][1]["content"].as_str().unwrap().contains("we picked PostgreSQL"));
    assert_eq!(budget.used(), 150);
    let text = metrics.render();
    assert!(
        text.contains(r#"engram_llm_tokens_total{kind="prompt",model="test-chat",purpose="summarize_session"} 120"#),
        "{text}"
    );
    assert!(
        text.contains(r#"engram_llm_tokens_total{kind="completion",model="test-chat",purpose="summarize_session"} 30"#)
    );
    assert!(text.contains(r#"engram_llm_requests_total{model="test-chat",purpose="summarize_session",status="ok"} 1"#));
}

#[tokio::test]
async fn a_server_without_json_schema_support_is_asked_through_the_prompt() {
    let server = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(
            ResponseTemplate::new(400).set_body_json(api_error("response_format json_schema is not supported")),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(path("/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(chat_body("Here you go: {\"summary\": \"s\", \"topics\": []}")),
        )
        .mount(&server)
        .await;
    let (llm, _) = llm(&server);

    let answer: Summary = llm.complete("summarize_session", &prompt(), &vars(), &TokenBudget::new(None)).await.unwrap();
    let again: Summary = llm.complete("summarize_session", &prompt(), &vars(), &TokenBudget::new(None)).await.unwrap();

    assert_eq!((answer.summary.as_str(), again.summary.as_str()), ("s", "s"));
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 3, "one rejected attempt, then the weaker format is remembered");
    let retried: Value = requests[1].body_json().unwrap();
    assert_eq!(retried["response_format"]["type"], "json_object");
    assert_eq!(retried["response_format"]["schema"]["required"], json!(["summary", "topics"]));
    assert!(retried["messages"][0]["content"].as_str().unwrap().contains("\"required\""));
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_schema_is_malformed_and_a_spent_budget_stops_calls() {
    let server = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(chat_body("{\"summary\": 42}")))
        .mount(&server)
        .await;
    let (llm, metrics) = llm(&server);
    let budget = TokenBudget::new(Some(100));

    let err = llm.complete::<Summary>("summarize_session", &prompt(), &vars(), &budget).await.unwrap_err();
    let spent = llm.complete::<Summary>("summarize_session", &prompt(), &vars(), &budget).await.unwrap_err();

    assert!(matches!(err, ModelError::Malformed(_)), "{err:?}");
    assert!(matches!(spent, ModelError::BudgetExceeded(100)), "{spent:?}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "no call once the budget is spent");
    let text = metrics.render();
    assert!(
        text.contains(r#"engram_llm_tokens_total{kind="prompt",model="test-chat",purpose="summarize_session"} 120"#)
    );
    assert!(
        text.contains(
            r#"engram_llm_requests_total{model="test-chat",purpose="summarize_session",status="malformed"} 1"#
        )
    );
    assert!(!text.contains("budget_exceeded"), "a call the budget stopped is no request");
}

#[tokio::test]
async fn a_missing_prompt_stops_startup_when_an_llm_is_configured() {
    let dir = crate::jobs::job_dir(&[("dedup", "schedule = \"0 0 3 * * *\"")]);
    let mut settings = crate::helpers::test_settings();
    settings.jobs.dir = dir.path().to_owned();
    let (db, _) = crate::helpers::fresh_database().await;
    assert!(
        engram_server::startup::Application::build(settings.clone(), db.clone()).await.is_ok(),
        "no LLM, no prompt needed"
    );

    settings.llm.provider = engram_base::configuration::LlmProvider::Openai;
    settings.llm.base_url = Some("http://127.0.0.1:9/v1".into());
    settings.llm.model = Some("any".into());
    let err = engram_server::startup::Application::build(settings, db).await.err().expect("startup stops").to_string();

    assert!(err.contains("dedup") && err.contains("prompts"), "the error names the prompt: {err}");
}
