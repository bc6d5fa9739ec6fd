//! Consolidation through an LLM: a scripted OpenAI-compatible endpoint on loopback
//! answers, and the jobs check what it says before storing it.

use std::sync::Arc;

use engram_base::configuration::{LlmProvider, LlmSettings};
use engram_base::models::Llm;
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::consolidation::{JOBS, day, run_at, say};
use crate::helpers::spawn_app;
use crate::jobs::{executor_with, job_dir};

fn llm(server: &MockServer) -> Arc<Llm> {
    llm_reporting_to(server, Default::default())
}

/// The scripted endpoint as engram's LLM, its metrics in `metrics`.
fn llm_reporting_to(server: &MockServer, metrics: engram_base::metrics::Metrics) -> Arc<Llm> {
    let settings = LlmSettings {
        provider: LlmProvider::Openai,
        base_url: Some(server.uri()),
        model: Some("scripted".into()),
        api_key: Some("unused".into()),
        timeout_secs: 10,
        ..Default::default()
    };
    Arc::new(Llm::from_settings(&settings, &Default::default(), metrics).unwrap().unwrap())
}

async fn answer(server: &MockServer, facts: Value) {
    server.reset().await;
    let content = json!({"facts": facts}).to_string();
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "c1", "object": "chat.completion", "created": 1, "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 60, "total_tokens": 360}
        })))
        .mount(server)
        .await;
}

fn fact(
    category: &str,
    key: Option<&str>,
    content: &str,
    quote: &str,
    resolution: &str,
    existing: Option<String>,
) -> Value {
    json!({"category": category, "key": key, "content": content, "importance": 0.8, "source_quote": quote,
           "message": 1, "resolution": resolution, "existing_id": existing})
}

#[tokio::test]
async fn a_long_session_is_summarized_in_chunks_then_combined() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let server = MockServer::start().await;
    let dir = job_dir(&[("summarize_sessions", "schedule = \"0 0 * * * *\"\n[params]\nchunk_tokens = 80")]);
    let executor = executor_with(&app.db, &dir, Some(llm(&server)));
    let lines: Vec<String> = (1..=12)
        .map(|n| format!("Step {n} of the rollout plan moves service number {n} to the new cluster."))
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    say(&app, &key, "hal", "s1", day(1, 9), &lines).await;
    let summary =
        r#"{"summary": "The rollout moves services to the new cluster step by step.", "topics": ["rollout"]}"#;
    crate::helpers::answer_every_completion(&server, summary).await;

    let run = run_at(&executor, "summarize_sessions", day(1, 12), false).await;

    let requests = server.received_requests().await.unwrap();
    assert!(requests.len() >= 3, "chunks, then one combining call: {}", requests.len());
    let last =
        requests.last().unwrap().body_json::<Value>().unwrap()["messages"][1]["content"].as_str().unwrap().to_owned();
    assert!(
        last.contains("The rollout moves services") && !last.contains("Step 1 of"),
        "the last call combines the chunk summaries: {last}"
    );
    assert_eq!(run.counts["llm_tokens"].as_i64(), Some(120 * requests.len() as i64));
    let summary: String = sqlx::query_scalar("SELECT summary FROM sessions").fetch_one(&app.db.pool).await.unwrap();
    assert_eq!(summary, "The rollout moves services to the new cluster step by step.");
}

