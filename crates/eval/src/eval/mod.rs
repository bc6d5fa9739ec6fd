//! `engram eval`: memory quality, in the spirit of LoCoMo and LongMemEval. Timed
//! conversations are replayed through the real API and jobs, in a database of the
//! evaluation's own (`engram_eval`, recreated each run) with the clock set to each
//! simulated day; then questions are asked through `POST /v1/search` and scored.
//! Scenario files are described in `eval/README.md`; `--locomo FILE` reads LoCoMo.

mod diagnose;
mod features;
mod locomo;
mod scenario;
mod score;
mod transcript;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};

use engram_base::auth::{self, NewKey, Scope as KeyScope};
use engram_base::clock::Clock;
use engram_base::configuration::{LlmSettings, Role, Settings};
use engram_base::db::Database;
use engram_base::domain::TenantId;
use engram_base::metrics::Metrics;
use engram_core::access::AccessRecorder;
use engram_core::jobs::{Executor, Models, Scope, Trigger, control, definition};
use engram_server::startup::Application;

pub use scenario::Scenario;

/// The harness API's periodic flush of access statistics: a day, longer than any evaluation.
const ACCESS_FLUSH_NEVER_MS: u64 = 86_400_000;

/// The running service an evaluation talks to.
pub struct Harness {
    pub base: String,
    /// The tenant `key` belongs to.
    pub tenant: String,
    pub key: String,
    pub clock: Clock,
    pub db: Database,
    pub executor: Executor,
    /// The API's buffer of access statistics, written by [`Self::flush_access`] only.
    access: Arc<AccessRecorder>,
    client: reqwest::Client,
}

impl Harness {
    /// A fresh `engram_eval` database, an API on a free loopback port with a settable
    /// clock, and an executor for the jobs.
    pub async fn start(settings: &Settings, tenant: &str) -> anyhow::Result<Self> {
        let admin = Database::open(&settings.database, &settings.home).await?;
        sqlx::raw_sql("DROP DATABASE IF EXISTS engram_eval WITH (FORCE)")
            .execute(&admin.pool)
            .await
            .context("cannot reset engram_eval")?;
        admin.close().await;
        let db = Database::open_named(&settings.database, &settings.home, Some("engram_eval")).await?;
        db.migrate().await?;
        let mut config = settings.clone();
        config.server.bind = "127.0.0.1:0".into();
        config.server.role = Role::Api;
        config.server.key_cache_secs = 300;
        // Access statistics count in ranking: written after each question rather than
        // every second, so whether a question sees the ones before it does not depend on
        // timing and the figures repeat.
        config.search.access_flush_ms = ACCESS_FLUSH_NEVER_MS;
        let clock = Clock::fixed(Utc::now());
        let app = Application::build_with_clock(config, db.clone(), clock.clone()).await?;
        let base = format!("http://127.0.0.1:{}", app.port());
        let access = app.access();
        tokio::spawn(app.run_until_stopped());
        let scopes = [KeyScope::Read, KeyScope::Ingest, KeyScope::Admin];
        let key =
            auth::create_key(&db.pool, &NewKey::new(TenantId::parse(tenant)?, &scopes).named("eval")).await?.secret;
        let mut jobs = definition::load_dir(&settings.jobs.dir)?;
        for job in jobs.values_mut() {
            job.budget.max_users = u64::MAX;
        }
        let metrics = Metrics::new();
        let models = Models::from_settings(settings, &metrics, &jobs)?;
        let executor = Executor {
            pool: db.pool.clone(),
            jobs: Arc::new(jobs),
            metrics,
            models,
            settings: settings.jobs.clone(),
            worker_id: "eval".into(),
            shutdown: tokio::sync::watch::channel(false).1,
        };
        Ok(Self { base, tenant: tenant.to_owned(), key, clock, db, executor, access, client: reqwest::Client::new() })
    }

    /// Writes the access statistics of the lookups so far, as the API's periodic flush
    /// would between an agent's turns.
    pub async fn flush_access(&self) -> anyhow::Result<()> {
        self.access.flush(&self.db.pool).await.context("cannot write access statistics")?;
        Ok(())
    }

    /// Drops the access statistics recorded for `user` of `tenant` since the last flush:
    /// lookups made to look rather than to serve leave no trace in later rankings.
    pub fn discard_access(&self, tenant: &str, user: &str) -> anyhow::Result<()> {
        let user = engram_base::domain::UserId::parse(user.to_owned())?;
        self.access.forget_user(&TenantId::parse(tenant)?, &user);
        Ok(())
    }

    /// A key for `tenant`: each scenario lives in a tenant of its own.
    pub async fn key_for(&self, tenant: &str) -> anyhow::Result<String> {
        let scopes = [KeyScope::Read, KeyScope::Ingest, KeyScope::Admin];
        Ok(auth::create_key(&self.db.pool, &NewKey::new(TenantId::parse(tenant)?, &scopes).named("eval")).await?.secret)
    }

