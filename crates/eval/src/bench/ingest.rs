//! Ingest throughput (batched `POST /v1/events` from concurrent clients) and the
//! throughput of `summarize_sessions` with its fallback over what was ingested, in a
//! tenant of the benchmark database that is emptied before and after.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::jobs::{executor, run_job};
use super::{Figure, corpus};
use engram_base::auth::{self, Scope as KeyScope};
use engram_base::configuration::{Role, Settings};
use engram_base::db::Database;
use engram_base::domain::TenantId;
use engram_core::jobs::Scope;
use engram_server::startup::Application;

const TENANT: &str = "bench-ingest";
const BATCH: usize = 100;
const CLIENTS: usize = 4;

const SENTENCES: &[&str] = &[
    "We moved the billing service to the new cluster last week.",
    "I prefer short answers with code examples.",
    "The deploy failed twice because of a missing environment variable.",
    "Our team decided to use PostgreSQL for the analytics store.",
    "Can you remind me what we said about the release date?",
    "The customer asked for an export in CSV with one row per invoice.",
    "thanks, that helps",
    "I will be on holiday in August, so plan the migration before that.",
];

pub async fn run(settings: &Settings, quick: bool) -> anyhow::Result<Vec<Figure>> {
    let events = if quick { 5_000 } else { 20_000 };
    let db = Database::open_named(&settings.database, &settings.home, Some(corpus::database(quick))).await?;
    db.migrate().await?;
    clear(&db).await?;
    let mut config = settings.clone();
    config.server.bind = "127.0.0.1:0".into();
    config.server.role = Role::Api;
    config.server.key_cache_secs = 300;
    let app = Application::build(config, db.clone()).await?;
    let url = format!("http://127.0.0.1:{}/v1/events", app.port());
    tokio::spawn(app.run_until_stopped());
    let new_key = auth::NewKey::new(TenantId::parse(TENANT)?, &[KeyScope::Ingest]).named("bench");
    let key = auth::create_key(&db.pool, &new_key).await?.secret;

    eprintln!("bench: ingesting {events} events");
    let start = chrono::Utc::now() - chrono::Duration::days(2);
    let batches: Vec<Value> = (0..events / BATCH)
        .map(|b| {
            let batch: Vec<Value> = (b * BATCH..(b + 1) * BATCH)
                .map(|i| {
                    let user = i % 500;
                    json!({"user_id": format!("u{user}"), "session_id": format!("s{}", i / 2000), "role": if i % 2 == 0 { "user" } else { "assistant" },
                           "content": format!("{} (note {i})", SENTENCES[i % SENTENCES.len()]), "created_at": (start + chrono::Duration::seconds(i as i64)).to_rfc3339()})
                })
                .collect();
            json!({"events": batch})
        })
        .collect();
    let batches = Arc::new(batches);
    let client = reqwest::Client::new();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (batches, client, url, key) = (batches.clone(), client.clone(), url.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = c;
            while i < batches.len() {
                let response = client.post(&url).bearer_auth(&key).json(&batches[i]).send().await?;
                anyhow::ensure!(response.status().is_success(), "ingest answered {}", response.status());
                i += CLIENTS;
            }
            Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let ingest_seconds = started.elapsed().as_secs_f64();
    // Every turn searchable by meaning: the API's background embedder takes what its
    // queue holds, the embed_events job (as the worker runs it every minute) the rest.
    let executor = executor(&db.pool, settings)?;
    run_job(&executor, "embed_events", &Scope::tenant(TenantId::parse(TENANT)?)).await?;
    loop {
        let waiting = engram_core::ingest::vectors::backlog_size(&db.pool).await?;
        if waiting == 0 {
            break;
        }
        anyhow::ensure!(started.elapsed() < Duration::from_secs(1800), "{waiting} events still without a vector");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let searchable_seconds = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let run = run_job(&executor, "summarize_sessions", &Scope::tenant(TenantId::parse(TENANT)?)).await?;
    let summarize_seconds = started.elapsed().as_secs_f64();
    let sessions = run.counts.get("summarized").and_then(Value::as_f64).unwrap_or(0.0);
    clear(&db).await?;
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(vec![
        Figure { scenario: "ingest", metric: "events".into(), value: events as f64, unit: "events" },
        Figure {
            scenario: "ingest",
            metric: "throughput".into(),
            value: events as f64 / ingest_seconds,
            unit: "events/s (batches of 100, 4 clients)",
        },
        Figure {
            scenario: "ingest",
            metric: "searchable_by_meaning".into(),
            value: events as f64 / searchable_seconds,
            unit: "events/s (first request to last vector: the API's embedder and one embed_events run)",
        },
        Figure { scenario: "summarize", metric: "sessions".into(), value: sessions, unit: "sessions" },
        Figure {
            scenario: "summarize",
            metric: "throughput".into(),
            value: sessions / summarize_seconds,
            unit: "sessions/s (extractive fallback)",
        },
    ])
}

async fn clear(db: &Database) -> anyhow::Result<()> {
    for table in ["memory_history", "memories", "events", "sessions", "job_checkpoints", "api_keys"] {
        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {table} WHERE tenant_id = $1")))
            .bind(TENANT)
            .execute(&db.pool)
            .await?;
    }
    // What was deleted leaves the indexes now, as autovacuum would soon: the search
    // benchmark after this one must not walk the dead rows' index entries.
    sqlx::raw_sql("VACUUM memory_history, memories, events, sessions").execute(&db.pool).await?;
    Ok(())
}
