use chrono::{Duration, Utc};
use serde_json::{Value, json};

use crate::helpers::{engram, error_of, spawn_app, spawn_app_with, test_settings};

fn event(user: &str, content: &str) -> Value {
    json!({"user_id": user, "role": "user", "content": content})
}

#[tokio::test]
async fn a_single_event_is_stored_in_a_new_session() {
    let app = spawn_app().await;
    let key = app.key("acme", "ingest").await;

    let response = app.post_events(&key, &event("alice", "We use PostgreSQL for everything")).await;

    assert_eq!(response.status(), 202);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["accepted"], 1);
    let id: uuid::Uuid = body["ids"][0].as_str().unwrap().parse().unwrap();
    let (user, role, content, session): (String, String, String, String) =
        sqlx::query_as("SELECT user_id, role, content, session_id FROM events WHERE id = $1")
            .bind(id)
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    assert_eq!((user.as_str(), role.as_str()), ("alice", "user"));
    assert_eq!(content, "We use PostgreSQL for everything");
    assert_eq!(session, body["session_ids"][0].as_str().unwrap());
    let count: i32 = sqlx::query_scalar("SELECT event_count FROM sessions WHERE session_id = $1")
        .bind(&session)
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(count, 1);
}

#[tokio::test]
async fn a_batch_keeps_client_times_metadata_and_explicit_sessions() {
    let app = spawn_app().await;
    let key = app.key("acme", "ingest").await;
    let body = json!({"events": [
        {"user_id": "bob", "session_id": "chat-1", "role": "user", "content": "Hi, I'm Bob",
         "created_at": "2026-01-05T10:00:00+02:00", "metadata": {"dia_id": "D1:1"}},
        {"user_id": "bob", "session_id": "chat-1", "role": "assistant", "content": "Hello Bob",
         "created_at": "2026-01-05T08:00:05Z"},
    ]});

    let response = app.post_events(&key, &body).await;

    assert_eq!(response.status(), 202);
    let stored: Vec<(String, chrono::DateTime<Utc>, Value)> =
        sqlx::query_as("SELECT session_id, created_at, metadata FROM events ORDER BY created_at")
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|(session, ..)| session == "chat-1"));
    assert_eq!(stored[0].1.to_rfc3339(), "2026-01-05T08:00:00+00:00");
    assert_eq!(stored[0].2, json!({"dia_id": "D1:1"}));
    let (count, started, last): (i32, chrono::DateTime<Utc>, chrono::DateTime<Utc>) =
        sqlx::query_as("SELECT event_count, started_at, last_event_at FROM sessions WHERE session_id = 'chat-1'")
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(count, 2);
    assert_eq!((last - started).num_seconds(), 5);
}

#[tokio::test]
async fn events_without_a_session_join_the_open_one_until_the_idle_gap() {
    let app = spawn_app().await;
    let key = app.key("acme", "ingest").await;
    let start = Utc::now() - Duration::hours(5);
    let at = |minutes: i64| (start + Duration::minutes(minutes)).to_rfc3339();
    let mut events = Vec::new();
    for minutes in [0, 10, 35, 120, 125] {
        events.push(json!({"user_id": "carol", "role": "user", "content": format!("message at {minutes}"), "created_at": at(minutes)}));
    }

    let first: Value = app.post_events(&key, &json!({"events": events[..2]})).await.json().await.unwrap();
    let second: Value = app.post_events(&key, &json!({"events": events[2..]})).await.json().await.unwrap();

    let sessions: Vec<&str> = first["session_ids"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["session_ids"].as_array().unwrap())
        .map(|s| s.as_str().unwrap())
        .collect();
    // A 30-minute idle gap: 0, 10 and 35 share a session; 120 opens a new one.
    assert_eq!(sessions[0], sessions[1]);
    assert_eq!(sessions[1], sessions[2]);
    assert_ne!(sessions[2], sessions[3]);
    assert_eq!(sessions[3], sessions[4]);
}

#[tokio::test]
async fn concurrent_batches_of_one_user_share_one_open_session() {
    let app = spawn_app().await;
    let key = app.key("acme", "ingest").await;

    let bodies: Vec<Value> = (0..8).map(|i| event("dave", &format!("parallel message {i}"))).collect();
    let requests = bodies.iter().map(|body| app.post_events(&key, body));
    let responses = futures_util::future::join_all(requests).await;

    assert!(responses.iter().all(|r| r.status() == 202));
    let sessions: i64 = sqlx::query_scalar("SELECT count(*) FROM sessions WHERE user_id = 'dave'")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(sessions, 1);
    let counted: i32 = sqlx::query_scalar("SELECT event_count FROM sessions WHERE user_id = 'dave'")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(counted, 8);
}

#[tokio::test]
async fn a_retried_request_with_client_ids_stores_nothing_twice() {
    let app = spawn_app().await;
    let key = app.key("acme", "ingest").await;
    let body = json!({"events": [
        {"id": "evt-1", "user_id": "erin", "role": "user", "content": "I prefer dark mode"},
        {"id": "evt-2", "user_id": "erin", "role": "assistant", "content": "Noted"},
    ]});

    let first: Value = app.post_events(&key, &body).await.json().await.unwrap();
    let retry = app.post_events(&key, &body).await;

    assert_eq!(retry.status(), 202);
    let retry: Value = retry.json().await.unwrap();
    assert_eq!(retry["ids"], first["ids"]);
    assert_eq!(retry["session_ids"], first["session_ids"]);
    assert_eq!((retry["accepted"].as_u64(), retry["duplicates"].as_u64()), (Some(0), Some(2)));
    assert_eq!(app.event_count().await, 2);
    let counted: i32 = sqlx::query_scalar("SELECT event_count FROM sessions WHERE user_id = 'erin'")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(counted, 2);

    // A batch mixing a known and a new id stores only the new one.
    let mixed = json!({"events": [
        {"id": "evt-2", "user_id": "erin", "role": "assistant", "content": "Noted"},
        {"id": "evt-3", "user_id": "erin", "role": "user", "content": "And I use vim"},
    ]});
    let mixed: Value = app.post_events(&key, &mixed).await.json().await.unwrap();
    assert_eq!(mixed["ids"][0], first["ids"][1]);
    assert_eq!((mixed["accepted"].as_u64(), mixed["duplicates"].as_u64()), (Some(1), Some(1)));
    assert_eq!(app.event_count().await, 3);
}

