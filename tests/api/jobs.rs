//! The worker: job files, runs and their records, budgets, concurrency, purge, restore.
//! Runs are started by calling the run function directly; the admin routes are tested
//! in `admin_jobs.rs`, real `engram` processes in `processes.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use engram_base::db::Database;
use engram_core::jobs::{Definition, Executor, Run, Scope, Trigger, control, definition};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{error_of, fresh_database, spawn_app, test_settings};

pub const EVICT: &str = r#"
schedule = "0 0 3 * * *"
[budget]
max_removed_fraction = 1.0
[params]
min_score = 0.02
max_per_user = 100
"#;

/// A folder of job files.
pub fn job_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(format!("{name}.toml")), text).unwrap();
    }
    dir
}

pub fn executor(db: &Database, dir: &tempfile::TempDir) -> Executor {
    executor_with(db, dir, None)
}

/// An executor whose jobs take their LLM paths with `llm`.
pub fn executor_with(db: &Database, dir: &tempfile::TempDir, llm: Option<Arc<engram_base::models::Llm>>) -> Executor {
    let jobs: BTreeMap<String, Definition> = definition::load_dir(dir.path()).unwrap();
    Executor {
        pool: db.pool.clone(),
        jobs: Arc::new(jobs),
        metrics: Default::default(),
        models: engram_core::jobs::Models {
            embedder: Arc::new(
                engram_base::models::Embedder::from_settings(
                    &Default::default(),
                    std::path::Path::new(".engram"),
                    &Default::default(),
                    Default::default(),
                )
                .expect("the local model is installed"),
            ),
            llm,
            prompts: Arc::new(engram_base::models::Prompts::load_dir(std::path::Path::new("jobs/prompts")).unwrap()),
            graph: Arc::new(
                engram_core::graph::Graph::default().with_segmenter(std::path::Path::new(".engram/models")),
            ),
            secret_kinds: Arc::new(engram_base::configuration::IngestSettings::default().redact),
        },
        settings: Default::default(),
        worker_id: "test".into(),
        shutdown: tokio::sync::watch::channel(false).1,
    }
}

/// One run of `job` over `scope`, start to finish, through the code path of the CLI.
pub async fn run(executor: &Executor, job: &str, scope: Scope, dry_run: bool) -> Run {
    let id = control::trigger(&executor.pool, &executor.jobs, job, &scope, Trigger::Cli, dry_run, None).await.unwrap();
    executor.run_now(job, id, Duration::from_secs(10)).await.unwrap()
}

/// A memory `days_old` days old that nobody has looked at since.
pub async fn old_memory(db: &Database, tenant: &str, user: &str, category: &str, days_old: i64, pinned: bool) -> Uuid {
    let id = Uuid::now_v7();
    sqlx::query("INSERT INTO tenants (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING")
        .bind(tenant)
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO memories (tenant_id, id, user_id, kind, category, content, importance, pinned, created_at, updated_at, valid_from)
         VALUES ($1, $2, $3, 'fact', $4, 'memory ' || $2::text, 0.5, $5, now() - make_interval(days => $6), now() - make_interval(days => $6), now() - make_interval(days => $6))",
    )
    .bind(tenant)
    .bind(id)
    .bind(user)
    .bind(category)
    .bind(pinned)
    .bind(days_old as i32)
    .execute(&db.pool)
    .await
    .unwrap();
    id
}

pub async fn status_of(db: &Database, id: Uuid) -> String {
    sqlx::query_scalar("SELECT status FROM memories WHERE id = $1").bind(id).fetch_one(&db.pool).await.unwrap()
}

