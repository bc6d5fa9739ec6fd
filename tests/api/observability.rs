//! The dashboards and alerts against a real Prometheus: it scrapes an engram serving a
//! scripted workload, then every expression is evaluated by Prometheus itself.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app_with, test_settings};

const DASHBOARD: &str = "dashboards/engram.json";
const ALERTS: &str = "dashboards/alerts.yml";

struct Prometheus {
    child: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// A Prometheus on loopback scraping `target` every second, with engram's alert rules.
    fn start(target: &str) -> Self {
        let rules = std::fs::canonicalize(ALERTS).unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: engram\n    static_configs:\n      - targets: ['{target}']\n",
            rules.display()
        );
        Self::start_with(&config)
    }

    /// A Prometheus on loopback with `config` as its prometheus.yml.
    fn start_with(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("prometheus is installed by scripts/test");
        Self { child, url: format!("http://127.0.0.1:{port}"), _dir: dir }
    }

    /// Evaluates `expr` now; the `data.result` of a successful query.
    async fn query(&self, expr: &str) -> Result<Vec<Value>, String> {
        let response = crate::helpers::http_client()
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", expr)])
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        if body["status"] != "success" {
            return Err(format!("{expr}: {}", body["error"]));
        }
        Ok(body["data"]["result"].as_array().cloned().unwrap_or_default())
    }

    async fn scalar(&self, expr: &str) -> f64 {
        let result = self.query(expr).await.unwrap();
        assert_eq!(result.len(), 1, "{expr}: {result:?}");
        result[0]["value"][1].as_str().unwrap().parse().unwrap()
    }

    /// Waits until Prometheus has scraped `samples` more times since `since` scrapes.
    async fn wait_for_scrapes(&self, samples: usize) {
        for _ in 0..200 {
            if let Ok(result) = self.query("count_over_time(up{job=\"engram\"}[5m])").await
                && result
                    .first()
                    .and_then(|r| r["value"][1].as_str()?.parse::<usize>().ok())
                    .is_some_and(|n| n >= samples)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("Prometheus did not scrape engram");
    }
}

/// Every PromQL expression of the dashboard, with its template variables filled in.
fn dashboard_expressions() -> Vec<(String, String)> {
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(DASHBOARD).unwrap()).unwrap();
    let mut found = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$instance", ".*")
                .replace("$job", ".*")
                .replace("$__rate_interval", "1m");
            found.push((panel["title"].as_str().unwrap().to_owned(), expr));
        }
    }
    found
}

/// Every alert rule's name and expression (the file is simple YAML: `alert:` then `expr:`).
fn alert_expressions() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(ALERTS).unwrap();
    let mut found = Vec::new();
    let mut name = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(alert) = line.strip_prefix("- alert: ") {
            name = alert.to_owned();
        } else if let Some(expr) = line.strip_prefix("expr: ") {
            found.push((name.clone(), expr.to_owned()));
        }
    }
    found
}

/// The measured part of an alert expression: everything before its first top-level
/// comparison, which returns data whether or not the alert fires; for `absent(x)`, `x`.
fn measure(expr: &str) -> &str {
    if let Some(inner) = expr.strip_prefix("absent(").and_then(|rest| rest.strip_suffix(')')) {
        return inner;
    }
    let mut depth = 0i32;
    let mut quoted = false;
    let bytes = expr.as_bytes();
    for (i, c) in expr.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' | '{' | '[' if !quoted => depth += 1,
            ')' | '}' | ']' if !quoted => depth -= 1,
            ' ' if !quoted && depth == 0 => {
                for op in ["> ", "< ", ">= ", "<= ", "== ", "!= "] {
                    if expr[i + 1..].starts_with(op) && bytes.get(i + 1 + op.len()).is_some() {
                        return expr[..i].trim();
                    }
                }
            }
            _ => {}
        }
    }
    expr
}

