//! An upgrade keeps what was stored: a database made by the schema as it stood before
//! data in and out (migration 20261207000020), with rows in every table, migrated to the
//! head, reads back the same in every column it had, and serves the user it holds.

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::postgres::PgPoolOptions;

/// The last migration of the schema this test starts from.
const FROM: i64 = 20261207000020;

/// Every row of every table, as JSON, in a stable order.
async fn snapshot(pool: &sqlx::PgPool) -> BTreeMap<String, Vec<Value>> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables
          WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> '_sqlx_migrations'
          ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut out = BTreeMap::new();
    for table in tables {
        let sql = format!("SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY to_jsonb(t)::text), '[]') FROM {table} t");
        let rows: Value = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(pool).await.unwrap();
        out.insert(table, rows.as_array().unwrap().clone());
    }
    out
}

#[tokio::test]
async fn a_database_of_the_previous_schema_migrates_to_the_head_and_reads_back_the_same() {
    let (db, url) = crate::helpers::empty_database().await;
    engram_base::db::MIGRATOR.run_to(FROM, &db.pool).await.expect("the previous schema applies");
    sqlx::raw_sql(include_str!("data/schema_20261207000020.sql")).execute(&db.pool).await.expect("the rows go in");
    let before = snapshot(&db.pool).await;
    let empty: Vec<&String> = before.iter().filter(|(_, rows)| rows.is_empty()).map(|(t, _)| t).collect();
    assert!(empty.is_empty(), "every table of the previous schema holds a row: {empty:?} do not");

    db.migrate().await.expect("the head applies");
    let after = snapshot(&db.pool).await;
    for (table, rows) in &before {
        let now = &after[table];
        assert_eq!(now.len(), rows.len(), "{table}: as many rows");
        for (old, new) in rows.iter().zip(now) {
            // What a column added since holds is the head's business; every old column reads the same.
            let kept: serde_json::Map<String, Value> = new
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| old.get(k.as_str()).is_some())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(&Value::Object(kept), old, "{table}");
        }
    }
    let metadata: Value = sqlx::query_scalar("SELECT metadata FROM memories WHERE content = 'Lives in Porto'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(metadata, serde_json::json!({}), "a memory from before has empty metadata");

    // The migrated database serves: the memory is listed, with its history.
    let app = crate::helpers::spawn_app_on(crate::helpers::test_settings(), db, url).await;
    let key = app.key("acme", "read,admin").await;
    let listed: Value = app.get_as(&key, "/v1/users/ann/memories?status=superseded").await.json().await.unwrap();
    assert_eq!(listed["memories"][0]["content"], "Lives in Lisbon", "{listed}");
    let detail: Value =
        app.get_as(&key, "/v1/users/ann/memories/0193a0d2-0000-7000-8000-000000000031").await.json().await.unwrap();
    assert_eq!(detail["history"][0]["reason"], "moved", "{detail}");
    let pool = PgPoolOptions::new().max_connections(1).connect(&app.database_url).await.unwrap();
    let versions: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations").fetch_one(&pool).await.unwrap();
    assert_eq!(versions as usize, engram_base::db::MIGRATOR.iter().count(), "every migration is recorded");
}
