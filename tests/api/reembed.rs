//! Moving an installation to another embedding model: `reembed` gives every stored
//! vector the configured model's, lookups answer throughout, and a finished move leaves
//! nothing to do.

use std::sync::Arc;

use engram_base::configuration::{EmbeddingSettings, LocalModelChoice};
use engram_server::startup::Application;
use serde_json::json;

use crate::consolidation::{day, run_at, say};
use crate::helpers::{spawn_app_with, test_settings};
use crate::jobs::{executor, job_dir};

fn built_in(local_model: LocalModelChoice) -> EmbeddingSettings {
    EmbeddingSettings { local_model, ..Default::default() }
}

fn embedder(local_model: LocalModelChoice) -> Arc<engram_base::models::Embedder> {
    let settings = built_in(local_model);
    Arc::new(
        engram_base::models::Embedder::from_settings(
            &settings,
            ".engram".as_ref(),
            &Default::default(),
            Default::default(),
        )
        .unwrap(),
    )
}

async fn models_in(db: &engram_base::db::Database, table: &str) -> Vec<(Option<String>, Option<i32>)> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT DISTINCT embedding_model, embedding_dims::int FROM {table} WHERE embedding IS NOT NULL ORDER BY 1"
    )))
    .fetch_all(&db.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn reembed_moves_every_vector_to_the_new_model_while_lookups_answer() {
    let mut settings = test_settings();
    settings.embeddings = built_in(LocalModelChoice::Minilm);
    let app = spawn_app_with(settings).await;
    let key = app.key("acme", "read,ingest").await;
    let jobs = job_dir(&[
        ("extract_facts", "schedule = \"0 0 * * * *\""),
        ("summarize_sessions", "schedule = \"0 0 * * * *\""),
        ("embed_events", "schedule = \"0 0 * * * *\""),
        ("reembed", "schedule = \"0 0 * * * *\"\n[params]\nbatch_size = 2"),
    ]);
    let mut old = executor(&app.db, &jobs);
    old.models.embedder = embedder(LocalModelChoice::Minilm);
    say(&app, &key, "alice", "s1", day(1, 9), &["We use PostgreSQL as our main database.", "I live in Lisbon."]).await;
    for job in ["embed_events", "extract_facts", "summarize_sessions"] {
        run_at(&old, job, day(2, 9), false).await;
    }
    for table in ["memories", "events", "sessions"] {
        assert_eq!(models_in(&app.db, table).await, [(Some("all-MiniLM-L6-v2".into()), Some(384))], "{table}");
    }

    // The installation switches to the multilingual model: a new API process, a worker with it.
    let mut settings = test_settings();
    settings.embeddings = built_in(LocalModelChoice::UseMultilingual);
    let new_api = Application::build(settings, app.db.clone()).await.unwrap();
    let new_address = format!("http://127.0.0.1:{}", new_api.port());
    tokio::spawn(new_api.run_until_stopped());
    let mut new = executor(&app.db, &jobs);
    new.models.embedder = embedder(LocalModelChoice::UseMultilingual);
    let search = |query: &str| {
        let (client, url, key) = (app.client.clone(), format!("{new_address}/v1/search"), key.clone());
        let body = json!({"user_id": "alice", "query": query, "kinds": ["fact", "event"]});
        async move {
            let response = client.post(url).bearer_auth(key).json(&body).send().await.unwrap();
            assert_eq!(response.status(), 200, "lookups answer during the move");
            response.json::<serde_json::Value>().await.unwrap()
        }
    };
    // Before the move, words still find what meaning cannot yet.
    let before = search("PostgreSQL database").await;
    assert!(before["results"][0]["content"].as_str().unwrap().contains("PostgreSQL"), "{before}");

    let run = run_at(&new, "reembed", day(2, 10), false).await;
    assert!(run.counts["memories"].as_i64().unwrap() >= 2, "{:?}", run.counts);
    assert_eq!(run.counts["events"], 2, "{:?}", run.counts);
    assert_eq!(run.counts["session_summaries"], 1, "{:?}", run.counts);
    let multilingual_model = (Some("universal-sentence-encoder-multilingual-3".to_owned()), Some(512));
    for table in ["memories", "events", "sessions"] {
        assert_eq!(models_in(&app.db, table).await, std::slice::from_ref(&multilingual_model), "{table}");
    }

    // A keyed fact's vector is made from its words and its canonical statement, the
    // same text whether written by extract_facts (in Rust) or by reembed (in SQL).
    let (content, key, value, stored): (String, Option<String>, Option<String>, pgvector::Vector) = sqlx::query_as(
        "SELECT content, key, value, embedding FROM memories WHERE key = 'database' AND value = 'postgresql'",
    )
    .fetch_one(&app.db.pool)
    .await
    .unwrap();
    let text = engram_core::memories::match_text(&content, key.as_deref(), value.as_deref());
    assert!(text.ends_with("\ndatabase: postgresql"), "{text}");
    let expected = new.models.embedder.embed_one(&text).await.unwrap().to_pgvector().to_vec();
    let cosine: f32 = stored.to_vec().iter().zip(&expected).map(|(a, b)| a * b).sum();
    assert!(cosine > 0.999, "the vector reembed wrote is the one of match_text: {cosine}");

    // Found by meaning now, in another language too.
    let found = search("我们用什么数据库？").await;
    assert!(found["results"][0]["content"].as_str().unwrap().contains("PostgreSQL"), "{found}");
    assert!(found["results"][0]["similarity"].as_f64().unwrap() > 0.3, "{found}");

    let again = run_at(&new, "reembed", day(2, 11), false).await;
    assert_eq!(again.counts.get("memories").or(again.counts.get("events")), None, "nothing left: {:?}", again.counts);
}
