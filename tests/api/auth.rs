use serde_json::json;

use crate::helpers::{engram, error_of, spawn_app};

fn event() -> serde_json::Value {
    json!({"user_id": "u1", "role": "user", "content": "hello"})
}

#[tokio::test]
async fn requests_without_a_valid_key_get_401() {
    let app = spawn_app().await;

    let missing = app.client.post(format!("{}/v1/events", app.address)).json(&event()).send().await.unwrap();
    let wrong = app.post_events("egm_0000000000000000000000000000000000000000000000", &event()).await;
    let garbage = app.post_events("not-a-key", &event()).await;

    for response in [missing, wrong, garbage] {
        assert_eq!(response.status(), 401);
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        assert_eq!(error_of(response).await["code"], "unauthorized");
    }
    assert_eq!(app.event_count().await, 0);
}

#[tokio::test]
async fn a_key_without_the_ingest_scope_gets_403() {
    let app = spawn_app().await;
    let read_only = app.key("acme", "read").await;

    let response = app.post_events(&read_only, &event()).await;

    assert_eq!(response.status(), 403);
    let error = error_of(response).await;
    assert_eq!(error["code"], "forbidden");
    assert!(error["message"].as_str().unwrap().contains("ingest"));
    assert_eq!(app.event_count().await, 0);
}

#[tokio::test]
async fn cli_keys_are_printed_once_listed_without_secrets_and_revocable() {
    let app = spawn_app().await;

    let created = engram(&app, &["keys", "create", "--tenant", "acme", "--scope", "ingest,read", "--name", "ci"]);
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let stdout = String::from_utf8(created.stdout).unwrap();
    let secret = stdout.lines().last().unwrap().to_owned();
    let id = stdout.split_whitespace().nth(1).unwrap().to_owned();
    assert_eq!(app.post_events(&secret, &event()).await.status(), 202);

    let listed = String::from_utf8(engram(&app, &["keys", "list"]).stdout).unwrap();
    assert!(listed.contains(&id) && listed.contains("ingest,read") && listed.contains("active"));
    assert!(!listed.contains(&secret), "the secret is never listed");
    let (rows_with_secret, rows_with_hash): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE k::text LIKE '%' || $1 || '%'),
                count(*) FILTER (WHERE secret_hash = sha256(convert_to($2, 'UTF8')))
           FROM api_keys k",
    )
    .bind(&secret[4..])
    .bind(&secret)
    .fetch_one(&app.db.pool)
    .await
    .unwrap();
    assert_eq!((rows_with_secret, rows_with_hash), (0, 1), "only the key's hash is stored");

    let revoked = engram(&app, &["keys", "revoke", &id]);
    assert!(revoked.status.success());
    assert_eq!(app.post_events(&secret, &event()).await.status(), 401);
    assert!(!engram(&app, &["keys", "revoke", &id]).status.success(), "a revoked key cannot be revoked again");
}

#[tokio::test]
async fn cli_rejects_bad_scopes_and_tenants_with_a_clear_message() {
    let app = spawn_app().await;

    let bad_scope = engram(&app, &["keys", "create", "--tenant", "acme", "--scope", "read,write"]);
    let bad_tenant = engram(&app, &["keys", "create", "--tenant", "ACME corp", "--scope", "read"]);

    assert!(!bad_scope.status.success());
    assert!(String::from_utf8_lossy(&bad_scope.stderr).contains("--scope: unknown scope `write`"));
    assert!(!bad_tenant.status.success());
    assert!(String::from_utf8_lossy(&bad_tenant.stderr).contains("--tenant"));
}

#[tokio::test]
async fn a_revoked_key_stops_working_once_the_key_cache_expires() {
    let mut settings = crate::helpers::test_settings();
    settings.server.key_cache_secs = 1;
    let app = crate::helpers::spawn_app_with(settings).await;
    let secret = app.key("acme", "ingest").await;
    assert_eq!(app.post_events(&secret, &event()).await.status(), 202);
    let id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM api_keys").fetch_one(&app.db.pool).await.unwrap();

    engram_base::auth::revoke_key(&app.db.pool, id).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;

    assert_eq!(app.post_events(&secret, &event()).await.status(), 401);
}