/// Every row of the tables a job may touch, as one text, to compare before and after.
async fn snapshot(db: &Database) -> String {
    sqlx::query_scalar(
        "SELECT concat_ws('|',
            (SELECT string_agg(m::text, ',' ORDER BY id) FROM memories m),
            (SELECT string_agg(h::text, ',' ORDER BY id) FROM memory_history h),
            (SELECT string_agg(k::text, ',' ORDER BY tenant_id, user_id, job) FROM job_checkpoints k),
            (SELECT string_agg(e::text, ',' ORDER BY id) FROM events e))",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn evict_removes_stale_memories_but_keeps_pinned_identity_and_recent_ones() {
    let (db, _) = fresh_database().await;
    let dir = job_dir(&[("evict", EVICT)]);
    let stale = old_memory(&db, "acme", "ann", "project", 400, false).await;
    let pinned = old_memory(&db, "acme", "ann", "project", 400, true).await;
    let identity = old_memory(&db, "acme", "ann", "identity", 400, false).await;
    let recent = old_memory(&db, "acme", "ann", "project", 2, false).await;

    let done = run(&executor(&db, &dir), "evict", Scope::all(), false).await;

    assert_eq!(done.status, "succeeded");
    assert_eq!(done.counts["evicted"], 1);
    assert_eq!(status_of(&db, stale).await, "evicted");
    for kept in [pinned, identity, recent] {
        assert_eq!(status_of(&db, kept).await, "active");
    }
    let history: Vec<(String, Option<Uuid>, String)> =
        sqlx::query_as("SELECT action, job_run_id, reason FROM memory_history WHERE memory_id = $1")
            .bind(stale)
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!((history[0].0.as_str(), history[0].1), ("evicted", Some(done.id)));
    assert!(history[0].2.contains("below min_score"), "{}", history[0].2);
}

