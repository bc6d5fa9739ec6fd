//! `reembed`: moves every stored vector to the configured embedding model — memories,
//! session and period summaries, raw turns — after `embeddings.*` changed. Per user, in
//! batches, at most `max_rows_per_user` a run; a row counts as done once it holds the
//! model's vector, so an interrupted run resumes where it stopped and a finished one
//! finds nothing. Lookups answer throughout: vectors are compared only with vectors of
//! the query's dimension, and words still match the rows not yet moved.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::{PgConnection, PgPool};

use super::job::{Candidate, InTransaction, Job, Unit, Units};
use super::{Counts, Models, Scope, summarize_periods, summarize_sessions};
use engram_base::stored_vectors::VectorColumn;

/// Every stored vector, by owner.
const COLUMNS: [&VectorColumn; 4] = [
    &crate::memories::VECTORS,
    &summarize_sessions::VECTORS,
    &summarize_periods::VECTORS,
    &crate::ingest::vectors::VECTORS,
];

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReembedParams {
    /// Texts embedded per batch (one statement writes a batch).
    pub batch_size: i64,
    /// Rows moved per user in one run; the rest wait for the next.
    pub max_rows_per_user: i64,
}

impl Default for ReembedParams {
    fn default() -> Self {
        Self { batch_size: 128, max_rows_per_user: 20_000 }
    }
}

async fn run_unit(
    conn: &mut PgConnection,
    params: &ReembedParams,
    unit: &Unit<'_>,
    models: &Models,
) -> anyhow::Result<Counts> {
    let (embedder, mut counts) = (&models.embedder, Counts::default());
    let mut left = params.max_rows_per_user;
    for column in COLUMNS {
        while left > 0 {
            let rows = column
                .stale(conn, unit.tenant, unit.user.as_str(), embedder.model(), left.min(params.batch_size))
                .await?;
            if rows.is_empty() {
                break;
            }
            left -= rows.len() as i64;
            let (keys, texts): (Vec<String>, Vec<String>) = rows.into_iter().unzip();
            let texts: Vec<String> =
                texts.into_iter().map(|t| if t.trim().is_empty() { "(empty)".to_owned() } else { t }).collect();
            let vectors = embedder.embed(&texts).await?;
            let written =
                column.replace(conn, unit.tenant, unit.user.as_str(), &keys, &vectors, embedder.model()).await?;
            counts.add(column.name, written as i64);
        }
    }
    if left <= 0 {
        counts.add("users_with_more", 1);
    }
    Ok(counts)
}

impl Job for ReembedParams {
    fn check(&self, _concurrency: usize) -> Result<(), String> {
        if !(1..=1024).contains(&self.batch_size) {
            return Err("params.batch_size: must be between 1 and 1024".into());
        }
        match self.max_rows_per_user {
            1.. => Ok(()),
            _ => Err("params.max_rows_per_user: must be at least 1".into()),
        }
    }

    async fn candidates(
        &self,
        pool: &PgPool,
        scope: &Scope,
        _now: DateTime<Utc>,
        models: &Models,
    ) -> sqlx::Result<Vec<Candidate>> {
        let (tenant, user) = scope.columns();
        let mut users = Vec::new();
        for column in COLUMNS {
            users.extend(column.users(pool, tenant, user, models.embedder.model()).await?);
        }
        users.sort();
        users.dedup();
        Ok(users)
    }

    fn units(&self) -> Units<'_> {
        Units::InTransaction { custom_plans: true, job: self }
    }
}

impl InTransaction for ReembedParams {
    async fn run_unit(&self, conn: &mut PgConnection, unit: &Unit<'_>, models: &Models) -> anyhow::Result<Counts> {
        run_unit(conn, self, unit, models).await
    }
}