    pub async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        self.post_as(&self.key, path, body).await
    }

    pub async fn post_as(&self, key: &str, path: &str, body: &Value) -> anyhow::Result<Value> {
        let response = self.client.post(format!("{}{path}", self.base)).bearer_auth(key).json(body).send().await?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or_default();
        anyhow::ensure!(status.is_success(), "POST {path}: {status} {body}");
        Ok(body)
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let response = self.client.get(format!("{}{path}", self.base)).bearer_auth(&self.key).send().await?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or_default();
        anyhow::ensure!(status.is_success(), "GET {path}: {status} {body}");
        Ok(body)
    }

    /// Runs `jobs` in order over `scope`, as of `now`.
    pub async fn run_jobs(&self, jobs: &[String], scope: &Scope, now: DateTime<Utc>) -> anyhow::Result<()> {
        for job in jobs {
            let id =
                control::trigger(&self.executor.pool, &self.executor.jobs, job, scope, Trigger::Cli, false, Some(now))
                    .await
                    .map_err(|e| anyhow::anyhow!("{job}: {e}"))?;
            let run = self.executor.run_now(job, id, Duration::from_secs(60)).await?;
            if run.status != engram_core::jobs::runs::RunStatus::Succeeded {
                // A weak LLM fails units; the evaluation measures what the rest gives.
                anyhow::ensure!(self.executor.models.llm.is_some(), "{job} ended {}: {:?}", run.status, run.error);
                eprintln!("eval: {job} ended {} ({}); going on", run.status, run.error.unwrap_or_default());
            }
        }
        Ok(())
    }

    /// What raw events cost in storage: rows, and bytes per event (table, TOAST and
    /// indexes, and the embeddings alone).
    pub async fn event_storage(&self) -> anyhow::Result<Value> {
        let (rows, total, vectors) = sqlx::query!(
            r#"SELECT count(*) AS "rows!", pg_total_relation_size('events') AS "total!",
                      avg(pg_column_size(embedding))::float8 AS vectors FROM events"#,
        )
        .map(|row| (row.rows, row.total, row.vectors))
        .fetch_one(&self.db.pool)
        .await?;
        let per_event = if rows > 0 { total as f64 / rows as f64 } else { 0.0 };
        Ok(
            json!({"rows": rows, "bytes_per_event": per_event.round(), "embedding_bytes_per_event": vectors.unwrap_or(0.0).round()}),
        )
    }

    /// Raw events against what consolidation keeps (active memories and summaries).
    pub async fn compression(&self) -> anyhow::Result<(i64, i64)> {
        Ok(sqlx::query!(
            r#"SELECT (SELECT count(*) FROM events) AS "events!",
                      (SELECT count(*) FROM memories WHERE status = 'active')
                    + (SELECT count(*) FROM sessions WHERE summary IS NOT NULL AND summary <> '')
                    + (SELECT count(*) FROM period_summaries) AS "kept!""#,
        )
        .map(|row| (row.events, row.kept))
        .fetch_one(&self.db.pool)
        .await?)
    }
}

/// Scores of one group of questions.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Scores {
    pub questions: usize,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// Share of returned memories that are outdated (lower is better).
    pub stale_share: f64,
    /// 1 − stale_share.
    pub freshness: f64,
    pub no_hit_questions: usize,
    pub no_hit_accuracy: f64,
}

/// The outcome of one question, accumulated into [`Scores`].
#[derive(Debug, Clone, Copy)]
pub enum Outcome {
    Recall { precision: Option<f64>, recall: f64, stale: Option<f64> },
    NoHit { correct: bool },
}

pub fn aggregate(outcomes: &[Outcome]) -> Scores {
    let mean = |xs: Vec<f64>| if xs.is_empty() { 0.0 } else { xs.iter().sum::<f64>() / xs.len() as f64 };
    let mut precision = Vec::new();
    let mut recall = Vec::new();
    let mut stale = Vec::new();
    let mut no_hit = Vec::new();
    for outcome in outcomes {
        match *outcome {
            Outcome::Recall { precision: p, recall: r, stale: s } => {
                precision.push(p.unwrap_or(0.0));
                recall.push(r);
                stale.extend(s);
            }
            Outcome::NoHit { correct } => no_hit.push(if correct { 1.0 } else { 0.0 }),
        }
    }
    let (p, r) = (mean(precision), mean(recall));
    let stale_share = mean(stale);
    Scores {
        questions: outcomes.len(),
        precision: p,
        recall: r,
        f1: if p + r > 0.0 { 2.0 * p * r / (p + r) } else { 0.0 },
        stale_share,
        freshness: 1.0 - stale_share,
        no_hit_questions: no_hit.len(),
        no_hit_accuracy: mean(no_hit),
    }
}