#[tokio::test]
async fn evict_keeps_the_best_memories_up_to_the_cap_and_within_the_removal_fraction() {
    let (db, _) = fresh_database().await;
    let capped = EVICT
        .replace("max_removed_fraction = 1.0", "max_removed_fraction = 0.3")
        .replace("max_per_user = 100", "max_per_user = 4");
    let dir = job_dir(&[("evict", &capped)]);
    for age in 10..20 {
        old_memory(&db, "acme", "bo", "technical", age, false).await;
    }

    let done = run(&executor(&db, &dir), "evict", Scope::all(), false).await;

    // Six are over the cap of four, but one run may remove only 30% of ten.
    assert_eq!(done.counts["evicted"], 3);
    assert_eq!(done.counts["evicted_over_cap"], 3);
    assert_eq!(done.counts["kept_by_removal_cap"], 3);
    let oldest_evicted: bool = sqlx::query_scalar(
        "SELECT bool_and(status = 'evicted') FROM (SELECT status FROM memories ORDER BY created_at LIMIT 3) oldest",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert!(oldest_evicted, "the lowest-scoring (oldest) memories go first");
}

#[tokio::test]
async fn a_dry_run_reports_the_changes_and_writes_nothing_but_its_run_record() {
    let (db, _) = fresh_database().await;
    let dir = job_dir(&[("evict", EVICT)]);
    for user in ["ann", "bo", "cy"] {
        old_memory(&db, "acme", user, "project", 400, false).await;
        old_memory(&db, "acme", user, "project", 1, false).await;
    }
    let before = snapshot(&db).await;

    let dry = run(&executor(&db, &dir), "evict", Scope::all(), true).await;

    assert_eq!(dry.status, "succeeded");
    assert!(dry.dry_run);
    assert_eq!(dry.counts["evicted"], 3);
    assert_eq!(snapshot(&db).await, before);
    let real = run(&executor(&db, &dir), "evict", Scope::all(), false).await;
    assert_eq!(real.counts["evicted"], 3, "the dry run did not use up the work");
}

#[tokio::test]
async fn a_failing_unit_is_recorded_and_backed_off_while_the_run_goes_on() {
    let (db, _) = fresh_database().await;
    let dir = job_dir(&[("evict", EVICT)]);
    let fine = old_memory(&db, "acme", "ann", "project", 400, false).await;
    old_memory(&db, "acme", "broken", "project", 400, false).await;
    sqlx::raw_sql(
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$;
         CREATE TRIGGER refuse BEFORE UPDATE ON memories FOR EACH ROW WHEN (OLD.user_id = 'broken') EXECUTE FUNCTION refuse();",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    let executor = executor(&db, &dir);

    let first = run(&executor, "evict", Scope::all(), false).await;

    assert_eq!(first.status, "succeeded");
    assert_eq!((first.counts["users"].as_i64(), first.counts["failed"].as_i64()), (Some(1), Some(1)));
    assert_eq!(status_of(&db, fine).await, "evicted");
    let (failures, waits): (i32, bool) = sqlx::query_as(
        "SELECT failures, retry_after > now() FROM job_checkpoints WHERE user_id = 'broken' AND job = 'evict'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((failures, waits), (1, true));
    let second = run(&executor, "evict", Scope::all(), false).await;
    assert_eq!(second.counts["deferred"], 1, "the failing user waits out its backoff: {}", second.counts);
    assert!(second.counts.get("failed").is_none());
}

#[tokio::test]
async fn a_user_budget_stops_the_run_cleanly_and_the_next_run_starts_with_the_others() {
    let (db, _) = fresh_database().await;
    let limited = EVICT.replace("[budget]", "[budget]\nmax_users = 2");
    let dir = job_dir(&[("evict", &limited)]);
    for user in ["u1", "u2", "u3", "u4", "u5"] {
        old_memory(&db, "acme", user, "project", 400, false).await;
    }
    let executor = executor(&db, &dir);

    let first = run(&executor, "evict", Scope::all(), false).await;
    let second = run(&executor, "evict", Scope::all(), false).await;
    let third = run(&executor, "evict", Scope::all(), false).await;

    assert_eq!(
        (first.status.as_str(), first.stop_reason.map(engram_core::jobs::runs::StopReason::as_str)),
        ("succeeded", Some("max_users"))
    );
    assert_eq!(first.counts["users"], 2);
    let evicted: i64 =
        sqlx::query_scalar("SELECT count(*) FROM memories WHERE status = 'evicted'").fetch_one(&db.pool).await.unwrap();
    assert_eq!((second.counts["evicted"].as_i64(), third.counts["evicted"].as_i64()), (Some(2), Some(1)));
    assert_eq!(evicted, 5, "three budget-limited runs reached every user");
}

#[tokio::test]
async fn concurrent_units_work_on_each_user_once_and_keep_the_user_budget() {
    let (db, _) = fresh_database().await;
    let parallel = EVICT.replace("[budget]", "concurrency = 3\n[budget]\nmax_users = 4");
    let dir = job_dir(&[("evict", &parallel)]);
    for n in 0..10 {
        for _ in 0..2 {
            old_memory(&db, "acme", &format!("u{n}"), "project", 400, false).await;
        }
    }
    let executor = executor(&db, &dir);

    let runs = [
        run(&executor, "evict", Scope::all(), false).await,
        run(&executor, "evict", Scope::all(), false).await,
        run(&executor, "evict", Scope::all(), false).await,
    ];

    let users: Vec<i64> = runs.iter().map(|r| r.counts["users"].as_i64().unwrap()).collect();
    assert_eq!(users, [4, 4, 2], "a budget of 4 users holds with 3 units in flight");
    let (evicted, histories): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'evicted'),
                (SELECT count(*) FROM memory_history WHERE action = 'evicted') FROM memories",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((evicted, histories), (20, 20), "every memory evicted once, with one history row");
}

#[tokio::test]
async fn purge_deletes_what_is_past_retention_and_keeps_the_rest() {
    let (db, _) = fresh_database().await;
    let dir = job_dir(&[
        ("evict", EVICT),
        ("purge", "schedule = \"0 0 4 * * *\"\n[params]\nremoved_retention_days = 30\njob_runs_retention_days = 10"),
    ]);
    let gone = old_memory(&db, "acme", "ann", "project", 400, false).await;
    let young = old_memory(&db, "acme", "ann", "project", 400, false).await;
    let active = old_memory(&db, "acme", "ann", "project", 400, false).await;
    sqlx::query("UPDATE memories SET status = 'evicted', updated_at = now() - make_interval(days => $2) WHERE id = $1")
        .bind(gone)
        .bind(40)
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE memories SET status = 'evicted', updated_at = now() - make_interval(days => $2) WHERE id = $1")
        .bind(young)
        .bind(5)
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO memory_history (tenant_id, id, memory_id, user_id, action, after) VALUES ('acme', $1, $2, 'ann', 'evicted', '{\"content\": \"secret\"}')")
        .bind(Uuid::now_v7()).bind(gone).execute(&db.pool).await.unwrap();
    sqlx::query("INSERT INTO job_runs (id, job, trigger, status, finished_at) VALUES ($1, 'evict', 'cli', 'succeeded', now() - interval '20 days')")
        .bind(Uuid::now_v7()).execute(&db.pool).await.unwrap();

    let done = run(&executor(&db, &dir), "purge", Scope::all(), false).await;

    assert_eq!(done.status, "succeeded");
    assert_eq!((done.counts["memories_deleted"].as_i64(), done.counts["history_deleted"].as_i64()), (Some(1), Some(1)));
    assert_eq!(done.counts["job_runs_deleted"], 1);
    let left: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM memories ORDER BY id").fetch_all(&db.pool).await.unwrap();
    assert_eq!(left, vec![young, active]);
    let history: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_history").fetch_one(&db.pool).await.unwrap();
    assert_eq!(history, 0);
}

#[tokio::test]
async fn bad_job_files_name_the_file_and_the_key() {
    let cases = [
        ("nightly", "schedule = \"0 0 3 * * *\"", "unknown job `nightly`"),
        ("evict", "schedule = \"0 3 * * *\"", "schedule: `0 3 * * *` is not a 6-field cron"),
        ("evict", "schedule = \"0 0 3 * * *\"\n[params]\nmin_scor = 0.1", "unknown field `min_scor`"),
        (
            "evict",
            "schedule = \"0 0 3 * * *\"\n[params]\nmin_score = \"low\"",
            "params.min_score: invalid type: string",
        ),
        ("evict", "schedule = \"0 0 3 * * *\"\ntimeout = \"soon\"", "timeout: `soon`"),
        (
            "extract_facts",
            "schedule = \"0 0 3 * * *\"\n[params]\ntriggers = [\"(unclosed\"]",
            "params.triggers: regex parse error",
        ),
        ("evict", "schedule = \"0 0 3 * * *\"\nenabeld = false", "unknown field `enabeld`"),
        ("purge", "schedule = \"0 0 3 * * *\"\n[budget]\nmax_removed_fraction = 2.0", "budget.max_removed_fraction"),
        ("dedup", "schedule = \"0 0 3 * * *\"\nconcurrency = 0", "concurrency: must be between 1 and 8"),
        (
            "index_large_users",
            "schedule = \"0 0 3 * * *\"\nconcurrency = 2",
            "concurrency: index_large_users works on one user at a time",
        ),
    ];
    for (name, text, expected) in cases {
        let dir = job_dir(&[(name, text)]);
        let message = format!("{:#}", definition::load_dir(dir.path()).unwrap_err());
        assert!(message.contains(&format!("{name}.toml")), "names the file: {message}");
        assert!(message.contains(expected), "expected `{expected}` in: {message}");
    }

    let (db, _) = fresh_database().await;
    let dir = job_dir(&[("evict", "schedule = \"every night\"")]);
    let mut settings = test_settings();
    settings.jobs.dir = dir.path().to_owned();
    let refused = engram_server::startup::Application::build(settings, db).await;
    assert!(format!("{:#}", refused.err().expect("startup refuses a bad job file")).contains("evict.toml: schedule"));
}

#[tokio::test]
async fn the_shipped_job_files_load() {
    let jobs = definition::load_dir(std::path::Path::new("jobs")).unwrap();
    assert!(jobs.contains_key("evict") && jobs.contains_key("purge"));
}

#[tokio::test]
async fn an_evicted_memory_can_be_restored_once_and_stays_through_the_next_evict() {
    let dir = job_dir(&[("evict", EVICT)]);
    let app = spawn_app().await;
    let admin = app.key("acme", "admin").await;
    let reader = app.key("acme", "read").await;
    let stale = old_memory(&app.db, "acme", "ann", "project", 400, false).await;
    let executor = executor(&app.db, &dir);
    run(&executor, "evict", Scope::all(), false).await;
    let path = format!("/admin/v1/users/ann/memories/{stale}/restore");

    assert_eq!(app.post_as(&reader, &path, &json!({})).await.status(), 403);
    let restored = app.post_as(&admin, &path, &json!({})).await;
    assert_eq!(restored.status(), 200);
    let body: Value = restored.json().await.unwrap();
    assert_eq!(body["memory"]["status"], "active");
    let actions: Vec<&str> =
        body["history"].as_array().unwrap().iter().map(|h| h["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["evicted", "restored"]);
    let again = app.post_as(&admin, &path, &json!({})).await;
    assert_eq!(again.status(), 409);
    assert_eq!(
        app.post_as(&admin, &format!("/admin/v1/users/bo/memories/{stale}/restore"), &json!({})).await.status(),
        404
    );
    let bad = app.post_as(&admin, "/admin/v1/users/ann/memories/nope/restore", &json!({})).await;
    assert_eq!(error_of(bad).await["field"], "memory_id");

    let next = run(&executor, "evict", Scope::all(), false).await;
    assert!(next.counts.get("evicted").is_none(), "restoring counts as an access: {}", next.counts);
    assert_eq!(status_of(&app.db, stale).await, "active");
}
