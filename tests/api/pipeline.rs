//! What a user's data goes through outside the API: every job, run by the `engram`
//! binary, and a scan of every table for a value that must not be there.

use crate::helpers::TestApp;

/// Every text, JSON, array and tsvector column of every table, from the catalogue, so a
/// table added later cannot be missed; the rows of any of them holding `needle`.
pub async fn hits(app: &TestApp, needle: &str) -> Vec<(String, String, i64)> {
    let columns: Vec<(String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text FROM information_schema.columns
          WHERE table_schema = current_schema()
            AND data_type IN ('text', 'character varying', 'jsonb', 'json', 'ARRAY', 'tsvector')
          ORDER BY table_name, column_name",
    )
    .fetch_all(&app.db.pool)
    .await
    .unwrap();
    assert!(columns.len() > 30, "the catalogue lists the text columns: {columns:?}");
    let mut found = Vec::new();
    for (table, column) in columns {
        // Ids are left out of the text searched: a value of a few digits ("7730") turns up
        // in a random UUID's hex now and then, and no value a user said is an id.
        let sql = format!(
            "SELECT count(*) FROM {table}
              WHERE strpos(lower(regexp_replace({column}::text, '[0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{12}}', '', 'gi')), lower($1)) > 0"
        );
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(needle).fetch_one(&app.db.pool).await.unwrap();
        if n > 0 {
            found.push((table, column, n));
        }
    }
    found
}

/// Each job the worker runs, once, by the `engram` binary at `now` (waited for without
/// blocking the test's server).
pub async fn run_jobs(app: &TestApp, jobs: &[&str], now: &str) -> String {
    let mut logs = String::new();
    for job in jobs {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(["job", "run", job, "--now", now])
            .env("ENGRAM_DATABASE__URL", &app.database_url)
            .env("ENGRAM_LOG__FILTER", "debug")
            .output()
            .await
            .expect("the engram binary runs");
        assert!(out.status.success(), "{job}: {}", String::from_utf8_lossy(&out.stderr));
        logs.push_str(&String::from_utf8_lossy(&out.stdout));
        logs.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    logs
}

pub const ALL_JOBS: &[&str] = &[
    "extract_facts",
    "summarize_sessions",
    "summarize_periods",
    "dedup",
    "reflect",
    "evict",
    "embed_events",
    "redact",
];

pub fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
