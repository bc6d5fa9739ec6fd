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
        let dir = tempfile::tempdir().unwrap();
        let rules = std::fs::canonicalize(ALERTS).unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: engram\n    static_configs:\n      - targets: ['{target}']\n",
            rules.display()
        );
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
        let response = reqwest::Client::new()
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
            if let Ok(result) = self.query("count_over_time(up{job=\"engram\"}[5m])").await {
                if result.first().and_then(|r| r["value"][1].as_str()?.parse::<usize>().ok()).is_some_and(|n| n >= samples) {
                    return;
                }
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
            let expr = target["expr"].as_str().unwrap()
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
/// comparison, which returns data whether or not the alert fires.
fn measure(expr: &str) -> &str {
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
    let served = app.remember("acme", "ann", "technical", "Our team uses the PostgreSQL database for every service").await;
    app.remember("acme", "ann", "preference", "Ann prefers tea over coffee").await;
    for query in ["which database do we use", "what does Ann like to drink", "postgres version"] {
        let found = app.search(&key, &json!({"user_id": "ann", "query": query})).await;
        assert_eq!(found["hit"], true, "{query}: {found}");
    }
    let missed = app.search(&key, &json!({"user_id": "nobody", "query": "which database do we use"})).await;
    assert_eq!(missed["hit"], false);
    let invalid = app.post_as(&key, "/v1/search", &json!({"user_id": "ann", "query": ""})).await;
    assert_eq!(invalid.status(), 400, "a client mistake, for the HTTP errors panel");
    let feedback = app.post_as(&key, "/v1/feedback", &json!({"user_id": "ann", "memory_id": served, "kind": "wrong"})).await;
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
    let check = std::process::Command::new("promtool").args(["check", "rules", ALERTS]).output().expect("promtool is installed");
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));

    let mut settings = test_settings();
    settings.server.role = engram::configuration::Role::All;
    settings.jobs.poll_ms = 50;
    settings.jobs.gauge_refresh_secs = 1;
    settings.llm.provider = engram::configuration::LlmProvider::Openai;
    settings.llm.base_url = Some(std::env::var("ENGRAM_TEST_LLM_URL").expect("ENGRAM_TEST_LLM_URL is set by scripts/test"));
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
    let exported: BTreeSet<String> = engram::metrics::Metrics::new().names().into_iter().collect();

    let name = regex::Regex::new(r"engram_[a-z_]+").unwrap();
    let mut used = BTreeSet::new();
    for file in [DASHBOARD, ALERTS, "dashboards/README.md"] {
        for found in name.find_iter(&std::fs::read_to_string(file).unwrap()) {
            let metric = found.as_str();
            let base = ["_bucket", "_sum", "_count"].iter().find_map(|s| metric.strip_suffix(s)).filter(|b| exported.contains(*b));
            used.insert(base.unwrap_or(metric).to_owned());
        }
    }
    let unknown: Vec<_> = used.difference(&exported).collect();
    assert!(unknown.is_empty(), "dashboards use metrics engram does not export: {unknown:?}");
    assert!(used.len() >= 14, "{used:?}");
}
