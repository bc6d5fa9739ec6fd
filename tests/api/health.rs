use crate::helpers::{error_of, spawn_app};

#[tokio::test]
async fn health_readiness_and_metrics_need_no_key() {
    let app = spawn_app().await;

    let health = app.get("/healthz").await;
    let ready = app.get("/readyz").await;

    assert_eq!(health.status(), 200);
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.json::<serde_json::Value>().await.unwrap()["status"], "ready");
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
async fn lookups_survive_their_connections_being_cut() {
    let app = spawn_app().await;
    let key = app.key("acme", "read").await;
    app.remember("acme", "ana", "technical", "Ana deploys with Terraform").await;
    let body = serde_json::json!({"user_id": "ana", "query": "terraform"});
    assert_eq!(app.search(&key, &body).await["results"].as_array().unwrap().len(), 1);

    // As a server restart or failover does: every connection to this database ends.
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        .execute(&app.db.pool)
        .await
        .unwrap();

    // A connection used moments ago is not pinged first, so a lookup may meet the cut
    // one: that is a 503 to retry, never a 500, and the connection is replaced.
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(app.post_as(&key, "/v1/search", &body).await.status().as_u16());
    }
    assert!(statuses.iter().all(|s| [200, 503].contains(s)), "statuses after the cut: {statuses:?}");
    assert_eq!(statuses.last(), Some(&200), "statuses after the cut: {statuses:?}");
}

#[tokio::test]
async fn http_metrics_are_labelled_by_route_pattern_never_by_raw_path() {
    let app = spawn_app().await;
    let key = app.key("acme", "ingest").await;
    let event = serde_json::json!({"user_id": "secret-user-42", "role": "user", "content": "hi"});
    assert_eq!(app.post_events(&key, &event).await.status(), 202);
    assert_eq!(app.get("/no/such/secret-user-42").await.status(), 404);

    let metrics = app.get("/metrics").await.text().await.unwrap();

    assert!(
        metrics.contains(r#"engram_http_requests_total{method="POST",route="/v1/events",status="202"} 1"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"route="unmatched",status="404"} 1"#), "{metrics}");
    assert!(metrics.contains("engram_http_request_duration_seconds_bucket"));
    assert!(!metrics.contains("secret-user-42"), "no user or raw path in labels");
}

#[tokio::test]
async fn readiness_names_an_unreachable_or_mismatched_embeddings_endpoint() {
    use engram_base::configuration::EmbeddingProvider;
    use wiremock::{Mock, MockServer, ResponseTemplate, matchers::path};

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut settings = crate::helpers::test_settings();
    settings.embeddings.provider = EmbeddingProvider::Openai;
    settings.embeddings.model = Some("remote-embed".into());
    settings.embeddings.dimensions = Some(384);
    settings.embeddings.timeout_secs = 1;
    settings.embeddings.base_url = Some(format!("http://127.0.0.1:{closed}/v1"));
    let unreachable = crate::helpers::spawn_app_with(settings.clone()).await;

    let server = MockServer::start().await;
    let body = serde_json::json!({"object": "list", "model": "remote-embed",
        "data": [{"object": "embedding", "index": 0, "embedding": vec![0.5; 1024]}],
        "usage": {"prompt_tokens": 1, "total_tokens": 1}});
    Mock::given(path("/embeddings")).respond_with(ResponseTemplate::new(200).set_body_json(body)).mount(&server).await;
    settings.embeddings.base_url = Some(server.uri());
    let mismatched = crate::helpers::spawn_app_with(settings).await;

    let down = unreachable.get("/readyz").await;
    assert_eq!(down.status(), 503);
    let message = error_of(down).await["message"].as_str().unwrap().to_owned();
    assert!(message.contains("embeddings endpoint") && message.contains("connection refused"), "{message}");

    let wrong = mismatched.get("/readyz").await;
    assert_eq!(wrong.status(), 503);
    let message = error_of(wrong).await["message"].as_str().unwrap().to_owned();
    assert!(message.contains("1024") && message.contains("384"), "{message}");
}
