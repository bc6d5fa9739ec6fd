use engram_base::domain::TenantId;
use serde_json::{Value, json};

use crate::helpers::spawn_app;

#[tokio::test]
async fn client_event_ids_of_one_tenant_never_reveal_another_tenants_events() {
    let app = spawn_app().await;
    let key_a = app.key("tenant-a", "ingest").await;
    let key_b = app.key("tenant-b", "ingest").await;
    let body = json!({"id": "shared-id", "user_id": "u1", "role": "user", "content": "A's secret plan"});

    let a: Value = app.post_events(&key_a, &body).await.json().await.unwrap();
    let b: Value = app.post_events(&key_b, &body).await.json().await.unwrap();

    assert_eq!(b["accepted"], 1, "tenant B's event is its own, not a duplicate of A's");
    assert_ne!(a["ids"][0], b["ids"][0]);
    assert_ne!(a["session_ids"][0], b["session_ids"][0]);
}

#[tokio::test]
async fn row_level_security_confines_a_tenant_transaction_even_without_a_tenant_filter() {
    let app = spawn_app().await;
    let key_a = app.key("tenant-a", "ingest").await;
    let key_b = app.key("tenant-b", "ingest").await;
    for (key, n) in [(&key_a, 3), (&key_b, 2)] {
        for i in 0..n {
            let body = json!({"user_id": "same-user", "role": "user", "content": format!("event {i}")});
            assert_eq!(app.post_events(key, &body).await.status(), 202);
        }
    }
    let (a, b) = (TenantId::parse("tenant-a").unwrap(), TenantId::parse("tenant-b").unwrap());

    // No WHERE tenant_id here: only row-level security stands between the tenants.
    let mut tx = app.db.tenant_tx(&a).await.unwrap();
    let events: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT tenant_id FROM events").fetch_all(&mut *tx).await.unwrap();
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM events").fetch_one(&mut *tx).await.unwrap();
    let sessions: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT tenant_id FROM sessions").fetch_all(&mut *tx).await.unwrap();
    let keys: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT tenant_id FROM api_keys").fetch_all(&mut *tx).await.unwrap();
    assert_eq!(events, vec!["tenant-a"]);
    assert_eq!(count, 3);
    assert_eq!(sessions, vec!["tenant-a"]);
    assert_eq!(keys, vec!["tenant-a"]);
    let updated = sqlx::query("UPDATE events SET content = 'overwritten'").execute(&mut *tx).await.unwrap();
    assert_eq!(updated.rows_affected(), 3, "only tenant A's rows can be touched");
    tx.rollback().await.unwrap();

    let mut tx = app.db.tenant_tx(&b).await.unwrap();
    let forged = sqlx::query(
        "INSERT INTO events (tenant_id, id, user_id, session_id, role, content, created_at)
         VALUES ('tenant-a', gen_random_uuid(), 'u', 's', 'user', 'forged', now())",
    )
    .execute(&mut *tx)
    .await;
    let err = forged.expect_err("writing another tenant's row is refused");
    assert!(err.to_string().contains("row-level security"), "{err}");
    tx.rollback().await.unwrap();

    // A tenant-scoped transaction without a tenant sees nothing at all.
    let mut tx = app.db.pool.begin().await.unwrap();
    sqlx::query("SET LOCAL ROLE engram_tenant").execute(&mut *tx).await.unwrap();
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM events").fetch_one(&mut *tx).await.unwrap();
    assert_eq!(count, 0);
}
