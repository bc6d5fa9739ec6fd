//! Two levels of administration: a tenant's `admin` key reaches its own tenant's runs
//! only; schedules, runs over every tenant and system records need `operator`.

use engram_core::jobs::{Enqueued, NewRun, Scope, Trigger, runs};
use serde_json::{Value, json};

use crate::helpers::{TestApp, error_of, spawn_app};

/// A queued run of tenant A's, the API role running no jobs so it stays queued.
async fn run_of_tenant_a(app: &TestApp, a: &str) -> String {
    let queued = app.post_as(a, "/admin/v1/jobs/evict/runs", &json!({"user_id": "ann"})).await;
    assert_eq!(queued.status(), 202);
    queued.json::<Value>().await.unwrap()["run_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_tenants_admin_key_sees_and_touches_nothing_of_another_tenants_runs() {
    let app = spawn_app().await;
    let a = app.key("tenant-a", "admin").await;
    let b = app.key("tenant-b", "admin").await;
    let a_run = run_of_tenant_a(&app, &a).await;

    let read = app.get_as(&b, &format!("/admin/v1/jobs/runs/{a_run}")).await;
    assert_eq!(read.status(), 404);
    let own = app.get_as(&a, &format!("/admin/v1/jobs/runs/{a_run}")).await;
    assert_eq!(own.status(), 200);

    let listed = app.get_as(&b, "/admin/v1/jobs").await.text().await.unwrap();
    assert!(!listed.contains(&a_run) && !listed.contains("tenant-a"), "{listed}");
    let a_listed: Value = app.get_as(&a, "/admin/v1/jobs").await.json().await.unwrap();
    let evict = a_listed["jobs"].as_array().unwrap().iter().find(|j| j["name"] == "evict").unwrap();
    assert_eq!(evict["last_run"]["id"], a_run.as_str());

    let mut answers = Vec::new();
    for (path, body) in [
        ("/admin/v1/jobs/evict/pause", json!({})),
        ("/admin/v1/jobs/evict/resume", json!({})),
        ("/admin/v1/jobs/evict/runs", json!({"tenant": "tenant-a"})),
        ("/admin/v1/jobs/evict/runs", json!({"all_tenants": true})),
        ("/admin/v1/jobs/purge/runs", json!({"tenant": "tenant-a"})),
    ] {
        let response = app.post_as(&b, path, &body).await;
        assert_eq!(response.status(), 403, "{path} {body}");
        answers.push(error_of(response).await.to_string());
    }
    // B's own overlapping trigger conflicts with B's run only, and names only it.
    let b_run = app.post_as(&b, "/admin/v1/jobs/evict/runs", &json!({"user_id": "ann"})).await;
    assert_eq!(b_run.status(), 202);
    let conflict = app.post_as(&b, "/admin/v1/jobs/evict/runs", &json!({})).await;
    assert_eq!(conflict.status(), 409);
    answers.push(error_of(conflict).await.to_string());
    for answer in answers {
        assert!(!answer.contains(&a_run) && !answer.contains("tenant-a"), "{answer}");
    }
    let paused: Vec<String> = runs::paused(&app.db.pool).await.unwrap();
    assert!(paused.is_empty(), "B could not pause anyone's schedule");
}

#[tokio::test]
async fn an_operator_controls_schedules_and_runs_over_every_tenant() {
    let app = spawn_app().await;
    let a = app.key("tenant-a", "admin").await;
    let operator = app.key("ops", "operator").await;
    let a_run = run_of_tenant_a(&app, &a).await;

    let read: Value = app.get_as(&operator, &format!("/admin/v1/jobs/runs/{a_run}")).await.json().await.unwrap();
    assert_eq!(read["tenant_id"], "tenant-a");
    assert_eq!(app.post_as(&operator, "/admin/v1/jobs/evict/pause", &json!({})).await.status(), 200);
    assert_eq!(app.post_as(&operator, "/admin/v1/jobs/evict/resume", &json!({})).await.status(), 200);
    let all = app.post_as(&operator, "/admin/v1/jobs/evict/runs", &json!({"all_tenants": true, "dry_run": true})).await;
    assert_eq!(all.status(), 202, "a run over every tenant queues beside tenant A's");
    let run: Value = app
        .get_as(
            &operator,
            &format!("/admin/v1/jobs/runs/{}", all.json::<Value>().await.unwrap()["run_id"].as_str().unwrap()),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(run["tenant_id"].is_null());
    // A tenant's admin does not see runs over every tenant either.
    let hidden = app.get_as(&a, &format!("/admin/v1/jobs/runs/{}", run["id"].as_str().unwrap())).await;
    assert_eq!(hidden.status(), 404);
    // Operator-only routes refuse every other key before looking at the job.
    let reader = app.key("tenant-a", "read,ingest,admin").await;
    assert_eq!(app.post_as(&reader, "/admin/v1/jobs/nightly/pause", &json!({})).await.status(), 403);
}

#[tokio::test]
async fn a_tenant_keeping_a_run_queued_never_blocks_the_schedule() {
    let app = spawn_app().await;
    let b = app.key("tenant-b", "admin").await;
    let queued = app.post_as(&b, "/admin/v1/jobs/evict/runs", &json!({})).await;
    assert_eq!(queued.status(), 202);

    let tick = NewRun {
        job: "evict",
        scope: &Scope::all(),
        trigger: Trigger::Schedule,
        dry_run: false,
        as_of: None,
        tick_at: Some(chrono::Utc::now()),
    };
    let enqueued = runs::enqueue(&app.db.pool, tick).await.unwrap();

    assert!(matches!(enqueued, Enqueued::Queued(_)), "the tick was queued beside tenant B's run: {enqueued:?}");
}

#[tokio::test]
async fn a_tenants_purge_removes_only_its_own_old_run_records() {
    let dir = crate::jobs::job_dir(&[("purge", "schedule = \"0 0 4 * * *\"\n")]);
    let db = crate::helpers::fresh_database().await.0;
    for tenant in ["tenant-a", "tenant-b"] {
        sqlx::query(
            "INSERT INTO job_runs (id, tenant_id, job, trigger, status, created_at, finished_at)
             VALUES (gen_random_uuid(), $1, 'evict', 'admin', 'succeeded', now() - interval '200 days', now() - interval '200 days')",
        )
        .bind(tenant)
        .execute(&db.pool)
        .await
        .unwrap();
    }
    let executor = crate::jobs::executor(&db, &dir);
    let scope = Scope::tenant(engram_base::domain::TenantId::parse("tenant-b").unwrap());

    let done = crate::jobs::run(&executor, "purge", scope, false).await;

    assert_eq!(done.counts["job_runs_deleted"], 1);
    let left: Vec<String> =
        sqlx::query_scalar("SELECT tenant_id FROM job_runs WHERE job = 'evict'").fetch_all(&db.pool).await.unwrap();
    assert_eq!(left, vec!["tenant-a"]);
}

#[tokio::test]
async fn a_run_scoped_to_one_user_leaves_other_users_and_tenants_alone() {
    let (db, _) = crate::helpers::fresh_database().await;
    let dir = crate::jobs::job_dir(&[("evict", crate::jobs::EVICT)]);
    let ann = crate::jobs::old_memory(&db, "acme", "ann", "project", 400, false).await;
    let bo = crate::jobs::old_memory(&db, "acme", "bo", "project", 400, false).await;
    let other = crate::jobs::old_memory(&db, "globex", "ann", "project", 400, false).await;

    let scope = Scope::user(
        engram_base::domain::TenantId::parse("acme").unwrap(),
        engram_base::domain::UserId::parse("ann").unwrap(),
    );
    let done = crate::jobs::run(&crate::jobs::executor(&db, &dir), "evict", scope, false).await;

    assert_eq!(done.counts["users"], 1);
    assert_eq!(crate::jobs::status_of(&db, ann).await, "evicted");
    assert_eq!(crate::jobs::status_of(&db, bo).await, "active");
    assert_eq!(crate::jobs::status_of(&db, other).await, "active");
}
