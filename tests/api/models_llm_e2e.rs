//! End to end against a real OpenAI-compatible server on loopback (llama-cpp-python
//! serving SmolLM2-135M, started by `scripts/test`). The model is tiny and invents
//! things, so the structure is asserted, not the content: an answer is parsed, and
//! with the model engram remembers at least what it remembers without one.

use std::collections::HashMap;

use std::sync::Arc;

use engram_base::configuration::{LlmProvider, LlmSettings};
use engram_base::metrics::Metrics;
use engram_base::models::{Llm, Prompt, TokenBudget};

use crate::consolidation::{JOBS, day, run_at, say};
use crate::helpers::{TestApp, spawn_app};
use crate::jobs::{executor_with, job_dir};

#[derive(Debug, serde::Deserialize)]
struct Summary {
    summary: String,
    topics: Vec<String>,
}

/// The small model behind the server `scripts/test` starts, once it answers.
async fn small_model(metrics: &Metrics, max_tokens: u32) -> Llm {
    let base_url = std::env::var("ENGRAM_TEST_LLM_URL").expect("ENGRAM_TEST_LLM_URL is set by scripts/test");
    let settings = LlmSettings {
        provider: LlmProvider::Openai,
        base_url: Some(base_url),
        model: Some("smollm2".into()),
        api_key: Some("unused".into()),
        max_tokens,
        timeout_secs: 180,
        ..Default::default()
    };
    let llm = Llm::from_settings(&settings, &Default::default(), metrics.clone()).unwrap().unwrap();
    // The server answers one request at a time, and other tests use it too: it may be
    // busy with their generations for a while before it lists its models.
    let patience = std::time::Instant::now() + std::time::Duration::from_secs(240);
    while let Err(err) = llm.check().await {
        assert!(std::time::Instant::now() < patience, "the server lists its models: {err:?}");
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    llm
}

#[tokio::test]
async fn a_real_server_returns_parsed_structured_output_and_counts_tokens() {
    let metrics = Metrics::new();
    let llm = small_model(&metrics, 200).await;
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

/// A user's active memories as `key` (keyed facts) or content (the others).
async fn remembered(app: &TestApp, user: &str) -> Vec<String> {
    let rows: Vec<(Option<String>, String)> =
        sqlx::query_as("SELECT key, content FROM memories WHERE user_id = $1 AND status = 'active' ORDER BY content")
            .bind(user)
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    rows.into_iter().map(|(key, content)| key.map(|k| format!("key {k}")).unwrap_or(content)).collect()
}

#[tokio::test]
async fn with_the_small_model_extract_facts_keeps_every_fact_the_rules_find() {
    let conversation = [
        "Hi there, I'm Priya Raman and I run the data team at Northwind.",
        "We just moved from Oracle over to PostgreSQL for the warehouse.",
        "Honestly I prefer tea over coffee in the mornings.",
        "我现在住在杭州，周末喜欢爬山。",
        "Our dashboards are all built with Grafana these days.",
    ];
    let (without, with) = (spawn_app().await, spawn_app().await);
    let metrics = Metrics::new();
    let llm = Arc::new(small_model(&metrics, 512).await);
    let dir = job_dir(JOBS);
    for (app, model) in [(&without, None), (&with, Some(llm))] {
        let key = app.key("acme", "read,ingest").await;
        say(app, &key, "priya", "s1", day(1, 9), &conversation).await;
        let run = run_at(&executor_with(&app.db, &dir, model), "extract_facts", day(1, 12), false).await;
        assert_eq!(run.counts["events_read"], 5, "{}", run.counts);
    }

    let by_rules = remembered(&without, "priya").await;
    let with_model = remembered(&with, "priya").await;
    assert!(by_rules.len() >= 4, "the rules find the conversation's facts: {by_rules:?}");
    let lost: Vec<&String> = by_rules.iter().filter(|m| !with_model.contains(m)).collect();
    assert!(lost.is_empty(), "with the model, engram lost what the rules found: {lost:?}\nwith it: {with_model:?}");
    // llama-cpp-python's server refuses `json_schema` with a 500 naming `json_object`:
    // engram asked again in `json_object`, and keeps asking so.
    let text = metrics.render();
    assert!(text.contains(r#"engram_llm_response_format{format="json_object",model="smollm2"} 1"#), "{text}");
    assert!(text.contains(r#"engram_llm_response_format{format="json_schema",model="smollm2"} 0"#), "{text}");
}
