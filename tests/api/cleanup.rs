//! Keeping memory clean: dedup, eviction by decay with the clock moved ahead, the
//! per-user cap, and reflection with a scripted LLM.

use std::sync::Arc;

use chrono::{Duration, Utc};
use engram_base::domain::{Category, TenantId, UserId};
use engram_core::jobs::Scope;
use engram_core::memories::NewMemory;
use serde_json::{Value, json};
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{TestApp, spawn_app};
use crate::jobs::{executor, executor_with, job_dir, run};

/// A fact as `extract_facts` would store it, with `key`, importance and one source event.
async fn fact(app: &TestApp, user: &str, key: Option<&str>, content: &str, importance: f32) -> Uuid {
    let tenant = TenantId::parse("acme").unwrap();
    let embedding = app.embedder.embed_one(content).await.unwrap();
    let memory = NewMemory {
        user_id: UserId::parse(user).unwrap(),
        kind: engram_core::memories::Kind::Fact,
        category: if key.is_some() { Category::Technical } else { Category::Statement },
        key: key.map(str::to_owned),
        value: None,
        content: content.into(),
        importance,
        source_event_ids: vec![Uuid::now_v7()],
        source_quote: Some(content.into()),
        derived_from: vec![],
        valid_from: Utc::now(),
        pinned: false,
    };
    let mut tx = app.db.tenant_tx(&tenant).await.unwrap();
    let id = engram_core::memories::insert(
        &mut tx,
        &tenant,
        &memory,
        &embedding,
        app.embedder.model(),
        &engram_core::memories::Change::by("test", None, "test"),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    id
}

async fn statuses(app: &TestApp, user: &str) -> Vec<(String, String)> {
    sqlx::query_as("SELECT content, status FROM memories WHERE user_id = $1 ORDER BY created_at, id")
        .bind(user)
        .fetch_all(&app.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn phrasings_of_one_fact_collapse_and_different_databases_never_merge() {
    let app = spawn_app().await;
    let dir = job_dir(&[("dedup", "schedule = \"0 0 * * * *\"")]);
    let executor = executor(&app.db, &dir);
    let phrasings = [
        "The backend framework is FastAPI.",
        "Our backend framework is FastAPI.",
        "We build the backend with FastAPI.",
        "FastAPI is the framework of our backend.",
        "The backend runs on the FastAPI framework.",
    ];
    for text in phrasings {
        fact(&app, "ann", Some("framework"), text, 0.6).await;
    }
    fact(&app, "ann", Some("database"), "We use PostgreSQL as our database.", 0.7).await;
    fact(&app, "ann", Some("database"), "We use MySQL as our database.", 0.7).await;
    fact(&app, "bo", None, "We store orders in PostgreSQL.", 0.5).await;
    fact(&app, "bo", None, "We store orders in MySQL.", 0.5).await;

    let dry = run(&executor, "dedup", Scope::all(), true).await;
    let untouched: i64 = sqlx::query_scalar("SELECT count(*) FROM memories WHERE status = 'active'")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    let done = run(&executor, "dedup", Scope::all(), false).await;
    let again = run(&executor, "dedup", Scope::all(), false).await;

    assert_eq!((dry.counts["merged"].as_i64(), untouched), (Some(4), 9), "the dry run reported and wrote nothing");
    assert_eq!(done.counts["merged"], 4, "{}", done.counts);
    let frameworks: Vec<(String, Vec<Uuid>)> =
        sqlx::query_as("SELECT status, source_event_ids FROM memories WHERE key = 'framework' AND status = 'active'")
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(frameworks.len(), 1);
    assert_eq!(frameworks[0].1.len(), 5, "the survivor has every source");
    let databases = statuses(&app, "ann").await.into_iter().filter(|(c, _)| c.contains("database")).collect::<Vec<_>>();
    assert_eq!(
        databases,
        [
            ("We use PostgreSQL as our database.".into(), "superseded".into()),
            ("We use MySQL as our database.".into(), "active".into())
        ]
    );
    assert!(
        statuses(&app, "bo").await.iter().all(|(_, status)| status == "active"),
        "PostgreSQL and MySQL are never merged"
    );
    assert!(again.counts.get("merged").is_none() && again.counts.get("superseded").is_none(), "{}", again.counts);
    let merged_history: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_history WHERE action = 'merged'")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(merged_history, 4);
}

#[tokio::test]
async fn ninety_days_later_stale_facts_are_evicted_but_names_and_used_memories_stay() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,admin").await;
    let dir = job_dir(&[("evict", "schedule = \"0 0 3 * * *\"\n[budget]\nmax_removed_fraction = 1.0")]);
    let executor = executor(&app.db, &dir);
    let stale = fact(&app, "cy", None, "We once tried a hackathon idea about parking apps.", 0.2).await;
    let name = app.remember("acme", "cy", "identity", "My name is Cy Okafor").await;
    let used = fact(&app, "cy", None, "We deploy the billing service every Tuesday.", 0.5).await;
    let later = Utc::now() + Duration::days(90);
    sqlx::query("INSERT INTO memory_access (tenant_id, memory_id, user_id, access_count, last_accessed_at) VALUES ('acme', $1, 'cy', 12, $2)")
        .bind(used)
        .bind(later - Duration::days(1))
        .execute(&app.db.pool)
        .await
        .unwrap();

    let id = engram_core::jobs::control::trigger(
        &executor.pool,
        &executor.jobs,
        "evict",
        &Scope::all(),
        engram_core::jobs::Trigger::Cli,
        false,
        Some(later),
    )
    .await
    .unwrap();
    let done = executor.run_now("evict", id, std::time::Duration::from_secs(10)).await.unwrap();

    assert_eq!(done.counts["evicted"], 1, "{}", done.counts);
    let status = |id: Uuid| {
        let pool = app.db.pool.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT status FROM memories WHERE id = $1")
                .bind(id)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    assert_eq!(
        (status(stale).await, status(name).await, status(used).await),
        ("evicted".into(), "active".into(), "active".into())
    );
    let found = app.search(&key, &json!({"user_id": "cy", "query": "hackathon parking apps", "min_score": 0.0})).await;
    assert!(found["results"].as_array().unwrap().iter().all(|r| r["id"] != stale.to_string()), "{found}");
    // What was believed before the eviction, `as_of` still finds; after it, not.
    let as_of = |at: chrono::DateTime<Utc>| json!({"user_id": "cy", "query": "hackathon parking apps", "min_score": 0.0, "as_of": at.to_rfc3339()});
    let then = app.search(&key, &as_of(later - Duration::days(1))).await;
    assert!(then["results"].as_array().unwrap().iter().any(|r| r["id"] == stale.to_string()), "{then}");
    let since = app.search(&key, &as_of(later + Duration::days(1))).await;
    assert!(since["results"].as_array().unwrap().iter().all(|r| r["id"] != stale.to_string()), "{since}");
    let listed: Value = app.get_as(&key, "/v1/users/cy/memories?status=evicted").await.json().await.unwrap();
    assert_eq!(listed["memories"][0]["id"], stale.to_string());
    let restored = app.post_as(&key, &format!("/admin/v1/users/cy/memories/{stale}/restore"), &json!({})).await;
    assert_eq!(restored.status(), 200);
}

#[tokio::test]
async fn a_cap_of_200_keeps_the_200_best_and_the_removal_cap_limits_a_run() {
    let app = spawn_app().await;
    sqlx::query(
        "INSERT INTO memories (tenant_id, id, user_id, kind, category, content, importance, created_at, updated_at, valid_from)
         SELECT 'acme', gen_random_uuid(), 'dan', 'fact', 'technical', 'memory ' || g, (g % 10 + 1) / 10.0,
                now() - make_interval(days => 10 + g % 50), now(), now() - make_interval(days => 10 + g % 50)
           FROM generate_series(1, 500) g",
    )
    .execute(&app.db.pool)
    .await
    .unwrap();
    let best: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM memories ORDER BY engram_decay(importance, created_at, 0, 0.01, now()) DESC, id LIMIT 200",
    )
    .fetch_all(&app.db.pool)
    .await
    .unwrap();
    let capped = |fraction: &str| {
        format!(
            "schedule = \"0 0 3 * * *\"\n[budget]\nmax_removed_fraction = {fraction}\n[params]\nmax_per_user = 200\nmin_score = 0.0"
        )
    };

    let limited = run(&executor(&app.db, &job_dir(&[("evict", &capped("0.1"))])), "evict", Scope::all(), false).await;
    assert_eq!(
        (limited.counts["evicted"].as_i64(), limited.counts["kept_by_removal_cap"].as_i64()),
        (Some(50), Some(250))
    );
    let full = run(&executor(&app.db, &job_dir(&[("evict", &capped("1.0"))])), "evict", Scope::all(), false).await;

    assert_eq!(full.counts["evicted"], 250);
    let mut kept: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM memories WHERE status = 'active'").fetch_all(&app.db.pool).await.unwrap();
    let mut best = best;
    kept.sort();
    best.sort();
    assert_eq!(kept, best, "the 200 best by engram_decay remain");
}

fn scripted_llm(server: &MockServer) -> Arc<engram_base::models::Llm> {
    let settings = engram_base::configuration::LlmSettings {
        provider: engram_base::configuration::LlmProvider::Openai,
        base_url: Some(server.uri()),
        model: Some("scripted".into()),
        api_key: Some("unused".into()),
        timeout_secs: 10,
        ..Default::default()
    };
    Arc::new(
        engram_base::models::Llm::from_settings(&settings, &Default::default(), Default::default()).unwrap().unwrap(),
    )
}

#[tokio::test]
async fn reflection_keeps_valid_insights_ignores_foreign_ids_and_resolves_contradictions() {
    let app = spawn_app().await;
    let server = MockServer::start().await;
    let dir = job_dir(&[("reflect", "schedule = \"0 0 4 * * *\"\n[params]\nimportance_threshold = 1.0")]);
    let executor = executor_with(&app.db, &dir, Some(scripted_llm(&server)));
    let rust = fact(&app, "eve", None, "I rewrote the ingestion service in Rust.", 0.6).await;
    let perf = fact(&app, "eve", None, "I care a lot about tail latency.", 0.6).await;
    let remote = fact(&app, "eve", None, "I work from the office in Berlin.", 0.5).await;
    let moved = fact(&app, "eve", None, "I work fully remote from Lisbon now.", 0.5).await;
    let foreign = fact(&app, "zed", None, "Zed likes Haskell.", 0.9).await;
    let answer = json!({
        "contradictions": [{"older_id": remote.to_string(), "newer_id": moved.to_string(), "reason": "moved to Lisbon and remote work"}],
        "insights": [
            {"content": "Eve optimises for performance, from language choice to latency.", "category": "preference", "importance": 0.7,
             "derived_from": [rust.to_string(), perf.to_string()]},
            {"content": "Eve and Zed like functional languages.", "category": "preference", "importance": 0.5,
             "derived_from": [rust.to_string(), foreign.to_string()]}
        ],
        "cleanup": [{"id": foreign.to_string(), "reason": "not about Eve"}]
    });
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "c1", "object": "chat.completion", "created": 1, "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer.to_string()}}],
            "usage": {"prompt_tokens": 200, "completion_tokens": 80, "total_tokens": 280}
        })))
        .mount(&server)
        .await;

    let scope = Scope::user(TenantId::parse("acme").unwrap(), UserId::parse("eve").unwrap());
    let done = run(&executor, "reflect", scope.clone(), false).await;
    let again = run(&executor, "reflect", scope, false).await;

    assert_eq!(done.counts["insights"], 1, "{}", done.counts);
    assert_eq!(done.counts["invalid"], 2, "the insight and the cleanup naming another user's memory: {}", done.counts);
    assert_eq!(done.counts["contradictions_resolved"], 1);
    let (content, derived, dims): (String, Vec<Uuid>, Option<i32>) =
        sqlx::query_as("SELECT content, derived_from, embedding_dims FROM memories WHERE kind = 'insight'")
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(
        (content.as_str(), derived, dims),
        (
            "Eve optimises for performance, from language choice to latency.",
            vec![rust, perf],
            Some(app.embedder.dims() as i32)
        )
    );
    let (status, reason): (String, String) = sqlx::query_as(
        "SELECT m.status, h.reason FROM memories m JOIN memory_history h ON h.memory_id = m.id AND h.action = 'superseded' WHERE m.id = $1",
    )
    .bind(remote)
    .fetch_one(&app.db.pool)
    .await
    .unwrap();
    assert_eq!((status.as_str(), reason.as_str()), ("superseded", "reflection: moved to Lisbon and remote work"));
    let zed: String = sqlx::query_scalar("SELECT status FROM memories WHERE id = $1")
        .bind(foreign)
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(zed, "active", "another user's memory is untouchable");
    assert_eq!(again.counts.get("users"), None, "nothing new to reflect on: {}", again.counts);
}

#[tokio::test]
async fn without_an_llm_reflection_resolves_same_key_contradictions_only() {
    let app = spawn_app().await;
    let dir = job_dir(&[("reflect", "schedule = \"0 0 4 * * *\"\n[params]\nimportance_threshold = 1.0")]);
    let old = fact(&app, "fin", Some("database"), "We use MySQL as our database.", 0.7).await;
    fact(&app, "fin", Some("database"), "We use PostgreSQL as our database.", 0.7).await;
    fact(&app, "fin", None, "I like long walks on the beach.", 0.5).await;

    let done = run(&executor(&app.db, &dir), "reflect", Scope::all(), false).await;

    assert_eq!(done.counts["contradictions_resolved"], 1, "{}", done.counts);
    assert!(done.counts.get("insights").is_none());
    let status: String = sqlx::query_scalar("SELECT status FROM memories WHERE id = $1")
        .bind(old)
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(status, "superseded");
}