#[tokio::test]
async fn the_llm_path_stores_checked_facts_beside_the_rules_and_resolves_updates_it_is_told_about() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let server = MockServer::start().await;
    let dir = job_dir(JOBS);
    let executor = executor_with(&app.db, &dir, Some(llm(&server)));
    say(&app, &key, "ana", "s1", day(1, 9), &["My friends know me as Ana and we use MySQL for billing.", "thanks!"])
        .await;
    say(&app, &key, "dee", "s1", day(1, 9), &["ok", "好的"]).await;
    answer(
        &server,
        json!([
            fact("identity", Some("name"), "The user's name is Ana.", "know me as Ana", "new", None),
            fact("technical", Some("database"), "The team uses MariaDB.", "we use MySQL for billing", "new", None),
            fact("personal", Some("location"), "The user lives in Paris.", "I live in Paris", "new", None),
        ]),
    )
    .await;

    let first = run_at(&executor, "extract_facts", day(1, 12), false).await;

    // The LLM's name is new; its database is the rules' key in the same turn, so the
    // rules' reading stands; Paris was never said.
    let counts = |name: &str| first.counts[name].as_i64();
    assert_eq!(
        (counts("facts_by_llm"), counts("llm_same_key_as_rules"), counts("invalid")),
        (Some(1), Some(1), Some(1)),
        "{}",
        first.counts
    );
    assert_eq!((counts("llm_calls"), counts("llm_calls_saved")), (Some(1), Some(1)), "{}", first.counts);
    // 360 for the facts; Ana's graph reading gets the facts' answer, which does not fit
    // its schema, so the rules' relations stand alone.
    assert_eq!(first.counts["graph_llm_unusable"], 1);
    assert_eq!(first.counts["llm_tokens"], 360 + 360);
    let requests = server.received_requests().await.unwrap();
    let graph_calls = requests.iter().filter(|r| String::from_utf8_lossy(&r.body).contains("knowledge graph")).count();
    assert_eq!(
        (requests.len() - graph_calls, first.counts["graph_llm_calls"].as_i64()),
        (1, Some(1)),
        "small talk costs no LLM call"
    );
    let prompt = requests[0].body_json::<Value>().unwrap()["messages"][1]["content"].as_str().unwrap().to_owned();
    assert!(
        prompt.contains("[1] My friends know me as Ana and we use MySQL for billing.") && !prompt.contains("thanks"),
        "{prompt}"
    );
    let facts: Vec<(Option<String>, String)> =
        sqlx::query_as("SELECT key, content FROM memories WHERE user_id = 'ana' AND status = 'active' ORDER BY key")
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    assert!(facts.iter().any(|(k, c)| k.as_deref() == Some("database") && c.contains("MySQL")), "{facts:?}");
    assert!(facts.iter().any(|(k, c)| k.as_deref() == Some("name") && c == "The user's name is Ana."), "{facts:?}");
    assert!(!facts.iter().any(|(_, c)| c.contains("MariaDB") || c.contains("Paris")), "{facts:?}");

    // An update the LLM is told about, of a fact only it found.
    let name: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM memories WHERE key = 'name'").fetch_one(&app.db.pool).await.unwrap();
    say(&app, &key, "ana", "s2", day(5, 9), &["From now on everybody at work knows me as Nana."]).await;
    answer(
        &server,
        json!([fact(
            "identity",
            Some("name"),
            "The user goes by Nana.",
            "everybody at work knows me as Nana",
            "update",
            Some(name.to_string())
        )]),
    )
    .await;
    let second = run_at(&executor, "extract_facts", day(5, 12), false).await;

    assert_eq!(second.counts["superseded"], 1, "{}", second.counts);
    let prompt = server.received_requests().await.unwrap()[0].body_json::<Value>().unwrap()["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(prompt.contains(&name.to_string()), "known facts go into the prompt: {prompt}");
    let (status, by): (String, Option<uuid::Uuid>) =
        sqlx::query_as("SELECT status, superseded_by FROM memories WHERE id = $1")
            .bind(name)
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    let current: String = sqlx::query_scalar("SELECT content FROM memories WHERE key = 'name' AND status = 'active'")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!((status.as_str(), by.is_some(), current.as_str()), ("superseded", true, "The user goes by Nana."));
}

fn chat_answer(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "c1", "object": "chat.completion", "created": 1, "model": "scripted",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    }))
}

/// The facts a user's turns left, as `key` for keyed facts and content for the others.
async fn facts_of(app: &crate::helpers::TestApp, user: &str) -> Vec<String> {
    let rows: Vec<(Option<String>, String)> =
        sqlx::query_as("SELECT key, content FROM memories WHERE user_id = $1 AND status = 'active' ORDER BY content")
            .bind(user)
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    rows.into_iter().map(|(key, content)| key.map(|k| format!("key {k}")).unwrap_or(content)).collect()
}

const SAID: &[&str] = &[
    "My friends know me as Ana and we use MySQL for billing.",
    "I moved to Lisbon in March.",
    "The quarterly report goes out every first Monday.",
];

