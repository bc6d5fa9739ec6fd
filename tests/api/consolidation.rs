//! Consolidation without an LLM (the default): facts and knowledge updates from what
//! users say, summaries of ended sessions, sensitive data kept out, replayed over
//! simulated days with the jobs' clock.

use std::time::Duration;

use chrono::{DateTime, Utc};
use engram_core::jobs::{Executor, Run, Scope, Trigger, control};
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app};
use crate::jobs::{executor, job_dir};

pub const JOBS: &[(&str, &str)] = &[
    ("extract_facts", "schedule = \"0 0 * * * *\""),
    ("summarize_sessions", "schedule = \"0 0 * * * *\""),
    ("summarize_periods", "schedule = \"0 0 * * * *\""),
];

pub fn day(n: i64, hour: u32) -> DateTime<Utc> {
    "2026-03-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap()
        + chrono::Duration::days(n - 1)
        + chrono::Duration::hours(hour as i64)
}

/// Runs `job` over everyone as of `now`, the way `engram job run NAME --now` does.
pub async fn run_at(executor: &Executor, job: &str, now: DateTime<Utc>, dry_run: bool) -> Run {
    let id = control::trigger(&executor.pool, &executor.jobs, job, &Scope::all(), Trigger::Cli, dry_run, Some(now))
        .await
        .unwrap();
    let run = executor.run_now(job, id, Duration::from_secs(10)).await.unwrap();
    assert_eq!(run.status, "succeeded", "{run:?}");
    run
}

/// User messages in one session at `at`, a minute apart.
pub async fn say(app: &TestApp, key: &str, user: &str, session: &str, at: DateTime<Utc>, messages: &[&str]) {
    let events: Vec<Value> = messages
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let time = at + chrono::Duration::minutes(i as i64);
            json!({"user_id": user, "session_id": session, "role": "user", "content": text, "created_at": time.to_rfc3339()})
        })
        .collect();
    assert_eq!(app.post_events(key, &json!({"events": events})).await.status(), 202);
}

async fn active_contents(app: &TestApp, user: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT content FROM memories WHERE user_id = $1 AND status = 'active' ORDER BY created_at")
        .bind(user)
        .fetch_all(&app.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_user_introducing_themselves_over_three_days_is_remembered() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let dir = job_dir(JOBS);
    let executor = executor(&app.db, &dir);
    say(&app, &key, "ana", "d1", day(1, 9), &["Hi! My name is Ana Silva.", "I'm building a booking app for dentists."])
        .await;
    say(
        &app,
        &key,
        "ana",
        "d2",
        day(2, 9),
        &["We use React with Next.js on the frontend.", "Our database is PostgreSQL and we run on AWS."],
    )
    .await;
    say(&app, &key, "ana", "d3", day(3, 9), &["Our team has 4 engineers.", "thanks!"]).await;

    let run = run_at(&executor, "extract_facts", day(3, 12), false).await;

    let keyed: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT coalesce(key, ''), content, source_quote FROM memories WHERE user_id = 'ana' AND status = 'active' AND key IS NOT NULL ORDER BY key",
    )
    .fetch_all(&app.db.pool)
    .await
    .unwrap();
    let keys: Vec<&str> = keyed.iter().map(|(k, ..)| k.as_str()).collect();
    for expected in ["cloud", "database", "framework", "name", "project", "team_size"] {
        assert!(keys.contains(&expected), "{expected} missing from {keyed:?}");
    }
    assert!(
        keyed.iter().all(|(_, content, quote)| quote.as_deref() == Some(content.as_str())),
        "facts keep the user's words"
    );
    assert_eq!(run.counts["created"].as_i64().unwrap() as usize, active_contents(&app, "ana").await.len());
    let found = app.search(&key, &json!({"user_id": "ana", "query": "what database do we use"})).await;
    assert_eq!(found["results"][0]["content"], "Our database is PostgreSQL and we run on AWS.", "{found}");
    assert_eq!(found["results"][0]["source_event_ids"].as_array().unwrap().len(), 1);
}

async fn migration_is_a_knowledge_update(first: &str, second: &str, query: &str) {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let dir = job_dir(JOBS);
    let executor = executor(&app.db, &dir);
    say(&app, &key, "bo", "s1", day(1, 10), &[first]).await;
    run_at(&executor, "extract_facts", day(1, 12), false).await;
    say(&app, &key, "bo", "s5", day(5, 10), &[second]).await;

    let run = run_at(&executor, "extract_facts", day(5, 12), false).await;

    assert_eq!(run.counts["superseded"], 1, "{}", run.counts);
    let now = app.search(&key, &json!({"user_id": "bo", "query": query, "min_score": 0.0})).await;
    let contents: Vec<&str> =
        now["results"].as_array().unwrap().iter().map(|r| r["content"].as_str().unwrap()).collect();
    assert_eq!(contents, [second], "only the new value is current");
    let (status, valid_to): (String, Option<DateTime<Utc>>) =
        sqlx::query_as("SELECT status, valid_to FROM memories WHERE content = $1")
            .bind(first)
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    assert_eq!((status.as_str(), valid_to), ("superseded", Some(day(5, 10))));
    let then = app
        .search(&key, &json!({"user_id": "bo", "query": query, "min_score": 0.0, "as_of": day(3, 0).to_rfc3339()}))
        .await;
    assert_eq!(then["results"][0]["content"], first, "{then}");
}

