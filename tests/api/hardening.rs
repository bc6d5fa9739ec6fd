//! The edges of the HTTP API: keys judged before bodies, bounded metric labels, JSON
//! declared as such, times within a window, client ids that belong to one user, and
//! late events that re-open their session.

use std::time::Duration;

use engram_core::jobs::{Scope, Trigger, control};
use serde_json::{Value, json};

use crate::helpers::{error_of, spawn_app};
use crate::jobs::{executor, job_dir};

/// Every route that takes a JSON body, with the scope it needs.
const BODY_ROUTES: &[(&str, &str)] = &[
    ("/v1/events", "ingest"),
    ("/v1/search", "read"),
    ("/v1/feedback", "read"),
    ("/admin/v1/jobs/evict/runs", "admin"),
    ("/admin/v1/users/u/memories/00000000-0000-0000-0000-000000000000/restore", "admin"),
];

#[tokio::test]
async fn a_broken_body_is_never_judged_before_the_key() {
    let app = spawn_app().await;
    let revoked = app.key("acme", "read,ingest,admin").await;
    let id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM api_keys").fetch_one(&app.db.pool).await.unwrap();
    engram_base::auth::revoke_key(&app.db.pool, id).await.unwrap();
    for (path, scope) in BODY_ROUTES {
        let other_scope = if *scope == "ingest" { "read" } else { "ingest" };
        let unscoped = app.key("acme", other_scope).await;
        for round in 0..10 {
            let post = || {
                app.client
                    .post(format!("{}{path}", app.address))
                    .header("content-type", "application/json")
                    .body("{\"broken\": ")
            };
            let none = post().send().await.unwrap().status();
            let bad = post().bearer_auth("egm_not_a_key").send().await.unwrap().status();
            let gone = post().bearer_auth(&revoked).send().await.unwrap().status();
            let lacking = post().bearer_auth(&unscoped).send().await.unwrap().status();
            assert_eq!([none, bad, gone, lacking].map(|s| s.as_u16()), [401, 401, 401, 403], "{path}, round {round}");
        }
    }
}

#[tokio::test]
async fn invented_methods_do_not_grow_the_metrics() {
    let app = spawn_app().await;
    for i in 0..200 {
        let method = reqwest::Method::from_bytes(format!("X{i:03}Q").as_bytes()).unwrap();
        app.client.request(method, format!("{}/healthz", app.address)).send().await.unwrap();
    }
    let metrics = app.metrics().await;
    let methods: std::collections::BTreeSet<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("engram_http_requests_total{"))
        .filter_map(|l| l.split("method=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(methods.into_iter().collect::<Vec<_>>(), vec!["other"], "{metrics}");
    let series = metrics.lines().filter(|l| l.starts_with("engram_http_requests_total{")).count();
    assert!(series <= 2, "{series} series for 200 invented methods");
}

#[tokio::test]
async fn a_body_not_declared_as_json_is_a_415() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let event = json!({"user_id": "u", "role": "user", "content": "hello there"}).to_string();
    for (path, body) in
        [("/v1/events", event.clone()), ("/v1/search", json!({"user_id": "u", "query": "hi"}).to_string())]
    {
        for content_type in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            None,
        ] {
            let mut request = app.client.post(format!("{}{path}", app.address)).bearer_auth(&key).body(body.clone());
            if let Some(content_type) = content_type {
                request = request.header("content-type", content_type);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 415, "{path} as {content_type:?}");
            assert_eq!(error_of(response).await["code"], "unsupported_media_type");
        }
        let declared = app
            .client
            .post(format!("{}{path}", app.address))
            .bearer_auth(&key)
            .header("content-type", "application/json; charset=utf-8")
            .body(body)
            .send()
            .await
            .unwrap();
        assert!(declared.status().is_success(), "{path}: {}", declared.status());
    }
    assert_eq!(app.event_count().await, 1, "nothing of the refused requests was stored");
}

#[tokio::test]
async fn times_outside_the_window_and_another_users_client_id_are_refused() {
    let app = spawn_app().await;
    let key = app.key("acme", "ingest").await;
    for time in ["9999-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "1969-12-31T23:59:59Z"] {
        let response =
            app.post_events(&key, &json!({"user_id": "u", "role": "user", "content": "hi", "created_at": time})).await;
        assert_eq!(response.status(), 400, "{time}");
        assert_eq!(error_of(response).await["field"], "created_at");
    }
    let mine = json!({"id": "m-1", "user_id": "ann", "role": "user", "content": "my message"});
    assert_eq!(app.post_events(&key, &mine).await.status(), 202);
    let again: Value = app.post_events(&key, &mine).await.json().await.unwrap();
    assert_eq!(again["duplicates"], 1, "the same user's retry is idempotent");
    let theirs = json!({"events": [{"id": "m-2", "user_id": "bo", "role": "user", "content": "fine"},
                                   {"id": "m-1", "user_id": "bo", "role": "user", "content": "not ann's"}]});
    let response = app.post_events(&key, &theirs).await;
    assert_eq!(response.status(), 409);
    assert!(error_of(response).await["message"].as_str().unwrap().starts_with("events[1].id"));
    assert_eq!(app.event_count().await, 1, "the whole batch was refused");
}

#[tokio::test]
async fn a_late_event_reopens_its_summarised_session() {
    let app = spawn_app().await;
    let key = app.key("acme", "ingest").await;
    let dir = job_dir(&[("summarize_sessions", "schedule = \"0 0 * * * *\"")]);
    let executor = executor(&app.db, &dir);
    let summarize = |at: &str| {
        let at: chrono::DateTime<chrono::Utc> = at.parse().unwrap();
        let executor = executor.clone();
        async move {
            let id = control::trigger(
                &executor.pool,
                &executor.jobs,
                "summarize_sessions",
                &Scope::all(),
                Trigger::Cli,
                false,
                Some(at),
            )
            .await
            .unwrap();
            executor.run_now("summarize_sessions", id, Duration::from_secs(10)).await.unwrap()
        }
    };
    let said = |content: &str, at: &str| json!({"user_id": "ann", "session_id": "trip", "role": "user", "content": content, "created_at": at});
    app.post_events(
        &key,
        &json!({"events": [said("We are planning a trip to Lisbon in May.", "2026-05-01T10:00:00Z"),
                                             said("The hotel is booked near the river.", "2026-05-01T10:05:00Z")]}),
    )
    .await;
    assert_eq!(summarize("2026-05-01T12:00:00Z").await.counts["summarized"], 1);

    let late: Value = app
        .post_events(&key, &said("We also rented a car for the coast.", "2026-05-01T10:10:00Z"))
        .await
        .json()
        .await
        .unwrap();
    let rerun = summarize("2026-05-01T13:00:00Z").await;

    assert_eq!(rerun.counts["summarized"], 1, "the session was pending again");
    let (ids, history): (Vec<uuid::Uuid>, Value) =
        sqlx::query_as("SELECT summary_event_ids, summary_history FROM sessions WHERE session_id = 'trip'")
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(ids.len(), 3);
    assert!(ids.contains(&late["ids"][0].as_str().unwrap().parse().unwrap()), "the summary covers the late event");
    assert_eq!(history.as_array().unwrap().len(), 1, "the earlier summary is kept: {history}");
    assert_eq!(history[0]["event_ids"].as_array().unwrap().len(), 2);
}