async fn workload(app: &TestApp) {
    let key = app.key("acme", "read,ingest,admin").await;
    let served =
        app.remember("acme", "ann", "technical", "Our team uses the PostgreSQL database for every service").await;
    app.remember("acme", "ann", "preference", "Ann prefers tea over coffee").await;
    for query in ["which database do we use", "what does Ann like to drink", "postgres version"] {
        let found = app.search(&key, &json!({"user_id": "ann", "query": query})).await;
        assert_eq!(found["hit"], true, "{query}: {found}");
    }
    let missed = app.search(&key, &json!({"user_id": "nobody", "query": "which database do we use"})).await;
    assert_eq!(missed["hit"], false);
    let invalid = app.post_as(&key, "/v1/search", &json!({"user_id": "ann", "query": ""})).await;
    assert_eq!(invalid.status(), 400, "a client mistake, for the HTTP errors panel");
    let feedback =
        app.post_as(&key, "/v1/feedback", &json!({"user_id": "ann", "memory_id": served, "kind": "wrong"})).await;
    assert_eq!(feedback.status(), 201);
    let run = app.post_as(&key, "/admin/v1/jobs/evict/runs", &json!({"dry_run": false})).await;
    let run_id = run.json::<Value>().await.unwrap()["run_id"].as_str().unwrap().to_owned();
    for _ in 0..200 {
        let state: Value = app.get_as(&key, &format!("/admin/v1/jobs/runs/{run_id}")).await.json().await.unwrap();
        if state["status"] == "succeeded" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the evict run did not finish");
}

#[tokio::test]
async fn dashboards_and_alerts_evaluate_against_a_real_prometheus_scraping_a_workload() {
    let check = std::process::Command::new("promtool")
        .args(["check", "rules", ALERTS])
        .output()
        .expect("promtool is installed");
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));

    let mut settings = test_settings();
    settings.server.role = engram_base::configuration::Role::All;
    settings.jobs.poll_ms = 50;
    settings.jobs.gauge_refresh_secs = 1;
    settings.llm.provider = engram_base::configuration::LlmProvider::Openai;
    settings.llm.base_url =
        Some(std::env::var("ENGRAM_TEST_LLM_URL").expect("ENGRAM_TEST_LLM_URL is set by scripts/test"));
    settings.llm.model = Some("smollm2".into());
    settings.llm.api_key = Some("unused".into());
    let app = spawn_app_with(settings).await;
    let prometheus = Prometheus::start(app.address.trim_start_matches("http://"));
    prometheus.wait_for_scrapes(2).await;

    workload(&app).await;
    prometheus.wait_for_scrapes(6).await;

    for (title, expr) in dashboard_expressions() {
        let result = prometheus.query(&expr).await.unwrap_or_else(|e| panic!("panel {title}: {e}"));
        assert!(!result.is_empty(), "panel {title} has no data: {expr}");
    }
    for (alert, expr) in alert_expressions() {
        prometheus.query(&expr).await.unwrap_or_else(|e| panic!("alert {alert}: {e}"));
        let result = prometheus.query(measure(&expr)).await.unwrap();
        assert!(!result.is_empty(), "alert {alert} measures nothing: {}", measure(&expr));
    }
    let panels = dashboard_expressions();
    let expr_of = |title: &str| panels.iter().find(|(t, _)| t == title).unwrap().1.clone();
    let hit_rate = prometheus.scalar(&expr_of("Hit rate")).await;
    let correction_rate = prometheus.scalar(&expr_of("Correction rate")).await;
    assert!((hit_rate - 0.75).abs() < 1e-6, "3 hits of 4 lookups: {hit_rate}");
    assert!((correction_rate - 1.0 / 3.0).abs() < 1e-6, "1 correction per 3 hits: {correction_rate}");
}

#[test]
fn every_metric_the_dashboards_use_is_one_engram_exports() {
    let exported: BTreeSet<String> = engram_base::metrics::Metrics::new().names().into_iter().collect();

    let name = regex::Regex::new(r"engram_[a-z_]+").unwrap();
    let mut used = BTreeSet::new();
    for file in [DASHBOARD, ALERTS, "dashboards/README.md"] {
        for found in name.find_iter(&std::fs::read_to_string(file).unwrap()) {
            let metric = found.as_str();
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| metric.strip_suffix(s))
                .filter(|b| exported.contains(*b));
            used.insert(base.unwrap_or(metric).to_owned());
        }
    }
    let unknown: Vec<_> = used.difference(&exported).collect();
    assert!(unknown.is_empty(), "dashboards use metrics engram does not export: {unknown:?}");
    assert!(used.len() >= 14, "{used:?}");
}

/// The job files the repository ships, by name.
fn shipped_jobs() -> BTreeSet<String> {
    std::fs::read_dir("jobs")
        .unwrap()
        .filter_map(|entry| entry.unwrap().file_name().to_str()?.strip_suffix(".toml").map(str::to_owned))
        .collect()
}