#[tokio::test]
async fn a_migration_supersedes_the_old_database_and_as_of_still_finds_it() {
    migration_is_a_knowledge_update(
        "We use MySQL for all our services.",
        "We migrated to PostgreSQL last month.",
        "which database do we use",
    )
    .await;
}

#[tokio::test]
async fn a_migration_said_in_chinese_supersedes_the_old_database() {
    migration_is_a_knowledge_update(
        "我们用 MySQL 存储订单数据",
        "我们已经迁移到 PostgreSQL 了",
        "数据库 MySQL PostgreSQL",
    )
    .await;
}

#[tokio::test]
async fn phone_numbers_emails_and_keys_never_reach_memories_or_summaries() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let dir = job_dir(JOBS);
    let executor = executor(&app.db, &dir);
    say(
        &app,
        &key,
        "cy",
        "s1",
        day(1, 8),
        &[
            "My phone number is +1 415 555 0199 if you need it.",
            "My work email is cy.lee@example.com for the invoices.",
            "Use my API key sk-live1234567890abcdefXYZ for the staging deploys.",
            "We deploy our staging environment every Friday afternoon.",
        ],
    )
    .await;

    let facts = run_at(&executor, "extract_facts", day(1, 12), false).await;
    run_at(&executor, "summarize_sessions", day(1, 12), false).await;

    // The key was redacted at ingest; the phone number and the email, kept in the turns
    // by default, are dropped from facts.
    assert_eq!(facts.counts["sensitive_dropped"], 2);
    let stored: String = sqlx::query_scalar(
        "SELECT concat_ws(' ', (SELECT string_agg(content || ' ' || coalesce(source_quote, ''), ' ') FROM memories),
                               (SELECT string_agg(coalesce(summary, ''), ' ') FROM sessions))",
    )
    .fetch_one(&app.db.pool)
    .await
    .unwrap();
    assert!(stored.contains("staging environment every Friday"), "the harmless sentence is kept: {stored}");
    for secret in ["555", "0199", "example.com", "sk-live"] {
        assert!(!stored.contains(secret), "{secret} leaked into: {stored}");
    }
}

#[tokio::test]
async fn small_talk_extracts_nothing() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let dir = job_dir(JOBS);
    say(&app, &key, "dee", "s1", day(1, 8), &["thanks", "ok", "好的", "What time is it?", "Sounds good!"]).await;

    let run = run_at(&executor(&app.db, &dir), "extract_facts", day(1, 12), false).await;

    assert_eq!(run.counts["events_read"], 5);
    assert!(run.counts.get("created").is_none(), "{}", run.counts);
    assert!(active_contents(&app, "dee").await.is_empty());
}

#[tokio::test]
async fn ended_sessions_get_extractive_summaries_that_search_finds() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let dir = job_dir(JOBS);
    let executor = executor(&app.db, &dir);
    for n in 1..=20 {
        say(
            &app,
            &key,
            "eve",
            &format!("s{n}"),
            day(n * 3, 9),
            &[
                "hello",
                &format!("Today I worked on the invoice export for customer number {n}."),
                "The export now writes CSV files with one row per invoice line.",
                "thanks!",
            ],
        )
        .await;
    }
    // The last session is still going at the time of the run.
    say(&app, &key, "eve", "live", day(61, 11), &["I am still writing the quarterly report for the board."]).await;

    let dry = run_at(&executor, "summarize_sessions", day(61, 11) + chrono::Duration::minutes(5), true).await;
    let unsummarized: i64 = sqlx::query_scalar("SELECT count(*) FROM sessions WHERE summary IS NULL")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    let run = run_at(&executor, "summarize_sessions", day(61, 11) + chrono::Duration::minutes(5), false).await;
    let again = run_at(&executor, "summarize_sessions", day(61, 11) + chrono::Duration::minutes(5), false).await;

    assert_eq!((dry.counts["summarized"].as_i64(), unsummarized), (Some(20), 21), "the dry run wrote nothing");
    assert_eq!(run.counts["summarized"], 20);
    assert!(again.counts.get("summarized").is_none(), "a rerun changes nothing: {}", again.counts);
    let (summary, covered): (String, Vec<uuid::Uuid>) =
        sqlx::query_as("SELECT summary, summary_event_ids FROM sessions WHERE session_id = 's7'")
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    assert!(summary.contains("invoice export for customer number 7"), "{summary}");
    assert!(!summary.contains("thanks") && !summary.contains("hello"), "{summary}");
    assert_eq!(covered.len(), 4);
    let live: Option<String> = sqlx::query_scalar("SELECT summary FROM sessions WHERE session_id = 'live'")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert!(live.is_none(), "a session still going is not summarized");
    let found =
        app.search(&key, &json!({"user_id": "eve", "query": "invoice CSV export", "kinds": ["session_summary"]})).await;
    assert_eq!(found["results"][0]["kind"], "session_summary", "{found}");

    let periods = run_at(&executor, "summarize_periods", day(61, 12), false).await;
    let rerun = run_at(&executor, "summarize_periods", day(61, 12), false).await;

    let weeks: Vec<(Vec<String>, String)> =
        sqlx::query_as("SELECT session_ids, summary FROM period_summaries ORDER BY period_start")
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    assert!(weeks.len() >= 5, "{weeks:?}");
    assert!(weeks.iter().all(|(ids, summary)| ids.len() >= 2 && summary.contains("invoice")), "{weeks:?}");
    let archived: Vec<String> = sqlx::query_scalar("SELECT session_id FROM sessions WHERE archived_at IS NOT NULL")
        .fetch_all(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(archived.len() as i64, periods.counts["sessions_archived"].as_i64().unwrap());
    assert_eq!(archived.len(), weeks.iter().map(|(ids, _)| ids.len()).sum::<usize>());
    let recent_archived: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sessions WHERE archived_at IS NOT NULL AND last_event_at > $1")
            .bind(day(61, 12) - chrono::Duration::days(14))
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(recent_archived, 0, "sessions of the last two weeks stay");
    assert!(rerun.counts.get("periods_summarized").is_none(), "{}", rerun.counts);
    let found =
        app.search(&key, &json!({"user_id": "eve", "query": "invoice CSV export", "kinds": ["period_summary"]})).await;
    assert_eq!(found["results"][0]["kind"], "period_summary", "{found}");
}

