//! The admin routes of the worker: triggers run by the executor loop, overlapping
//! scopes, scopes and input checks, and pauses that outlive a restart.

use std::time::Duration;

use engram_base::configuration::Role;
use engram_core::jobs::{Scope, Trigger, runs};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{TestApp, error_of, spawn_app, spawn_app_with, test_settings};
use crate::jobs::{EVICT, job_dir, old_memory, status_of};

async fn spawn_worker(dir: &tempfile::TempDir) -> TestApp {
    let mut settings = test_settings();
    settings.server.role = Role::All;
    settings.jobs.dir = dir.path().to_owned();
    settings.jobs.poll_ms = 50;
    spawn_app_with(settings).await
}

async fn wait_for_run(app: &TestApp, key: &str, run_id: &str) -> Value {
    for _ in 0..200 {
        let run: Value = app.get_as(key, &format!("/admin/v1/jobs/runs/{run_id}")).await.json().await.unwrap();
        if !matches!(run["status"].as_str(), Some("queued" | "running")) {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {run_id} did not finish");
}

#[tokio::test]
async fn an_admin_trigger_is_run_by_the_worker_and_counted_in_metrics() {
    let dir = job_dir(&[("evict", EVICT)]);
    let app = spawn_worker(&dir).await;
    let key = app.key("acme", "admin").await;
    let stale = old_memory(&app.db, "acme", "ann", "project", 400, false).await;

    let queued = app.post_as(&key, "/admin/v1/jobs/evict/runs", &json!({"user_id": "ann"})).await;
    assert_eq!(queued.status(), 202);
    let run_id = queued.json::<Value>().await.unwrap()["run_id"].as_str().unwrap().to_owned();
    let run = wait_for_run(&app, &key, &run_id).await;

    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(
        (run["trigger"].as_str(), run["tenant_id"].as_str(), run["user_id"].as_str()),
        (Some("admin"), Some("acme"), Some("ann"))
    );
    assert_eq!(run["counts"]["evicted"], 1);
    assert_eq!(status_of(&app.db, stale).await, "evicted");
    let metrics = app.metrics().await;
    assert!(metrics.contains("engram_job_runs_total{job_name=\"evict\",status=\"succeeded\"} 1"), "{metrics}");
    assert!(metrics.contains("engram_job_items_total{action=\"evicted\",job_name=\"evict\"} 1"), "{metrics}");
    assert!(metrics.contains("engram_job_last_success_timestamp_seconds{job_name=\"evict\"}"));
    let jobs: Value = app.get_as(&key, "/admin/v1/jobs").await.json().await.unwrap();
    assert_eq!(jobs["jobs"][0]["name"], "evict");
    assert_eq!(jobs["jobs"][0]["last_run"]["id"], run_id.as_str());
    assert!(jobs["jobs"][0]["next_run_at"].as_str().unwrap().ends_with("03:00:00Z"));
}

#[tokio::test]
async fn overlapping_triggers_get_409_and_disjoint_ones_queue() {
    // The API role runs no jobs, so triggered runs stay queued.
    let app = spawn_app().await;
    let acme = app.key("acme", "admin").await;
    let globex = app.key("globex", "admin").await;

    let first = app.post_as(&acme, "/admin/v1/jobs/evict/runs", &json!({})).await;
    let same_tenant_user = app.post_as(&acme, "/admin/v1/jobs/evict/runs", &json!({"user_id": "ann"})).await;
    let other_job = app.post_as(&acme, "/admin/v1/jobs/purge/runs", &json!({"dry_run": true})).await;
    let other_tenant = app.post_as(&globex, "/admin/v1/jobs/evict/runs", &json!({"user_id": "ann"})).await;

    assert_eq!(first.status(), 202);
    assert_eq!(same_tenant_user.status(), 409);
    assert!(error_of(same_tenant_user).await["message"].as_str().unwrap().contains("overlapping scope"));
    assert_eq!(other_job.status(), 202);
    assert_eq!(other_tenant.status(), 202);
    let run_id = first.json::<Value>().await.unwrap()["run_id"].as_str().unwrap().to_owned();
    let run: Value = app.get_as(&acme, &format!("/admin/v1/jobs/runs/{run_id}")).await.json().await.unwrap();
    assert_eq!((run["status"].as_str(), run["tenant_id"].as_str()), (Some("queued"), Some("acme")));

    // A job's runs, newest first, a page at a time, each tenant its own.
    let evicts: Value = app.get_as(&acme, "/admin/v1/jobs/evict/runs").await.json().await.unwrap();
    assert_eq!(evicts["runs"].as_array().unwrap().len(), 1);
    assert_eq!(evicts["runs"][0]["id"], run_id.as_str());
    let theirs: Value = app.get_as(&globex, "/admin/v1/jobs/evict/runs?limit=1").await.json().await.unwrap();
    assert_eq!(theirs["runs"][0]["tenant_id"], "globex");
    let after = theirs["next_cursor"].as_str().unwrap();
    let rest: Value =
        app.get_as(&globex, &format!("/admin/v1/jobs/evict/runs?limit=1&cursor={after}")).await.json().await.unwrap();
    assert_eq!(rest["runs"], json!([]));
    assert_eq!(app.get_as(&acme, "/admin/v1/jobs/nightly/runs").await.status(), 404);
    let bad = app.get_as(&acme, "/admin/v1/jobs/evict/runs?limit=0").await;
    assert_eq!(error_of(bad).await["field"], "limit");
}

#[tokio::test]
async fn admin_job_routes_check_scope_and_input() {
    let app = spawn_app().await;
    let reader = app.key("acme", "read,ingest").await;
    let admin = app.key("acme", "admin").await;
    let run_id = Uuid::now_v7();

    for (method, path) in [
        ("GET", "/admin/v1/jobs".to_owned()),
        ("POST", "/admin/v1/jobs/evict/runs".into()),
        ("GET", format!("/admin/v1/jobs/runs/{run_id}")),
        ("POST", "/admin/v1/jobs/evict/pause".into()),
        ("POST", "/admin/v1/jobs/evict/resume".into()),
    ] {
        let request = match method {
            "GET" => app.client.get(format!("{}{path}", app.address)),
            _ => app.client.post(format!("{}{path}", app.address)).json(&json!({})),
        };
        assert_eq!(request.try_clone().unwrap().send().await.unwrap().status(), 401, "{path}");
        assert_eq!(request.bearer_auth(&reader).send().await.unwrap().status(), 403, "{path}");
    }

    assert_eq!(app.post_as(&admin, "/admin/v1/jobs/nightly/runs", &json!({})).await.status(), 404);
    assert_eq!(app.get_as(&admin, &format!("/admin/v1/jobs/runs/{run_id}")).await.status(), 404);
    let bad_id = app.get_as(&admin, "/admin/v1/jobs/runs/not-a-uuid").await;
    assert_eq!(error_of(bad_id).await["field"], "run_id");
    let foreign = app.post_as(&admin, "/admin/v1/jobs/evict/runs", &json!({"tenant": "globex"})).await;
    assert_eq!(foreign.status(), 403, "another tenant's runs need the operator scope");
    let typo = app.post_as(&admin, "/admin/v1/jobs/evict/runs", &json!({"dryrun": true})).await;
    assert_eq!(typo.status(), 400);
    let bad_user = app.post_as(&admin, "/admin/v1/jobs/evict/runs", &json!({"user_id": ""})).await;
    assert_eq!(error_of(bad_user).await["field"], "user_id");
    let empty =
        app.client.post(format!("{}/admin/v1/jobs/evict/runs", app.address)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(empty.status(), 202, "an empty body means the whole tenant");
}

#[tokio::test]
async fn a_pause_survives_a_restart_and_stops_scheduled_runs_only() {
    let app = spawn_app().await;
    let admin = app.key("acme", "admin").await;
    let operator = app.key("ops", "operator").await;

    assert_eq!(
        app.post_as(&admin, "/admin/v1/jobs/evict/pause", &json!({})).await.status(),
        403,
        "a tenant's admin cannot stop everyone's schedule"
    );
    let paused = app.post_as(&operator, "/admin/v1/jobs/evict/pause", &json!({})).await;
    assert_eq!(paused.status(), 200);
    let restarted = engram_server::startup::Application::build(test_settings(), app.db.clone()).await.unwrap();
    let address = format!("http://127.0.0.1:{}", restarted.port());
    tokio::spawn(restarted.run_until_stopped());

    let jobs: Value = app
        .client
        .get(format!("{address}/admin/v1/jobs"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let evict = jobs["jobs"].as_array().unwrap().iter().find(|j| j["name"] == "evict").unwrap().clone();
    assert_eq!((evict["paused"].as_bool(), evict["next_run_at"].is_null()), (Some(true), true));
    let tick = runs::NewRun {
        job: "evict",
        scope: &Scope::all(),
        trigger: Trigger::Schedule,
        dry_run: false,
        as_of: None,
        tick_at: Some(chrono::Utc::now()),
    };
    assert_eq!(runs::enqueue(&app.db.pool, tick.clone()).await.unwrap(), runs::Enqueued::Paused);
    let manual = app.post_as(&admin, "/admin/v1/jobs/evict/runs", &json!({})).await;
    assert_eq!(manual.status(), 202, "operators can still run a paused job by hand");

    assert_eq!(app.post_as(&operator, "/admin/v1/jobs/evict/resume", &json!({})).await.status(), 200);
    sqlx::query("UPDATE job_runs SET status = 'succeeded'").execute(&app.db.pool).await.unwrap();
    assert!(matches!(runs::enqueue(&app.db.pool, tick).await.unwrap(), runs::Enqueued::Queued(_)));
}
