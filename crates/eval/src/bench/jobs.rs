//! Job figures on a copy of the benchmark corpus, so the corpus itself stays as it is:
//! `dedup` finding the planted near-duplicates, with the precision and recall of what
//! it merged, then `evict` scoring every memory. Both are real runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::PgPool;

use super::Figure;
use super::corpus::{self, CorpusSize, TENANT};
use engram_base::configuration::Settings;
use engram_base::db::Database;
use engram_base::domain::TenantId;
use engram_base::metrics::Metrics;
use engram_base::models::Embedder;
use engram_core::jobs::{Definition, Executor, Models, Run, Scope, Trigger, control, definition};

/// The copy the jobs change; dropped afterwards.
const COPY: &str = "engram_bench_jobs";

pub async fn run(settings: &Settings, quick: bool) -> anyhow::Result<Vec<Figure>> {
    let server = Database::open_named(&settings.database, &settings.home, Some("postgres")).await?;
    let corpus_db = corpus::database(quick);
    let bench = Database::open_named(&settings.database, &settings.home, Some(corpus_db)).await?;
    bench.migrate().await?;
    corpus::ensure(&bench.pool, CorpusSize::new(quick, &settings.embeddings)).await?;
    bench.close().await;
    let started = Instant::now();
    copy_corpus(&server.pool, corpus_db).await?;
    let copy_seconds = started.elapsed().as_secs_f64();

    let db = Database::open_named(&settings.database, &settings.home, Some(COPY)).await?;
    let figures = measure(&db.pool, settings).await;
    db.close().await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {COPY} WITH (FORCE)")))
        .execute(&server.pool)
        .await?;
    server.close().await;
    let mut figures = figures?;
    figures.insert(0, Figure { scenario: "jobs", metric: "corpus_copy".into(), value: copy_seconds, unit: "s" });
    Ok(figures)
}

/// A file-level copy of the corpus database. Sessions still on it (the search
/// scenario's server) are ended first: PostgreSQL copies only an idle database.
async fn copy_corpus(server: &PgPool, corpus_db: &str) -> anyhow::Result<()> {
    eprintln!("bench: copying the corpus for the jobs to change");
    let statements = [
        format!("DROP DATABASE IF EXISTS {COPY} WITH (FORCE)"),
        format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{corpus_db}' AND pid <> pg_backend_pid()"
        ),
        format!("CREATE DATABASE {COPY} TEMPLATE {corpus_db} STRATEGY FILE_COPY"),
    ];
    for statement in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(server)
            .await
            .context("cannot copy the benchmark corpus")?;
    }
    Ok(())
}

async fn measure(pool: &PgPool, settings: &Settings) -> anyhow::Result<Vec<Figure>> {
    let executor = executor(pool, settings)?;
    let scope = Scope::tenant(TenantId::parse(TENANT)?);
    let memories = corpus::count(pool).await?;
    let planted: i64 = sqlx::query_scalar("SELECT count(*) FROM bench_planted").fetch_one(pool).await?;

    let started = Instant::now();
    let dedup = run_job(&executor, "dedup", &scope).await?;
    let dedup_seconds = started.elapsed().as_secs_f64();
    let (precision, recall) = score(pool, &dedup).await?;

    let started = Instant::now();
    let evict = run_job(&executor, "evict", &scope).await?;
    let evict_seconds = started.elapsed().as_secs_f64();

    let count = |run: &Run, action: &str| run.counts.get(action).and_then(|v| v.as_f64()).unwrap_or(0.0);
    Ok(vec![
        Figure { scenario: "jobs", metric: "memories".into(), value: memories as f64, unit: "memories" },
        Figure { scenario: "jobs", metric: "dedup_planted".into(), value: planted as f64, unit: "near-duplicates" },
        Figure { scenario: "jobs", metric: "dedup_seconds".into(), value: dedup_seconds, unit: "s" },
        Figure { scenario: "jobs", metric: "dedup_merged".into(), value: count(&dedup, "merged"), unit: "memories" },
        Figure { scenario: "jobs", metric: "dedup_precision".into(), value: precision, unit: "share" },
        Figure { scenario: "jobs", metric: "dedup_recall".into(), value: recall, unit: "share" },
        Figure { scenario: "jobs", metric: "evict_users".into(), value: count(&evict, "users"), unit: "users" },
        Figure { scenario: "jobs", metric: "evict_seconds".into(), value: evict_seconds, unit: "s" },
        Figure { scenario: "jobs", metric: "evict_evicted".into(), value: count(&evict, "evicted"), unit: "memories" },
    ])
}

/// The shipped job definitions, with budgets opened up so one run covers the corpus.
pub(super) fn executor(pool: &PgPool, settings: &Settings) -> anyhow::Result<Executor> {
    let mut jobs: BTreeMap<String, Definition> = definition::load_dir(&settings.jobs.dir)?;
    for job in jobs.values_mut() {
        job.budget.max_users = u64::MAX;
        job.timeout = Duration::from_secs(3600);
    }
    let metrics = Metrics::new();
    let models = Models {
        embedder: Arc::new(Embedder::from_settings(
            &settings.embeddings,
            &settings.home,
            &Default::default(),
            metrics.clone(),
        )?),
        llm: None,
        prompts: engram_core::jobs::load_prompts(&settings.jobs.dir, false, &jobs)?,
        graph: Default::default(),
        secret_kinds: Arc::new(settings.ingest.redact.clone()),
    };
    Ok(Executor {
        pool: pool.clone(),
        jobs: Arc::new(jobs),
        metrics,
        models,
        settings: settings.jobs.clone(),
        worker_id: "bench".into(),
        shutdown: tokio::sync::watch::channel(false).1,
    })
}

pub(super) async fn run_job(executor: &Executor, job: &str, scope: &Scope) -> anyhow::Result<Run> {
    eprintln!("bench: running {job}");
    let id = control::trigger(&executor.pool, &executor.jobs, job, scope, Trigger::Cli, false, None).await?;
    let run = executor.run_now(job, id, Duration::from_secs(60)).await?;
    anyhow::ensure!(
        run.status == engram_core::jobs::runs::RunStatus::Succeeded,
        "{job} ended {}: {:?}",
        run.status,
        run.error
    );
    Ok(run)
}

/// Precision and recall of the run's merges against the planted pairs.
async fn score(pool: &PgPool, run: &Run) -> anyhow::Result<(f64, f64)> {
    let (merges, hits, planted): (i64, i64, i64) = sqlx::query_as(
        "WITH merges AS (
            SELECT h.memory_id AS merged, m.superseded_by AS survivor FROM memory_history h
              JOIN memories m ON m.tenant_id = h.tenant_id AND m.id = h.memory_id
             WHERE h.tenant_id = 'bench' AND h.job_run_id = $1 AND h.action = 'merged')
         SELECT (SELECT count(*) FROM merges),
                (SELECT count(*) FROM merges x JOIN bench_planted p
                     ON (p.planted = x.merged AND p.original = x.survivor) OR (p.original = x.merged AND p.planted = x.survivor)),
                (SELECT count(*) FROM bench_planted)",
    )
    .bind(run.id)
    .fetch_one(pool)
    .await?;
    let precision = if merges == 0 { 0.0 } else { hits as f64 / merges as f64 };
    let recall = if planted == 0 { 0.0 } else { hits as f64 / planted as f64 };
    Ok((precision, recall))
}
