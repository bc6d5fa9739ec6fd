//! The `redact` job brings a changed rule set to what is already stored: a phone number
//! said while `phone` was kept is in a turn, its metadata, the assistant's echo, an
//! explicit memory and a feedback note; once `phone` is listed in `ingest.redact` and
//! the job runs, it is in no table, the rest of the turn is still found by search with a
//! vector made from the redacted text, ids and times are what they were, and a second
//! run with the same rules changes nothing.

use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::pipeline::{ALL_JOBS, hits, run_jobs};

const NUMBER: &str = "415 555 0187";

/// Runs `redact` by the `engram` binary with `ingest.redact` set to `kinds`; the run's counts.
async fn redact_with(app: &TestApp, kinds: &[&str], now: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("engram.toml");
    std::fs::write(&config, format!("[ingest]\nredact = {}\n", serde_json::to_string(kinds).unwrap())).unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["job", "run", "redact", "--now", now])
        .env("ENGRAM_CONFIG", &config)
        .env("ENGRAM_DATABASE__URL", &app.database_url)
        .output()
        .await
        .expect("the engram binary runs");
    assert!(out.status.success(), "redact: {}", String::from_utf8_lossy(&out.stderr));
    let logs = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!logs.contains(NUMBER), "the job's output names no value: {logs}");
    sqlx::query_scalar("SELECT counts FROM job_runs WHERE job = 'redact' ORDER BY created_at DESC LIMIT 1")
        .fetch_one(&app.db.pool)
        .await
        .unwrap()
}

/// The counts of rows redacted, per table and kind (`events.phone`).
fn redacted(counts: &Value) -> Vec<(String, i64)> {
    counts
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.contains('.'))
        .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
        .collect()
}

#[tokio::test]
async fn a_rule_added_later_reaches_every_stored_row_once() {
    let app = crate::helpers::spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    let say = |role: &str, content: &str, minute: u32, metadata: Value| {
        json!({"user_id": "ann", "session_id": "s1", "role": role, "content": content, "metadata": metadata,
               "created_at": format!("2026-05-19T10:{minute:02}:00Z")})
    };
    let events = json!({"events": [
        say("user", &format!("My new number is +1 {NUMBER}, the old one is dead. I also fixed the mast on my sailboat last weekend."), 0,
            json!({"caller": {"phone": format!("+1 {NUMBER}")}})),
        say("assistant", &format!("Noted, +1 {NUMBER}. Well done on the mast!"), 1, json!({})),
        say("user", "The sailboat is moored in Brixham harbour over the winter.", 2, json!({})),
    ]});
    assert_eq!(app.post_events(&key, &events).await.status(), 202);
    let made =
        app.post_as(&key, "/v1/users/ann/memories", &json!({"content": format!("Ann's mobile is +1 {NUMBER}")})).await;
    assert_eq!(made.status(), 201);
    let memory = made.json::<Value>().await.unwrap()["memory"]["id"].as_str().unwrap().to_owned();
    let noted = app
        .post_as(
            &key,
            "/v1/feedback",
            &json!({"user_id": "ann", "memory_id": memory, "kind": "helpful",
            "note": format!("call +1 {NUMBER} after six")}),
        )
        .await;
    assert_eq!(noted.status(), 201);
    crate::episodic::embedded(&app).await;
    run_jobs(&app, ALL_JOBS, "2026-05-20T00:00:00Z").await;
    let before: Vec<(uuid::Uuid, chrono::DateTime<chrono::Utc>)> =
        sqlx::query_as("SELECT id, created_at FROM events WHERE user_id = 'ann' ORDER BY id")
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    assert!(hits(&app, NUMBER).await.len() >= 3, "stored while `phone` was kept: {:?}", hits(&app, NUMBER).await);

    // The rules the service was started with: nothing to redact.
    let kept_phone = engram_base::configuration::IngestSettings::default().redact;
    let defaults: Vec<&str> = kept_phone.iter().map(String::as_str).collect();
    let first = redact_with(&app, &defaults, "2026-05-21T00:00:00Z").await;
    assert_eq!(redacted(&first), vec![], "{first}");
    assert!(!hits(&app, NUMBER).await.is_empty());

    // `phone` listed: every table loses it, counted per table and kind.
    let mut with_phone = defaults.clone();
    with_phone.push("phone");
    let second = redact_with(&app, &with_phone, "2026-05-22T00:00:00Z").await;
    assert_eq!(hits(&app, NUMBER).await, vec![], "after the run: {second}");
    assert_eq!(hits(&app, "5550187").await, vec![]);
    let counts: std::collections::BTreeMap<String, i64> = redacted(&second).into_iter().collect();
    assert_eq!(counts.get("events.phone"), Some(&2), "{second}");
    for table in ["memories.phone", "feedback.phone", "memory_history.phone"] {
        assert!(counts.get(table).is_some_and(|n| *n >= 1), "{table}: {second}");
    }
    let after: Vec<(uuid::Uuid, chrono::DateTime<chrono::Utc>)> =
        sqlx::query_as("SELECT id, created_at FROM events WHERE user_id = 'ann' ORDER BY id")
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(before, after, "ids and times stay");
    let unembedded: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE user_id = 'ann' AND embedding IS NULL")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(unembedded, 0, "vectors are made again from the redacted text");
    let found = app
        .search(&key, &json!({"user_id": "ann", "query": "which part of the sailboat was fixed?", "kinds": ["event"], "min_score": 0}))
        .await;
    let top: Vec<&str> =
        found["results"].as_array().unwrap().iter().take(2).map(|r| r["content"].as_str().unwrap()).collect();
    assert!(top.iter().any(|t| t.contains("mast") && t.contains("[phone]")), "the rest of the turn is found: {found}");

    // Unchanged rules: nothing to do.
    let third = redact_with(&app, &with_phone, "2026-05-23T00:00:00Z").await;
    assert_eq!(redacted(&third), vec![], "{third}");
    let text: String =
        sqlx::query_scalar("SELECT string_agg(content, ' ' ORDER BY seq) FROM events WHERE user_id = 'ann'")
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    assert!(text.contains("[phone]") && text.contains("Brixham"), "{text}");
}

/// A worker that starts with rules other than those recorded queues a `redact` run at
/// once, and records the new fingerprint, so that the next start with the same rules
/// queues none.
#[tokio::test]
async fn a_worker_started_with_other_rules_queues_a_redact_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy("jobs/redact.toml", dir.path().join("redact.toml")).unwrap();
    let mut settings = crate::helpers::test_settings();
    settings.server.role = engram_base::configuration::Role::All;
    settings.jobs.dir = dir.path().to_owned();
    settings.jobs.poll_ms = 50;
    let app = crate::helpers::spawn_app_with(settings).await;
    let mut run = None;
    for _ in 0..200 {
        run = sqlx::query_as::<_, (String, String)>("SELECT trigger, status FROM job_runs WHERE job = 'redact'")
            .fetch_optional(&app.db.pool)
            .await
            .unwrap();
        if run.as_ref().is_some_and(|(_, status)| status == "succeeded") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(run, Some(("schedule".into(), "succeeded".into())), "a run at start, done");
    let pool = &app.db.pool;
    let current =
        engram_core::ingest::secrets::fingerprint(&engram_base::configuration::IngestSettings::default().redact);
    assert!(!engram_core::jobs::runs::swap_secret_rules(pool, &current).await.unwrap(), "recorded at start");
    assert!(engram_core::jobs::runs::swap_secret_rules(pool, "other rules").await.unwrap());
}