/// An engram process of `role` on `db`, with the repository's job files.
async fn serve(db: &engram_base::db::Database, role: engram_base::configuration::Role) -> String {
    let mut settings = test_settings();
    settings.server.role = role;
    settings.jobs.gauge_refresh_secs = 1;
    let app = engram_server::startup::Application::build(settings, db.clone()).await.unwrap();
    let address = format!("127.0.0.1:{}", app.port());
    tokio::spawn(app.run_until_stopped());
    address
}

/// The values of `label` over the series `expr` returns.
fn labels(result: &[Value], label: &str) -> Vec<String> {
    result.iter().filter_map(|r| r["metric"][label].as_str().map(str::to_owned)).collect()
}

#[tokio::test]
async fn the_shipped_scrape_config_keeps_one_series_per_engram_job() {
    let (db, _) = crate::helpers::fresh_database().await;
    let api = serve(&db, engram_base::configuration::Role::Api).await;
    let worker = serve(&db, engram_base::configuration::Role::Worker).await;
    let config = std::fs::read_to_string("dashboards/prometheus.yml")
        .unwrap()
        .replace("127.0.0.1:8080", &api)
        .replace("127.0.0.1:9091", &worker)
        .replace("scrape_interval: 15s", "scrape_interval: 1s")
        .replace("evaluation_interval: 15s", "evaluation_interval: 1s")
        .replace("  - alerts.yml", &format!("  - {}", std::fs::canonicalize(ALERTS).unwrap().display()));
    let prometheus = Prometheus::start_with(&config);
    for _ in 0..300 {
        let up = prometheus.query("up == 1").await.unwrap_or_default();
        if labels(&up, "job").len() == 2
            && !prometheus.query("engram_job_interval_seconds").await.unwrap_or_default().is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let jobs = shipped_jobs();
    assert!(jobs.len() >= 8, "{jobs:?}");

    for metric in ["engram_job_interval_seconds", "engram_job_last_success_timestamp_seconds"] {
        let series = prometheus.query(metric).await.unwrap();
        let named: BTreeSet<String> = labels(&series, "job_name").into_iter().collect();
        assert_eq!(named, jobs, "{metric}: one series per job file, named by job_name");
        assert_eq!(series.len(), jobs.len(), "{metric}: {series:?}");
        assert!(labels(&series, "exported_job").is_empty(), "no label was renamed by the scrape");
        assert_eq!(
            labels(&series, "job").into_iter().collect::<BTreeSet<_>>(),
            BTreeSet::from(["engram-worker".to_owned()])
        );
    }
    for panel in ["Time since last success", "Schedule interval"] {
        let (_, expr) = dashboard_expressions().into_iter().find(|(title, _)| title == panel).unwrap();
        let lines = prometheus.query(&expr).await.unwrap();
        assert_eq!(
            labels(&lines, "job_name").into_iter().collect::<BTreeSet<_>>(),
            jobs,
            "panel {panel}: one line per engram job"
        );
    }
    let runs = prometheus.query("engram_job_runs_total").await.unwrap();
    assert_eq!(labels(&runs, "job_name").into_iter().collect::<BTreeSet<_>>(), jobs);
    let (_, absent) = alert_expressions().into_iter().find(|(alert, _)| alert == "EngramWorkerAbsent").unwrap();
    assert_eq!(
        prometheus.query(&absent).await.unwrap(),
        Vec::<Value>::new(),
        "a worker is scraped, so {absent} is empty"
    );
}

#[test]
fn the_overdue_and_absent_worker_alerts_fire_for_exactly_what_is_wrong() {
    let out = std::process::Command::new("promtool")
        .args(["test", "rules", "dashboards/alerts_test.yml"])
        .output()
        .expect("promtool is installed");

    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

#[tokio::test]
async fn a_never_succeeded_job_counts_as_overdue_from_its_first_schedule_not_the_last_restart() {
    let (db, _) = crate::helpers::fresh_database().await;
    let first = serve(&db, engram_base::configuration::Role::Worker).await;
    let since = |address: String| async move {
        let text = crate::helpers::http_client()
            .get(format!("http://{address}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("engram_job_last_success_timestamp_seconds{job_name=\"reflect\"} "))
            .map(|v| v.parse::<f64>().unwrap())
            .expect("the gauge is exported")
    };
    let at_first_start = since(first).await;
    tokio::time::sleep(Duration::from_millis(2100)).await;

    let restarted = serve(&db, engram_base::configuration::Role::Worker).await;

    assert_eq!(since(restarted).await, at_first_start, "the restart did not reset the clock");
}
