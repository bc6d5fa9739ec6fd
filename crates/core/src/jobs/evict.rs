//! `evict`: memories whose decay score fell below `min_score`, or that rank beyond the
//! per-user cap, become `evicted` — soft: out of search, restorable, purged only after
//! retention. The score is `engram_decay`, the function search ranks with, computed in
//! one set-based statement per user. Pinned memories and protected categories stay.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::{PgConnection, PgPool};

use super::job::{Candidate, InTransaction, Job, Unit, Units};
use super::{Counts, Models, Scope};
use crate::memories::decay::DecayParams;
use crate::memories::lifecycle::{self, Eviction};
use engram_base::domain::{TenantId, UserId};

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvictParams {
    /// Memories scoring below this are evicted.
    pub min_score: f64,
    /// Active memories kept per user: the best `max_per_user` by score.
    pub max_per_user: i64,
    /// Never evicted, whatever their score.
    pub protected_categories: Vec<String>,
    /// Memories younger than this are never evicted.
    pub min_age_days: f64,
    pub decay: DecayParams,
}

impl Default for EvictParams {
    fn default() -> Self {
        Self {
            min_score: 0.02,
            max_per_user: 5_000,
            protected_categories: vec!["identity".into()],
            min_age_days: 7.0,
            decay: DecayParams::default(),
        }
    }
}

/// Users with active memories.
pub async fn candidates(pool: &PgPool, scope: &Scope) -> sqlx::Result<Vec<Candidate>> {
    let (tenant, user) = scope.columns();
    sqlx::query!(
        r#"SELECT DISTINCT tenant_id AS "tenant_id!: TenantId", user_id AS "user_id!: UserId" FROM memories
          WHERE status = 'active' AND ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)"#,
        tenant,
        user
    )
    .map(|r| (r.tenant_id, r.user_id))
    .fetch_all(pool)
    .await
}

pub async fn run_unit(conn: &mut PgConnection, params: &EvictParams, unit: &Unit<'_>) -> anyhow::Result<Counts> {
    // Victims: lowest scores first, at most the run's removal cap of the user's active memories.
    // The user's access rows are read as one index range and hashed, not probed per memory.
    let victims: Vec<(uuid::Uuid, f64, i64, bool, i64)> = sqlx::query!(
        r#"WITH scored AS (
            SELECT m.id, m.category, m.pinned, m.created_at,
                   engram_decay(m.importance, coalesce(a.last_accessed_at, m.created_at), coalesce(a.access_count, 0),
                                coalesce(($3::jsonb ->> m.category)::float8, $4), $5) AS score
              FROM memories m
              LEFT JOIN (SELECT memory_id, last_accessed_at, access_count FROM memory_access
                          WHERE tenant_id = $1 AND user_id = $2) a ON a.memory_id = m.id
             WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.status = 'active'
         ), ranked AS (
            SELECT *, row_number() OVER (ORDER BY score DESC, id) AS rank FROM scored
         ), eligible AS (
            SELECT id, score, rank, score < $6 AS below_min FROM ranked
             WHERE NOT pinned AND category <> ALL($8) AND created_at <= $5 - make_interval(secs => $9 * 86400)
               AND (score < $6 OR rank > $7)
         )
         SELECT id AS "id!", score AS "score!", rank AS "rank!", below_min AS "below_min!", (SELECT count(*) FROM eligible) AS "eligible!" FROM eligible ORDER BY score, id
          LIMIT (SELECT greatest(floor(count(*) * $10), 1)::bigint FROM scored)"#,
        unit.tenant.as_str(),
        unit.user.as_str(),
        params.decay.lambdas_json(),
        params.decay.default_lambda,
        unit.now,
        params.min_score,
        params.max_per_user,
        &params.protected_categories,
        params.min_age_days as _,
        unit.budget.max_removed_fraction as _
    )
    .map(|r| (r.id, r.score, r.rank, r.below_min, r.eligible))
    .fetch_all(&mut *conn)
    .await?;
    let eligible = victims.first().map_or(0, |v| v.4);
    let below_min = victims.iter().filter(|v| v.3).count() as i64;
    let evictions: Vec<Eviction> = victims
        .iter()
        .map(|&(id, score, rank, below_min, _)| {
            let score = (score * 1e6).round() / 1e6;
            let reason = match below_min {
                true => format!("decay score {score} below min_score {}", params.min_score),
                false => format!("rank {rank} beyond the per-user cap of {}", params.max_per_user),
            };
            Eviction { id, reason, details: serde_json::json!({"score": score, "rank": rank}) }
        })
        .collect();
    let actor = engram_base::domain::Actor::Job(unit.job.to_owned()).to_string();
    let evicted =
        lifecycle::evict_all(conn, unit.tenant, unit.user, &evictions, unit.now, &actor, Some(unit.run_id)).await?;
    let mut counts = Counts::default();
    counts.add("evicted", evicted);
    counts.add("evicted_below_min_score", below_min);
    counts.add("evicted_over_cap", victims.len() as i64 - below_min);
    counts.add("kept_by_removal_cap", eligible - victims.len() as i64);
    Ok(counts)
}

impl Job for EvictParams {
    fn ranking_decay(&self) -> Option<&DecayParams> {
        Some(&self.decay)
    }

    async fn candidates(
        &self,
        pool: &PgPool,
        scope: &Scope,
        _now: DateTime<Utc>,
        _models: &Models,
    ) -> sqlx::Result<Vec<Candidate>> {
        candidates(pool, scope).await
    }

    fn units(&self) -> Units<'_> {
        // One set-based statement per user, the same shape whatever the user's size.
        Units::InTransaction { custom_plans: false, job: self }
    }
}

impl InTransaction for EvictParams {
    async fn run_unit(&self, conn: &mut PgConnection, unit: &Unit<'_>, _models: &Models) -> anyhow::Result<Counts> {
        run_unit(conn, self, unit).await
    }
}