#[tokio::test]
async fn every_invalid_field_is_rejected_by_name_and_nothing_is_stored() {
    let app = spawn_app().await;
    let key = app.key("acme", "ingest").await;
    let good = || event("frank", "a perfectly fine event");
    let with = |field: &str, value: Value| {
        let mut e = good();
        e[field] = value;
        e
    };
    let without = |field: &str| {
        let mut e = good();
        e.as_object_mut().unwrap().remove(field);
        e
    };
    let cases: Vec<(Value, &str)> = vec![
        (without("user_id"), "user_id"),
        (with("user_id", json!("")), "user_id"),
        (with("user_id", json!("has spaces")), "user_id"),
        (with("user_id", json!("x".repeat(129))), "user_id"),
        (with("user_id", json!(42)), "user_id"),
        (with("session_id", json!("a/b")), "session_id"),
        (without("role"), "role"),
        (with("role", json!("narrator")), "role"),
        (without("content"), "content"),
        (with("content", json!("  \n ")), "content"),
        (with("content", json!("nul \u{0} byte")), "content"),
        (with("content", json!("x".repeat(32 * 1024 + 1))), "content"),
        (with("created_at", json!("last tuesday")), "created_at"),
        (with("metadata", json!("not an object")), "metadata"),
        (with("metadata", json!({"k": "nul \u{0}"})), "metadata"),
        (with("id", json!("")), "id"),
        (with("colour", json!("blue")), "colour"),
        (json!({"events": []}), "events"),
        (json!({"events": {"user_id": "x"}}), "events"),
        (json!({"events": [good()], "extra": 1}), "extra"),
        (json!({"events": [good(), with("role", json!("robot"))]}), "events[1].role"),
        (json!({"events": [with("id", json!("same")), with("id", json!("same"))]}), "events[1].id"),
        (json!([good()]), "body"),
    ];

    for (body, field) in cases {
        let response = app.post_events(&key, &body).await;
        assert_eq!(response.status(), 400, "{body}");
        let error = error_of(response).await;
        assert_eq!(error["code"], "invalid_request");
        let named = error["field"].as_str().unwrap();
        assert!(named == field || named.starts_with(&field.to_string()), "expected {field}, got {error} for {body}");
    }
    let response = app.post_raw(&key, "{\"user_id\": ").await;
    assert_eq!(response.status(), 400);
    assert_eq!(error_of(response).await["field"], "body");

    assert_eq!(app.event_count().await, 0, "no rejected request stored anything");
}

#[tokio::test]
async fn a_batch_over_the_event_limit_is_rejected_whole() {
    let mut settings = test_settings();
    settings.ingest.max_batch_events = 3;
    let app = spawn_app_with(settings).await;
    let key = app.key("acme", "ingest").await;
    let events: Vec<Value> = (0..4).map(|i| event("gina", &format!("event {i}"))).collect();

    let response = app.post_events(&key, &json!({"events": events})).await;

    assert_eq!(response.status(), 400);
    assert_eq!(error_of(response).await["field"], "events");
    assert_eq!(app.event_count().await, 0);
}

#[tokio::test]
async fn a_body_over_the_size_limit_gets_413() {
    let mut settings = test_settings();
    settings.server.max_body_bytes = 4096;
    let app = spawn_app_with(settings).await;
    let key = app.key("acme", "ingest").await;
    let events: Vec<Value> = (0..100).map(|i| event("hank", &format!("a reasonably long event number {i}"))).collect();

    let response = app.post_events(&key, &json!({"events": events})).await;

    assert_eq!(response.status(), 413);
    assert_eq!(error_of(response).await["code"], "payload_too_large");
    assert_eq!(app.event_count().await, 0);
}

#[tokio::test]
async fn the_cli_import_validates_the_whole_file_before_storing_and_is_idempotent() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    let good = dir.path().join("good.jsonl");
    let first = r#"{"id": "l1", "user_id": "ivy", "role": "user", "content": "I live in Lisbon"}"#;
    std::fs::write(&bad, format!("{first}\n{}\n", r#"{"id": "l2", "user_id": "ivy", "role": "user", "content": ""}"#))
        .unwrap();
    std::fs::write(
        &good,
        format!("{first}\n\n{}\n", r#"{"id": "l3", "user_id": "ivy", "role": "user", "content": "I work at Acme"}"#),
    )
    .unwrap();

    let rejected = engram(&app, &["ingest", bad.to_str().unwrap(), "--tenant", "acme"]);
    assert!(!rejected.status.success());
    let stderr = String::from_utf8_lossy(&rejected.stderr);
    assert!(stderr.contains("bad.jsonl:2") && stderr.contains("content"), "{stderr}");
    assert_eq!(app.event_count().await, 0);

    let imported = engram(&app, &["ingest", good.to_str().unwrap(), "--tenant", "acme"]);
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    assert!(String::from_utf8_lossy(&imported.stdout).contains("2 events imported"));
    let again = engram(&app, &["ingest", good.to_str().unwrap(), "--tenant", "acme"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("0 events imported, 2 already present"));
    assert_eq!(app.event_count().await, 2);
}
