//! `embed_events`: the backlog of raw turns without a vector — those the API's
//! background embedder could not take (see [`crate::ingest::vectors`]) — embedded in
//! batches, oldest first, per user.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::{PgConnection, PgPool};

use super::job::{Candidate, InTransaction, Job, Unit, Units};
use super::{Counts, Models, Scope};
use crate::ingest::vectors;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbedParams {
    /// Events embedded per user in one run; the rest wait for the next.
    pub max_events_per_user: i64,
}

impl Default for EmbedParams {
    fn default() -> Self {
        Self { max_events_per_user: 20_000 }
    }
}

async fn run_unit(
    conn: &mut PgConnection,
    params: &EmbedParams,
    unit: &Unit<'_>,
    models: &Models,
) -> anyhow::Result<Counts> {
    let mut counts = Counts::default();
    let mut left = params.max_events_per_user;
    while left > 0 {
        let ids = vectors::backlog(conn, unit.tenant, unit.user.as_str(), left.min(vectors::BATCH as i64)).await?;
        if ids.is_empty() {
            break;
        }
        left -= ids.len() as i64;
        let written = vectors::embed(conn, &models.embedder, unit.tenant, &ids).await?;
        counts.add("embedded", written as i64);
    }
    Ok(counts)
}

impl Job for EmbedParams {
    fn check(&self, _concurrency: usize) -> Result<(), String> {
        match self.max_events_per_user {
            1.. => Ok(()),
            _ => Err("params.max_events_per_user: must be at least 1".into()),
        }
    }

    async fn candidates(
        &self,
        pool: &PgPool,
        scope: &Scope,
        _now: DateTime<Utc>,
        _models: &Models,
    ) -> sqlx::Result<Vec<Candidate>> {
        let (tenant, user) = scope.columns();
        vectors::waiting_users(pool, tenant, user).await
    }

    fn units(&self) -> Units<'_> {
        Units::InTransaction { custom_plans: true, job: self }
    }
}

impl InTransaction for EmbedParams {
    async fn run_unit(&self, conn: &mut PgConnection, unit: &Unit<'_>, models: &Models) -> anyhow::Result<Counts> {
        run_unit(conn, self, unit, models).await
    }
}
