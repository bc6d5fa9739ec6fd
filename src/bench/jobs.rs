//! Job figures on the benchmark corpus: `evict` scoring every memory (as a dry run, so
//! the corpus stays as it is), and `dedup` finding near-duplicates planted in 5% of it,
//! with the precision and recall of what it merged. The planted rows are removed after.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::PgPool;

use super::Figure;
use super::corpus::{self, CorpusSize, TENANT};
use crate::configuration::Settings;
use crate::db::Database;
use crate::domain::TenantId;
use crate::jobs::{Definition, Executor, Models, Run, Scope, Trigger, control, definition};
use crate::metrics::Metrics;
use crate::models::Embedder;

pub async fn run(settings: &Settings, quick: bool) -> anyhow::Result<Vec<Figure>> {
    let size = CorpusSize::new(quick);
    let db = Database::open_named(&settings.database, &settings.home, Some("engram_bench")).await?;
    db.migrate().await?;
    corpus::ensure(&db.pool, size).await?;
    let executor = executor(&db.pool, settings)?;
    let scope = Scope::tenant(TenantId::parse(TENANT)?);

    let started = Instant::now();
    let evict = run_job(&executor, "evict", &scope, true).await?;
    let evict_seconds = started.elapsed().as_secs_f64();

    let planted = plant(&db.pool).await?;
    let started = Instant::now();
    let dedup = run_job(&executor, "dedup", &scope, false).await;
    let dedup_seconds = started.elapsed().as_secs_f64();
    let scores = match &dedup {
        Ok(run) => score(&db.pool, run).await,
        Err(_) => Ok((0.0, 0.0)),
    };
    unplant(&db.pool, dedup.as_ref().ok()).await?;
    let (precision, recall) = scores?;
    let dedup = dedup?;

    let count = |run: &Run, action: &str| run.counts.get(action).and_then(|v| v.as_f64()).unwrap_or(0.0);
    Ok(vec![
        Figure { scenario: "jobs", metric: "evict_memories".into(), value: size.total() as f64, unit: "memories" },
        Figure { scenario: "jobs", metric: "evict_seconds".into(), value: evict_seconds, unit: "s (dry run: every unit scored, rolled back)" },
        Figure { scenario: "jobs", metric: "evict_would_evict".into(), value: count(&evict, "evicted"), unit: "memories" },
        Figure { scenario: "jobs", metric: "dedup_planted".into(), value: planted as f64, unit: "near-duplicates" },
        Figure { scenario: "jobs", metric: "dedup_seconds".into(), value: dedup_seconds, unit: "s" },
        Figure { scenario: "jobs", metric: "dedup_merged".into(), value: count(&dedup, "merged"), unit: "memories" },
        Figure { scenario: "jobs", metric: "dedup_precision".into(), value: precision, unit: "share" },
        Figure { scenario: "jobs", metric: "dedup_recall".into(), value: recall, unit: "share" },
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
        embedder: Arc::new(Embedder::from_settings(&settings.embeddings, &settings.home, metrics.clone())?),
        llm: None,
        prompts: settings.jobs.dir.join("prompts"),
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

pub(super) async fn run_job(executor: &Executor, job: &str, scope: &Scope, dry_run: bool) -> anyhow::Result<Run> {
    eprintln!("bench: running {job}{}", if dry_run { " (dry run)" } else { "" });
    let id = control::trigger(&executor.pool, &executor.jobs, job, scope, Trigger::Cli, dry_run, None).await?;
    let run = executor.run_now(job, id, Duration::from_secs(60)).await?;
    anyhow::ensure!(run.status == "succeeded", "{job} ended {}: {:?}", run.status, run.error);
    Ok(run)
}

/// Copies of every 20th memory with a slightly perturbed embedding, newer than their
/// originals and recorded as created, so dedup sees them as changed.
async fn plant(pool: &PgPool) -> anyhow::Result<u64> {
    eprintln!("bench: planting near-duplicates");
    let planted = sqlx::raw_sql(
        "DROP TABLE IF EXISTS bench_planted;
         CREATE TABLE bench_planted (planted uuid PRIMARY KEY, original uuid NOT NULL);
         INSERT INTO bench_vectors
              SELECT 'tiny', i, (SELECT array_agg((random() * 2 - 1) * 0.01) FROM generate_series(1, 384) WHERE i >= 0)::vector
                FROM generate_series(0, 255) i
          ON CONFLICT DO NOTHING;
         INSERT INTO bench_planted
              SELECT gen_random_uuid(), id FROM memories
               WHERE tenant_id = 'bench' AND status = 'active' AND hashtext(id::text) % 20 = 0;
         INSERT INTO memories (tenant_id, id, user_id, kind, category, content, embedding, embedding_model, embedding_dims,
                               importance, valid_from, created_at, updated_at)
              SELECT m.tenant_id, p.planted, m.user_id, m.kind, m.category, m.content || ' (said again)',
                     m.embedding::vector(384) + t.v, m.embedding_model, 384, m.importance, now(), now(), now()
                FROM bench_planted p
                JOIN memories m ON m.tenant_id = 'bench' AND m.id = p.original
                JOIN bench_vectors t ON t.kind = 'tiny' AND t.i = (abs(hashtext(p.planted::text)) % 256);
         INSERT INTO memory_history (tenant_id, id, memory_id, user_id, action, reason)
              SELECT 'bench', gen_random_uuid(), p.planted, m.user_id, 'created', 'bench: planted'
                FROM bench_planted p JOIN memories m ON m.tenant_id = 'bench' AND m.id = p.planted;
         DELETE FROM job_checkpoints WHERE tenant_id = 'bench' AND job = 'dedup';",
    )
    .execute(pool)
    .await
    .context("cannot plant near-duplicates")?;
    let _ = planted;
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM bench_planted").fetch_one(pool).await?;
    Ok(count as u64)
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

/// Puts the corpus back: planted rows gone, what the run changed on originals undone.
async fn unplant(pool: &PgPool, run: Option<&Run>) -> anyhow::Result<()> {
    eprintln!("bench: removing the planted near-duplicates");
    if let Some(run) = run {
        sqlx::query("UPDATE memories m SET status = 'active', superseded_by = NULL FROM memory_history h
                      WHERE h.tenant_id = 'bench' AND h.job_run_id = $1 AND m.tenant_id = 'bench' AND m.id = h.memory_id")
            .bind(run.id)
            .execute(pool)
            .await?;
        sqlx::query("DELETE FROM memory_history WHERE tenant_id = 'bench' AND job_run_id = $1").bind(run.id).execute(pool).await?;
    }
    sqlx::raw_sql(
        "DELETE FROM memory_history WHERE tenant_id = 'bench' AND memory_id IN (SELECT planted FROM bench_planted);
         DELETE FROM memory_access WHERE tenant_id = 'bench' AND memory_id IN (SELECT planted FROM bench_planted);
         DELETE FROM memories WHERE tenant_id = 'bench' AND id IN (SELECT planted FROM bench_planted);
         DELETE FROM job_checkpoints WHERE tenant_id = 'bench';
         DROP TABLE bench_planted;",
    )
    .execute(pool)
    .await?;
    Ok(())
}
