use chrono::{Duration, Utc};
use serde_json::{Value, json};

use crate::helpers::{TestApp, error_of, fresh_database, spawn_app, spawn_app_with, test_settings};

pub async fn seed_project_facts(app: &TestApp, user: &str) {
    for (category, content) in [
        ("identity", "My name is Alice Martin"),
        ("technical", "We use PostgreSQL 16 as our main database"),
        ("preference", "I prefer dark mode in every editor"),
        ("technical", "Our frontend is built with Vite and React"),
        ("project", "We deploy the backend to AWS in eu-west-1"),
        ("personal", "I have two cats named Miso and Tofu"),
    ] {
        app.remember("acme", user, category, content).await;
    }
}

pub fn contents(body: &Value) -> Vec<String> {
    body["results"].as_array().unwrap().iter().map(|r| r["content"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn the_database_memory_ranks_first_for_a_database_question() {
    let app = spawn_app().await;
    let key = app.key("acme", "read").await;
    seed_project_facts(&app, "alice").await;

    let body = app.search(&key, &json!({"user_id": "alice", "query": "which database do we use?"})).await;

    assert_eq!(body["hit"], true);
    assert_eq!(contents(&body)[0], "We use PostgreSQL 16 as our main database");
    let first = &body["results"][0];
    for field in ["id", "kind", "category", "key", "content", "score", "similarity", "updated_at", "source_event_ids"] {
        assert!(first.get(field).is_some(), "missing {field}");
    }
    assert_eq!(first["kind"], "fact");
    // score = relevance × (0.8 + 0.2·decay) with relevance ≥ similarity: never below 0.8 × similarity.
    let (score, similarity) = (first["score"].as_f64().unwrap(), first["similarity"].as_f64().unwrap());
    assert!(score <= 1.0 && score >= 0.8 * similarity - 1e-9, "score {score}, similarity {similarity}");
    assert!(body["took_ms"].as_f64().unwrap() >= 0.0);
    let scores: Vec<f64> = body["results"].as_array().unwrap().iter().map(|r| r["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "sorted by score: {scores:?}");
    assert!(body["results"].as_array().unwrap().len() <= 5, "default limit 5");
}

#[tokio::test]
async fn chinese_names_are_found_by_keyword_inside_unspaced_text() {
    let app = spawn_app().await;
    let key = app.key("acme", "read").await;
    seed_project_facts(&app, "li").await;
    app.remember("acme", "li", "identity", "我叫李明，在北京做后端开发").await;
    app.remember("acme", "li", "preference", "我喜欢喝绿茶").await;

    let body = app.search(&key, &json!({"user_id": "li", "query": "李明"})).await;

    assert_eq!(body["hit"], true);
    assert_eq!(contents(&body)[0], "我叫李明，在北京做后端开发");
}

#[tokio::test]
async fn superseded_facts_are_excluded_and_as_of_answers_what_we_believed_then() {
    let app = spawn_app().await;
    let key = app.key("acme", "read").await;
    let day = |n: i64| Utc::now() - Duration::days(30) + Duration::days(n);
    let mysql = app.remember_at("acme", "bob", "technical", "We use MySQL as our database", day(1)).await;
    let postgres = app.remember_at("acme", "bob", "technical", "We use PostgreSQL as our database", day(5)).await;
    sqlx::query("UPDATE memories SET status = 'superseded', valid_to = $2, superseded_by = $3 WHERE id = $1")
        .bind(mysql)
        .bind(day(5))
        .bind(postgres)
        .execute(&app.db.pool)
        .await
        .unwrap();

    let now = app.search(&key, &json!({"user_id": "bob", "query": "what database do we use"})).await;
    let then = app
        .search(&key, &json!({"user_id": "bob", "query": "what database do we use", "as_of": day(3).to_rfc3339()}))
        .await;

    assert_eq!(contents(&now), vec!["We use PostgreSQL as our database"]);
    assert_eq!(contents(&then), vec!["We use MySQL as our database"]);
}

#[tokio::test]
async fn filters_limits_and_client_vectors_are_honoured() {
    let app = spawn_app().await;
    let key = app.key("acme", "read").await;
    seed_project_facts(&app, "carol").await;
    let vector = app.embedder.embed_one("database").await.unwrap();

    let only_prefs = app
        .search(&key, &json!({"user_id": "carol", "query": "editor", "categories": ["preference"], "min_score": 0.0}))
        .await;
    let one = app.search(&key, &json!({"user_id": "carol", "query": "database", "limit": 1})).await;
    let by_vector = app.search(&key, &json!({"user_id": "carol", "embedding": vector.as_slice(), "limit": 1})).await;
    let insights = app.search(&key, &json!({"user_id": "carol", "query": "database", "kinds": ["insight"]})).await;

    assert!(only_prefs["results"].as_array().unwrap().iter().all(|r| r["category"] == "preference"));
    assert_eq!(only_prefs["results"].as_array().unwrap().len(), 1);
    assert_eq!(one["results"].as_array().unwrap().len(), 1);
    assert_eq!(contents(&by_vector), vec!["We use PostgreSQL 16 as our main database"]);
    assert_eq!(insights["hit"], false);
}

#[tokio::test]
async fn an_unrelated_question_is_a_miss_and_both_outcomes_are_counted() {
    let app = spawn_app().await;
    let key = app.key("acme", "read").await;
    seed_project_facts(&app, "dave").await;

    let miss =
        app.search(&key, &json!({"user_id": "dave", "query": "best pizza topping in Naples", "min_score": 0.5})).await;
    let hit = app.search(&key, &json!({"user_id": "dave", "query": "what are my cats called"})).await;
    let stranger = app.search(&key, &json!({"user_id": "nobody-at-all", "query": "database"})).await;

    assert_eq!((miss["hit"].as_bool(), miss["results"].as_array().unwrap().len()), (Some(false), 0));
    assert_eq!(hit["hit"], true);
    assert_eq!(stranger["hit"], false, "an unknown user is an empty result, not an error");
    let metrics = app.metrics().await;
    assert!(metrics.contains(r#"engram_lookups_total{endpoint="search",result="hit"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"engram_lookups_total{endpoint="search",result="miss"} 2"#));
    assert!(metrics.contains(r#"engram_lookup_duration_seconds_count{endpoint="search"} 3"#));
}

#[tokio::test]
async fn served_memories_have_their_access_counted_after_a_flush() {
    let app = spawn_app().await;
    let key = app.key("acme", "read").await;
    let id = app.remember("acme", "erin", "technical", "We use PostgreSQL for billing").await;

    for _ in 0..3 {
        app.search(&key, &json!({"user_id": "erin", "query": "PostgreSQL billing"})).await;
    }
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_access").fetch_one(&app.db.pool).await.unwrap();
    app.access.flush(&app.db.pool).await.unwrap();

    let key = app.key("acme", "read").await;
    let detail: Value = app.get_as(&key, &format!("/v1/users/erin/memories/{id}")).await.json().await.unwrap();
    assert_eq!(before, 0, "lookups themselves write nothing");
    assert_eq!(detail["memory"]["access_count"], 3);
    assert!(detail["memory"]["last_accessed_at"].is_string());
}

#[tokio::test]
async fn replicas_flushing_counts_of_the_same_memories_at_once_lose_none() {
    let app = spawn_app().await;
    // Counting accesses needs only the memories to exist.
    let ids: Vec<uuid::Uuid> = sqlx::query_scalar(
        "INSERT INTO memories (tenant_id, id, user_id, kind, category, content)
         SELECT 'acme', gen_random_uuid(), 'erin', 'fact', 'technical', 'Fact ' || n FROM generate_series(1, 2000) n
         RETURNING id",
    )
    .fetch_all(&app.db.pool)
    .await
    .unwrap();
    let (tenant, user) =
        (engram_base::domain::TenantId::parse("acme").unwrap(), engram_base::domain::UserId::parse("erin").unwrap());
    let rounds = 10;
    for _ in 0..rounds {
        // Two replicas' buffers holding the same memories, flushed at the same time.
        let (a, b) = (engram_core::access::AccessRecorder::default(), engram_core::access::AccessRecorder::default());
        a.record(&tenant, &user, ids.iter().copied(), Utc::now());
        b.record(&tenant, &user, ids.iter().rev().copied(), Utc::now());
        let (from_a, from_b) = tokio::join!(a.flush(&app.db.pool), b.flush(&app.db.pool));
        assert_eq!((from_a.unwrap(), from_b.unwrap()), (ids.len(), ids.len()), "neither flush failed");
    }
    let counts: Vec<i32> = sqlx::query_scalar("SELECT access_count FROM memory_access ORDER BY memory_id")
        .fetch_all(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(counts, vec![2 * rounds; ids.len()], "every access counted once");
}

#[tokio::test]
async fn bad_search_input_names_the_field_and_never_500s() {
    let app = spawn_app().await;
    let key = app.key("acme", "read").await;
    let cases = [
        (json!({"user_id": "u", "query": ""}), "query"),
        (json!({"user_id": "u", "query": "q", "limit": 0}), "limit"),
        (json!({"user_id": "u", "query": "q", "limit": "ten"}), "limit"),
        (json!({"user_id": "u", "query": "q", "categories": ["gossip"]}), "categories"),
        (json!({"user_id": "u", "query": "q", "kinds": ["dream"]}), "kinds"),
        (json!({"user_id": "u", "query": "q", "embedding": [0.1, 0.2]}), "embedding"),
        (json!({"user_id": "u", "query": "q", "as_of": "yesterday"}), "as_of"),
        (json!({"user_id": "u", "query": "q", "colour": 1}), "colour"),
        (json!({"query": "q"}), "user_id"),
    ];
    for (body, field) in cases {
        let response = app.post_as(&key, "/v1/search", &body).await;
        assert_eq!(response.status(), 400, "{body}");
        let error = error_of(response).await;
        assert!(error["field"].as_str().unwrap().starts_with(field), "{field}: {error}");
    }
    let response = app
        .client
        .post(format!("{}/v1/search", app.address))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(error_of(response).await["field"], "body");
}

#[tokio::test]
async fn session_summaries_are_searchable_when_asked_for() {
    let app = spawn_app().await;
    let ingest = app.key("acme", "ingest,read").await;
    let event =
        json!({"user_id": "fay", "session_id": "s1", "role": "user", "content": "Let's plan the Kafka migration"});
    assert_eq!(app.post_events(&ingest, &event).await.status(), 202);
    let summary = "The user planned migrating the event pipeline from RabbitMQ to Kafka in March.";
    let vector = app.embedder.embed_one(summary).await.unwrap();
    sqlx::query("UPDATE sessions SET summary = $1, embedding = $2, embedding_dims = 384, summarized_at = now() WHERE session_id = 's1'")
        .bind(summary)
        .bind(vector.to_pgvector())
        .execute(&app.db.pool)
        .await
        .unwrap();

    let facts_only = app.search(&ingest, &json!({"user_id": "fay", "query": "Kafka migration plan"})).await;
    let with_sessions = app
        .search(
            &ingest,
            &json!({"user_id": "fay", "query": "Kafka migration plan", "kinds": ["fact", "session_summary"]}),
        )
        .await;

    assert_eq!(facts_only["hit"], false);
    assert_eq!(with_sessions["results"][0]["kind"], "session_summary");
    assert_eq!(with_sessions["results"][0]["id"], "s1");
    assert_eq!(with_sessions["results"][0]["content"], summary);
}

#[tokio::test]
async fn users_past_the_scan_limit_get_the_same_answers_through_the_indexes() {
    let mut settings = test_settings();
    settings.search.scan_limit = 2;
    let indexed = spawn_app_with(settings).await;
    let key = indexed.key("acme", "read").await;
    seed_project_facts(&indexed, "alice").await;
    indexed.remember("acme", "alice", "identity", "我叫李明，在北京做后端开发").await;
    let scanning = engram_server::startup::Application::build(test_settings(), indexed.db.clone()).await.unwrap();
    let scanning_url = format!("http://127.0.0.1:{}/v1/search", scanning.port());
    tokio::spawn(scanning.run_until_stopped());

    for query in [
        json!({"user_id": "alice", "query": "which database do we use?"}),
        json!({"user_id": "alice", "query": "李明"}),
        json!({"user_id": "alice", "query": "editor", "categories": ["preference"], "min_score": 0.0}),
        json!({"user_id": "alice", "query": "cats", "as_of": Utc::now().to_rfc3339(), "limit": 2}),
    ] {
        let through_indexes = indexed.search(&key, &query).await;
        let scanned: Value = indexed
            .client
            .post(&scanning_url)
            .bearer_auth(&key)
            .json(&query)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(contents(&through_indexes), contents(&scanned), "{query}");
        assert_eq!(through_indexes["hit"], true, "{query}");
    }
    let first = indexed.search(&key, &json!({"user_id": "alice", "query": "which database do we use?"})).await;
    assert_eq!(contents(&first)[0], "We use PostgreSQL 16 as our main database");
}

#[tokio::test]
async fn search_ranks_by_the_decay_evict_scores_by() {
    let (db, _) = fresh_database().await;
    let decay = engram_core::memories::decay::DecayParams::default();
    let at = Utc::now();
    for (importance, days, accesses, category) in
        [(0.5, 0.0, 0, "project"), (0.9, 40.5, 3, "project"), (0.2, 400.0, 25, "identity"), (1.0, -2.0, 10, "mood")]
    {
        let touched = at - Duration::milliseconds((days * 86_400_000.0) as i64);
        let sql: f64 =
            sqlx::query_scalar("SELECT engram_decay($1::real, $2, $3, coalesce(($4::jsonb ->> $5)::float8, $6), $7)")
                .bind(importance as f32)
                .bind(touched)
                .bind(accesses)
                .bind(decay.lambdas_json())
                .bind(category)
                .bind(decay.default_lambda)
                .bind(at)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        let service = decay.weight(f64::from(importance as f32), touched, accesses, category, at);
        assert!((sql - service).abs() < 1e-12, "{category}, {days} days: {sql} in SQL, {service} in the service");
    }
}
