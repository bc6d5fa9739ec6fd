//! One end-to-end call against a real OpenAI-compatible server on loopback
//! (llama.cpp serving SmolLM2-135M, started by `scripts/test`). The model is tiny and
//! invents things, so the structure is asserted, not the content.

use std::collections::HashMap;

use engram::configuration::{LlmProvider, LlmSettings};
use engram::metrics::Metrics;
use engram::models::{Llm, Prompt, TokenBudget};

#[derive(Debug, serde::Deserialize)]
struct Summary {
    summary: String,
    topics: Vec<String>,
}

#[tokio::test]
async fn a_real_server_returns_parsed_structured_output_and_counts_tokens() {
    let base_url = std::env::var("ENGRAM_TEST_LLM_URL").expect("ENGRAM_TEST_LLM_URL is set by scripts/test");
    let metrics = Metrics::new();
    let settings = LlmSettings {
        provider: LlmProvider::Openai,
        base_url: Some(base_url),
        model: Some("smollm2".into()),
        api_key: Some("unused".into()),
        max_tokens: 200,
        timeout_secs: 180,
        ..Default::default()
    };
    let llm = Llm::from_settings(&settings, metrics.clone()).unwrap().unwrap();
    // The server answers one request at a time, and other tests use it too: it may be
    // busy with their generations for a while before it lists its models.
    let patience = std::time::Instant::now() + std::time::Duration::from_secs(240);
    while let Err(err) = llm.check().await {
        assert!(std::time::Instant::now() < patience, "the server lists its models: {err:?}");
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    let prompt = Prompt::load(std::path::Path::new("jobs/prompts"), "summarize_session").unwrap();
    let vars = HashMap::from([
        ("event_count", "3".to_owned()),
        ("started_at", "2026-03-02T09:00:00Z".to_owned()),
        ("ended_at", "2026-03-02T09:10:00Z".to_owned()),
        (
            "transcript",
            "user: We moved our database from MySQL to PostgreSQL 16 last week.\n\
             assistant: Good choice. Any issues with the migration?\n\
             user: Only the JSON columns; we now use jsonb everywhere."
                .to_owned(),
        ),
        ("max_words", "60".to_owned()),
    ]);
    let budget = TokenBudget::new(Some(10_000));

    let answer: Summary = llm.complete("summarize_session", &prompt, &vars, &budget).await.expect("a parsed answer");

    assert!(!answer.summary.trim().is_empty(), "{answer:?}");
    assert!(answer.topics.len() <= 20, "{answer:?}");
    assert!(budget.used() > 0, "tokens are counted");
    let text = metrics.render();
    assert!(
        text.contains(r#"engram_llm_requests_total{model="smollm2",purpose="summarize_session",status="ok"} 1"#),
        "{text}"
    );
    assert!(text.contains(r#"engram_llm_tokens_total{kind="completion",model="smollm2",purpose="summarize_session"}"#));
}
