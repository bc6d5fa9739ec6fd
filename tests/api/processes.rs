//! Jobs run by real `engram` processes: the CLI, a run killed mid-way, and two worker
//! replicas sharing the schedule.

use std::time::Duration;

use engram_base::db::Database;
use engram_core::jobs::Scope;
use serde_json::Value;
use uuid::Uuid;

use crate::helpers::fresh_database;
use crate::jobs::{EVICT, executor, job_dir, old_memory, run};

/// The `engram` binary against `app`'s database and the job files in `dir`.
fn engram_command(database_url: &str, dir: &tempfile::TempDir, args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_engram"));
    command
        .args(args)
        .env("ENGRAM_DATABASE__URL", database_url)
        .env("ENGRAM_JOBS__DIR", dir.path())
        .env("ENGRAM_LOG__FILTER", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    command
}

#[tokio::test]
async fn the_cli_runs_a_job_and_prints_its_counts() {
    let (db, url) = fresh_database().await;
    let dir = job_dir(&[("evict", EVICT)]);
    old_memory(&db, "acme", "ann", "project", 400, false).await;

    let dry = engram_command(&url, &dir, &["job", "run", "evict", "--user", "ann", "--tenant", "acme", "--dry-run"])
        .output()
        .unwrap();
    let real = engram_command(&url, &dir, &["job", "run", "evict", "--json"]).output().unwrap();
    let list = engram_command(&url, &dir, &["job", "list"]).output().unwrap();
    let unknown = engram_command(&url, &dir, &["job", "run", "nightly"]).output().unwrap();
    let bad_time = engram_command(&url, &dir, &["job", "run", "evict", "--now", "yesterday"]).output().unwrap();

    let dry_text = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.status.success(), "{}", String::from_utf8_lossy(&dry.stderr));
    assert!(dry_text.contains("succeeded (dry run: nothing changed)") && dry_text.contains("evicted"), "{dry_text}");
    let run: Value = serde_json::from_slice(&real.stdout).unwrap();
    assert_eq!((run["trigger"].as_str(), run["counts"]["evicted"].as_i64()), (Some("cli"), Some(1)));
    let list_text = String::from_utf8_lossy(&list.stdout);
    assert!(list_text.contains("evict") && list_text.contains("succeeded"), "{list_text}");
    assert!(!unknown.status.success() && String::from_utf8_lossy(&unknown.stderr).contains("no job named `nightly`"));
    assert!(String::from_utf8_lossy(&bad_time.stderr).contains("--now"));
}

#[tokio::test]
async fn a_killed_run_is_abandoned_and_the_next_run_finishes_the_rest_without_duplicates() {
    let (db, url) = fresh_database().await;
    let dir = job_dir(&[("evict", EVICT)]);
    let users = 1500;
    sqlx::query(
        "INSERT INTO memories (tenant_id, id, user_id, kind, category, content, importance, created_at, updated_at, valid_from)
         SELECT 'acme', gen_random_uuid(), 'user' || g, 'fact', 'project', 'old memory', 0.5,
                now() - interval '400 days', now() - interval '400 days', now() - interval '400 days'
           FROM generate_series(1, $1) g",
    )
    .bind(users)
    .execute(&db.pool)
    .await
    .unwrap();

    let mut child = engram_command(&url, &dir, &["job", "run", "evict"]).spawn().unwrap();
    let mut done_before_kill = 0;
    for _ in 0..1000 {
        done_before_kill = count_evicted_history(&db).await;
        if done_before_kill >= 50 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(done_before_kill >= 50 && done_before_kill < users, "killed mid-way: {done_before_kill} units done");
    let killed: (Uuid, String) = sqlx::query_as("SELECT id, status FROM job_runs").fetch_one(&db.pool).await.unwrap();
    // PostgreSQL ends the dead client's sessions, and releases their locks, a moment later.
    for _ in 0..500 {
        let held: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = current_database()").fetch_one(&db.pool).await.unwrap();
        if held == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(killed.1, "running", "a killed worker cannot record its end");

    let next = run(&executor(&db, &dir), "evict", Scope::all(), false).await;

    let abandoned: String = sqlx::query_scalar("SELECT status FROM job_runs WHERE id = $1")
        .bind(killed.0)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(abandoned, "abandoned");
    assert_eq!(next.status, "succeeded");
    let finished_by_killed = count_evicted_history(&db).await - next.counts["evicted"].as_i64().unwrap();
    assert_eq!(next.counts["users"].as_i64().unwrap(), users - finished_by_killed, "finished units are not redone");
    let per_memory: (i64, i64) =
        sqlx::query_as("SELECT count(*), count(DISTINCT memory_id) FROM memory_history WHERE action = 'evicted'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(per_memory, (users, users), "every memory evicted exactly once, with one history row");
}

async fn count_evicted_history(db: &Database) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM memory_history WHERE action = 'evicted'")
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn two_worker_replicas_run_each_due_tick_once_and_never_overlap() {
    let (db, url) = fresh_database().await;
    let every_second = EVICT.replace("0 0 3 * * *", "* * * * * *");
    let dir = job_dir(&[("evict", &every_second)]);
    for user in 0..200 {
        old_memory(&db, "acme", &format!("u{user}"), "project", 400, false).await;
    }
    let worker = || {
        let mut command = engram_command(&url, &dir, &["serve", "--role", "worker", "--bind", "127.0.0.1:0"]);
        command.env("ENGRAM_JOBS__POLL_MS", "50");
        command.spawn().unwrap()
    };
    let (mut a, mut b) = (worker(), worker());
    tokio::time::sleep(Duration::from_secs(6)).await;
    for child in [&mut a, &mut b] {
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    }
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success() && b.status.success(), "{}", String::from_utf8_lossy(&a.stderr));

    type Time = Option<chrono::DateTime<chrono::Utc>>;
    let runs: Vec<(Time, String, Time, Time)> = sqlx::query_as(
        "SELECT tick_at, status, started_at, finished_at FROM job_runs WHERE trigger = 'schedule' ORDER BY tick_at",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert!(runs.len() >= 2, "ticks ran: {runs:?}");
    let ticks: std::collections::BTreeSet<_> = runs.iter().map(|r| r.0).collect();
    assert_eq!(ticks.len(), runs.len(), "one run per tick");
    let mut executed: Vec<_> = runs.iter().filter_map(|r| Some((r.2?, r.3?))).collect();
    executed.sort();
    for pair in executed.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "runs overlapped: {pair:?}");
    }
    let evicted: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_history").fetch_one(&db.pool).await.unwrap();
    assert_eq!(evicted, 200, "each memory evicted once across both replicas");
}