/// `engram eval`: every scenario in `dir` (or the LoCoMo file), a table, optionally JSON.
/// What `engram eval` was asked to measure.
pub struct Run<'a> {
    /// The folder of scenario files.
    pub dir: &'a Path,
    /// A LoCoMo file instead of the scenarios.
    pub locomo: Option<&'a PathBuf>,
    /// With `locomo`: where each question's evidence is lost, too.
    pub diagnose: bool,
    /// Where to write each question's candidates and their features.
    pub features: Option<&'a Path>,
    /// Results considered per question.
    pub k: usize,
    pub json: Option<&'a Path>,
}

/// Measures with `settings`; with `llm`, then again with that LLM, and reports both
/// (`{"without_llm": …, "with_llm": …}`).
pub async fn run(settings: &Settings, run: &Run<'_>, llm: Option<LlmSettings>) -> anyhow::Result<()> {
    let measure = |settings: Settings| async move {
        match run.locomo {
            Some(file) => locomo::run(&settings, file, run.diagnose, run.features).await,
            None => scenario::run_all(&settings, run.dir, run.k, run.features).await,
        }
    };
    let report = match llm {
        None => {
            let report = measure(settings.clone()).await?;
            print_report(&report);
            report
        }
        Some(llm) => {
            let without = measure(Settings { llm: LlmSettings::default(), ..settings.clone() }).await?;
            let model = llm.model.clone().unwrap_or_default();
            let with = measure(Settings { llm, ..settings.clone() }).await?;
            println!("without an LLM:");
            print_report(&without);
            println!("\nwith {model}:");
            print_report(&with);
            json!({"without_llm": without, "with_llm": with})
        }
    };
    if let Some(path) = run.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
        println!("results written to {}", path.display());
    }
    Ok(())
}

fn print_report(report: &Value) {
    if let Some(retrievers) = report["locomo"]["retrievers"].as_object() {
        println!(
            "{:<18} {:<9} {:>9} {:>9} {:>9} {:>10} {:>11} {:>12} {:>13}",
            "retriever",
            "category",
            "questions",
            "recall@5",
            "recall@10",
            "answer@256",
            "answer@1024",
            "evidence@256",
            "evidence@1024"
        );
        for (name, figures) in retrievers {
            let rows = figures["categories"].as_object().into_iter().flatten().map(|(c, v)| (c.as_str(), v));
            for (category, v) in rows.chain([("overall", &figures["overall"])]) {
                let f = |field: &str| format!("{:.3}", v[field].as_f64().unwrap_or(0.0));
                println!(
                    "{:<18} {:<9} {:>9} {:>9} {:>9} {:>10} {:>11} {:>12} {:>13}",
                    name,
                    category,
                    v["questions"],
                    f("evidence_recall_at_5"),
                    f("evidence_recall_at_10"),
                    f("answer_in_context_256"),
                    f("answer_in_context_1024"),
                    f("evidence_in_context_256"),
                    f("evidence_in_context_1024")
                );
            }
        }
    }
    if report["locomo"]["diagnosis"].is_object() {
        diagnose::print(&report["locomo"]["diagnosis"]);
    }
    if let Some(categories) = report["categories"].as_object() {
        println!(
            "{:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "category", "questions", "precision", "recall", "f1", "freshness", "no-hit"
        );
        let overall = [("overall".to_owned(), report["overall"].clone())];
        for (name, s) in categories.iter().map(|(k, v)| (k.clone(), v.clone())).chain(overall) {
            let figure = |field: &str, shown: bool| {
                if shown { format!("{:.2}", s[field].as_f64().unwrap_or(0.0)) } else { "-".into() }
            };
            let no_hits = s["no_hit_questions"].as_u64().unwrap_or(0);
            let recalls = s["questions"].as_u64().unwrap_or(0) > no_hits;
            println!(
                "{:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                name,
                s["questions"],
                figure("precision", recalls),
                figure("recall", recalls),
                figure("f1", recalls),
                figure("freshness", recalls),
                figure("no_hit_accuracy", no_hits > 0)
            );
        }
    }
    for (key, value) in report
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !["categories", "overall", "questions", "locomo"].contains(&k.as_str()))
    {
        println!("{key}: {value}");
    }
}

/// Scores per category and overall, as the report's JSON.
pub fn report(by_category: &BTreeMap<String, Vec<Outcome>>, extra: Value) -> Value {
    let all: Vec<Outcome> = by_category.values().flatten().copied().collect();
    let categories: serde_json::Map<String, Value> =
        by_category.iter().map(|(name, outcomes)| (name.clone(), json!(aggregate(outcomes)))).collect();
    let mut report = json!({"categories": categories, "overall": aggregate(&all)});
    if let (Some(target), Some(extra)) = (report.as_object_mut(), extra.as_object()) {
        target.extend(extra.clone());
    }
    report
}