#[tokio::test]
async fn a_user_correcting_a_served_memory_replaces_it_and_resolves_the_correction() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let dir = job_dir(JOBS);
    let executor = executor(&app.db, &dir);
    let event = |text: &str| json!({"user_id": "fay", "session_id": "s1", "role": "user", "content": text});
    app.post_events(&key, &event("We use Jenkins for CI.")).await;
    run_at(&executor, "extract_facts", Utc::now(), false).await;
    let served = app.search(&key, &json!({"user_id": "fay", "query": "which CI do we use"})).await;
    assert_eq!(served["results"][0]["content"], "We use Jenkins for CI.");
    app.access.flush(&app.db.pool).await.unwrap();

    app.post_events(&key, &event("That's wrong, we use GitHub Actions for CI.")).await;
    let run = run_at(&executor, "extract_facts", Utc::now(), false).await;

    assert_eq!(run.counts["superseded"], 1, "{}", run.counts);
    let current = app.search(&key, &json!({"user_id": "fay", "query": "which CI do we use", "min_score": 0.0})).await;
    let contents: Vec<&str> =
        current["results"].as_array().unwrap().iter().map(|r| r["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["That's wrong, we use GitHub Actions for CI."]);
    let (total, open): (i64, i64) =
        sqlx::query_as("SELECT count(*), count(*) FILTER (WHERE resolved_at IS NULL) FROM feedback")
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(total, 1, "the correction was detected");
    let reason: String = sqlx::query_scalar("SELECT reason FROM memory_history WHERE action = 'superseded'")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!((open, reason.as_str()), (0, "the user corrected it"));
}

#[tokio::test]
async fn lookups_read_the_injected_clock_so_replays_are_consistent() {
    let (db, _) = crate::helpers::fresh_database().await;
    let clock = engram_base::clock::Clock::fixed(day(10, 9));
    let app = engram_server::startup::Application::build_with_clock(
        crate::helpers::test_settings(),
        db.clone(),
        clock.clone(),
    )
    .await
    .unwrap();
    let address = format!("http://127.0.0.1:{}", app.port());
    let access = app.access();
    tokio::spawn(app.run_until_stopped());
    let scopes = [engram_base::auth::Scope::Read, engram_base::auth::Scope::Ingest];
    let new_key = engram_base::auth::NewKey::new(engram_base::domain::TenantId::parse("acme").unwrap(), &scopes);
    let key = engram_base::auth::create_key(&db.pool, &new_key).await.unwrap().secret;
    let client = crate::helpers::http_client();
    let event = json!({"user_id": "gil", "role": "user", "content": "We use Redis as a cache."});
    client.post(format!("{address}/v1/events")).bearer_auth(&key).json(&event).send().await.unwrap();
    let executor = executor(&engram_base::db::Database::from_pool(db.pool.clone()), &job_dir(JOBS));
    run_at(&executor, "extract_facts", day(10, 10), false).await;

    clock.set(day(12, 8));
    let found: Value = client
        .post(format!("{address}/v1/search"))
        .bearer_auth(&key)
        .json(&json!({"user_id": "gil", "query": "which cache do we use"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    access.flush(&db.pool).await.unwrap();

    assert_eq!(found["hit"], true, "{found}");
    let (received, accessed): (DateTime<Utc>, DateTime<Utc>) =
        sqlx::query_as("SELECT (SELECT created_at FROM events), (SELECT last_accessed_at FROM memory_access)")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!((received, accessed), (day(10, 9), day(12, 8)));
}
