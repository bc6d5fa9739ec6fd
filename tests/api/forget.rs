//! Forgetting a user wins every race: against job runs of real `engram` processes, the
//! access-statistics buffer, and failures recorded late; and it leaves only a keyed
//! hash in the audit log.

use std::process::{Command, Stdio};
use std::time::Duration;

use engram_base::domain::{TenantId, UserId};
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app};

/// Rows of `user` in every table with a `user_id` column, read from the catalogue so a
/// table added later cannot be missed.
async fn leftovers(app: &TestApp, user: &str) -> Vec<(String, i64)> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.columns
          WHERE table_schema = current_schema() AND column_name = 'user_id' ORDER BY table_name",
    )
    .fetch_all(&app.db.pool)
    .await
    .unwrap();
    assert!(tables.len() >= 10, "the catalogue lists the user tables: {tables:?}");
    let mut found = Vec::new();
    for table in tables {
        let sql = format!("SELECT count(*) FROM {table} WHERE user_id = $1");
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(user).fetch_one(&app.db.pool).await.unwrap();
        if n > 0 {
            found.push((table, n));
        }
    }
    found
}

/// Many sessions of plain statements, days apart, so every job has work for the user.
async fn tell(app: &TestApp, key: &str, user: &str, sessions: usize) {
    let mut events = Vec::new();
    for s in 0..sessions {
        for m in 0..6 {
            events.push(json!({
                "user_id": user, "session_id": format!("s{s}"), "role": "user",
                "created_at": format!("2026-0{}-{:02}T10:{:02}:00Z", 1 + s % 9, 1 + s % 28, m),
                "content": format!("My project number {s} uses PostgreSQL {m} and we deploy it on Fly.io region {s}."),
            }));
        }
    }
    for chunk in events.chunks(500) {
        assert_eq!(app.post_events(key, &json!({"events": chunk})).await.status(), 202);
    }
}

fn job_process(app: &TestApp, job: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["job", "run", job, "--now", "2027-06-01T00:00:00Z"])
        .env("ENGRAM_DATABASE__URL", &app.database_url)
        .env("ENGRAM_LOG__FILTER", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the engram binary runs")
}

async fn run_to_end(app: &TestApp, job: &str) {
    let out = job_process(app, job).wait_with_output().unwrap();
    assert!(out.status.success(), "{job}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Starts `job` in an engram process, deletes `user` through the API while the run is
/// under way, and lets the run finish.
async fn delete_during(app: &TestApp, admin: &str, job: &str, user: &str, delay: Duration) {
    let started = |db: &engram_base::db::Database| {
        let db = db.clone();
        let job = job.to_owned();
        async move {
            let n: i64 = sqlx::query_scalar("SELECT count(*) FROM job_runs WHERE job = $1 AND status <> 'queued'")
                .bind(job)
                .fetch_one(&db.pool)
                .await
                .unwrap();
            n
        }
    };
    let before = started(&app.db).await;
    let mut child = job_process(app, job);
    for _ in 0..400 {
        if started(&app.db).await > before || child.try_wait().unwrap().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(delay).await;
    let deleted =
        app.client.delete(format!("{}/admin/v1/users/{user}", app.address)).bearer_auth(admin).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{job}: {}", String::from_utf8_lossy(&out.stderr));
}

async fn a_deletion_during_a_run_of(job: &str) {
    let app = spawn_app().await;
    let admin = app.key("acme", "read,ingest,admin").await;
    for delay in [Duration::from_millis(50), Duration::from_millis(400)] {
        tell(&app, &admin, "dora", 40).await;
        tell(&app, &admin, "eve", 2).await;
        if job != "extract_facts" {
            run_to_end(&app, "extract_facts").await;
        }

        delete_during(&app, &admin, job, "dora", delay).await;

        assert_eq!(leftovers(&app, "dora").await, vec![], "{job} after {delay:?}: nothing of the deleted user is left");
        let found = app.search(&admin, &json!({"user_id": "dora", "query": "which database does my project use", "kinds": ["fact", "insight", "session_summary"]})).await;
        assert_eq!(found["results"], json!([]), "{job}");
        assert!(!leftovers(&app, "eve").await.is_empty(), "other users keep their data");
    }
}

#[tokio::test]
async fn a_deletion_during_extract_facts_stays_a_deletion() {
    a_deletion_during_a_run_of("extract_facts").await;
}

#[tokio::test]
async fn a_deletion_during_summarize_sessions_stays_a_deletion() {
    a_deletion_during_a_run_of("summarize_sessions").await;
}

#[tokio::test]
async fn a_deletion_during_dedup_stays_a_deletion() {
    a_deletion_during_a_run_of("dedup").await;
}

#[tokio::test]
async fn a_deletion_during_evict_stays_a_deletion() {
    a_deletion_during_a_run_of("evict").await;
}

#[tokio::test]
async fn access_statistics_of_a_forgotten_user_are_not_written_back() {
    let app = spawn_app().await;
    let admin = app.key("acme", "read,ingest,admin").await;
    let memory = app.remember("acme", "kim", "personal", "Kim has a dog called Rex").await;
    for _ in 0..3 {
        let found = app.search(&admin, &json!({"user_id": "kim", "query": "what is my dog called"})).await;
        assert_eq!(found["hit"], true);
    }
    assert!(app.access.pending() > 0, "the lookups were counted in memory");

    let deleted =
        app.client.delete(format!("{}/admin/v1/users/kim", app.address)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    // Another replica's buffer still holds counts of the forgotten memory.
    let (tenant, user) = (TenantId::parse("acme").unwrap(), UserId::parse("kim").unwrap());
    app.access.record(&tenant, &user, [memory], chrono::Utc::now());
    app.access.flush(&app.db.pool).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;

    assert_eq!(leftovers(&app, "kim").await, vec![]);
}

#[tokio::test]
async fn the_audit_log_answers_whether_a_user_was_deleted_without_keeping_the_id() {
    let app = spawn_app().await;
    let admin = app.key("acme", "read,ingest,admin").await;
    let other = app.key("globex", "admin").await;
    tell(&app, &admin, "dora", 1).await;

    let deleted =
        app.client.delete(format!("{}/admin/v1/users/dora", app.address)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(deleted.status(), 200);

    let audit: Vec<String> = sqlx::query_scalar("SELECT concat_ws(' ', actor, target, details::text) FROM audit_log")
        .fetch_all(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(audit.len(), 1);
    assert!(!audit[0].contains("dora"), "{}", audit[0]);
    let found: Value = app.get_as(&admin, "/admin/v1/users/dora/deletions").await.json().await.unwrap();
    assert_eq!(found["deletions"].as_array().unwrap().len(), 1, "{found}");
    assert!(found["deletions"][0]["at"].is_string());
    assert_eq!(found["deletions"][0]["deleted"]["events"], 6);
    let elsewhere: Value = app.get_as(&other, "/admin/v1/users/dora/deletions").await.json().await.unwrap();
    assert_eq!(elsewhere["deletions"], json!([]), "another tenant's deletions are not seen");

    // New events bring the id back, as a new user.
    tell(&app, &admin, "dora", 1).await;
    assert_eq!(leftovers(&app, "dora").await, vec![("events".to_owned(), 6), ("sessions".to_owned(), 1)]);
}