#[tokio::test]
async fn an_llm_that_answers_nothing_usable_leaves_every_fact_the_rules_find() {
    let (without, with) = (spawn_app().await, spawn_app().await);
    let server = MockServer::start().await;
    // Prose in every format it is asked in: no JSON at all.
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(chat_answer("Sure! Ana uses MySQL and lives in Lisbon."))
        .mount(&server)
        .await;
    let dir = job_dir(JOBS);
    for (app, llm) in [(&without, None), (&with, Some(llm(&server)))] {
        let key = app.key("acme", "read,ingest").await;
        say(app, &key, "ana", "s1", day(1, 9), SAID).await;
        run_at(&executor_with(&app.db, &dir, llm), "extract_facts", day(1, 12), false).await;
    }
    let run = run_at(&executor_with(&with.db, &dir, Some(llm(&server))), "extract_facts", day(1, 13), false).await;

    let by_rules = facts_of(&without, "ana").await;
    assert!(by_rules.contains(&"key database".to_owned()) && by_rules.len() >= 2, "{by_rules:?}");
    assert_eq!(facts_of(&with, "ana").await, by_rules, "an unusable LLM takes nothing away");
    assert_eq!(run.counts.get("events_read"), None, "the watermark moved on: {}", run.counts);
}

#[tokio::test]
async fn a_server_that_refuses_json_schema_is_asked_for_json_object_from_then_on() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let server = MockServer::start().await;
    // vLLM and OpenAI refuse an unknown format with a 400 naming the field;
    // llama-cpp-python answers a 500 naming the formats it takes.
    for (status, message) in [
        (400, "response_format: json_schema is not supported by this model"),
        (500, "Input should be 'text' or 'json_object'"),
    ] {
        server.reset().await;
        Mock::given(method("POST"))
            .and(path("/chat/completions"))
            .and(body_string_contains("json_schema"))
            .respond_with(ResponseTemplate::new(status).set_body_json(json!({"error": {"message": message}})))
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/chat/completions"))
            .respond_with(chat_answer(r#"{"facts": []}"#))
            .mount(&server)
            .await;
        let metrics = engram_base::metrics::Metrics::new();
        let llm = llm_reporting_to(&server, metrics.clone());
        let dir = job_dir(JOBS);
        let user = format!("ana-{status}");
        say(&app, &key, &user, "s1", day(1, 9), &["We use MySQL for billing."]).await;
        say(&app, &key, &format!("{user}-later"), "s1", day(1, 9), &["We use Redis for caching."]).await;

        let run = run_at(&executor_with(&app.db, &dir, Some(llm)), "extract_facts", day(1, 12), false).await;

        assert_eq!(run.counts.get("llm_failed"), None, "{status}: {}", run.counts);
        let formats: Vec<bool> = server
            .received_requests()
            .await
            .unwrap()
            .iter()
            .filter(|r| !String::from_utf8_lossy(&r.body).contains("knowledge graph"))
            .map(|r| String::from_utf8_lossy(&r.body).contains("json_schema"))
            .collect();
        assert_eq!(formats.first(), Some(&true), "{status}: the schema is asked for first");
        assert_eq!(formats.last(), Some(&false), "{status}: then json_object");
        let text = metrics.render();
        assert!(text.contains(r#"engram_llm_response_format{format="json_object",model="scripted"} 1"#), "{text}");
    }
}

#[tokio::test]
async fn answers_as_real_models_write_them_are_read() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let server = MockServer::start().await;
    // A fenced block with prose around it, one fact where a list was asked, a trailing
    // comma, a category in its plural and capitals, a quote in another case and without
    // the message's punctuation.
    let answer = "Here you go:\n```json\n{\"facts\": {\"category\": \"Preferences\", \"key\": null, \
                  \"content\": \"The user prefers tea to coffee.\", \"importance\": 0.6, \
                  \"source_quote\": \"honestly i prefer tea over coffee\", \"message\": 1, \
                  \"resolution\": \"new\", \"existing_id\": null,},}\n```\nAnything else?";
    Mock::given(method("POST")).and(path("/chat/completions")).respond_with(chat_answer(answer)).mount(&server).await;
    say(&app, &key, "bo", "s1", day(1, 9), &["Honestly, I prefer tea over coffee!"]).await;

    let run =
        run_at(&executor_with(&app.db, &job_dir(JOBS), Some(llm(&server))), "extract_facts", day(1, 12), false).await;

    let category: String =
        sqlx::query_scalar("SELECT category FROM memories WHERE content = 'The user prefers tea to coffee.'")
            .fetch_one(&app.db.pool)
            .await
            .unwrap_or_else(|err| panic!("the model's fact is stored ({err}): {}", run.counts));
    assert_eq!(category, "preference");
    assert_eq!(run.counts.get("invalid"), None, "{}", run.counts);
}
