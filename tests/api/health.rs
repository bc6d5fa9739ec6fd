use crate::helpers::{error_of, spawn_app};

#[tokio::test]
async fn health_readiness_and_metrics_need_no_key() {
    let app = spawn_app().await;

    let health = app.get("/healthz").await;
    let ready = app.get("/readyz").await;

    assert_eq!(health.status(), 200);
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.json::<serde_json::Value>().await.unwrap()["checks"]["database"], "ok");
    assert_eq!(app.get("/metrics").await.status(), 200);
}

#[tokio::test]
async fn readiness_fails_when_the_database_is_gone() {
    let app = spawn_app().await;

    app.db.pool.close().await;

    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 503);
    assert_eq!(error_of(ready).await["code"], "not_ready");
}

#[tokio::test]
async fn http_metrics_are_labelled_by_route_pattern_never_by_raw_path() {
    let app = spawn_app().await;
    let key = app.key("acme", "ingest").await;
    let event = serde_json::json!({"user_id": "secret-user-42", "role": "user", "content": "hi"});
    assert_eq!(app.post_events(&key, &event).await.status(), 202);
    assert_eq!(app.get("/no/such/secret-user-42").await.status(), 404);

    let metrics = app.get("/metrics").await.text().await.unwrap();

    assert!(metrics.contains(r#"engram_http_requests_total{method="POST",route="/v1/events",status="202"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"route="unmatched",status="404"} 1"#), "{metrics}");
    assert!(metrics.contains("engram_http_request_duration_seconds_bucket"));
    assert!(!metrics.contains("secret-user-42"), "no user or raw path in labels");
}
