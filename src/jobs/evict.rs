//! `evict`: memories whose decay score fell below `min_score`, or that rank beyond the
//! per-user cap, become `evicted` — soft: out of search, restorable, purged only after
//! retention. The score is `engram_decay`, the function search ranks with, computed in
//! one set-based statement per user. Pinned memories and protected categories stay.

use serde::Deserialize;
use sqlx::{PgConnection, PgPool};

use super::runner::Unit;
use super::{Counts, Scope};
use crate::memories::decay::DecayParams;

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
pub async fn candidates(pool: &PgPool, scope: &Scope) -> sqlx::Result<Vec<(String, String)>> {
    let (tenant, user) = scope.columns();
    sqlx::query_as(
        "SELECT DISTINCT tenant_id, user_id FROM memories
          WHERE status = 'active' AND ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)",
    )
    .bind(tenant)
    .bind(user)
    .fetch_all(pool)
    .await
}

pub async fn run_unit(conn: &mut PgConnection, params: &EvictParams, unit: &Unit<'_>) -> anyhow::Result<Counts> {
    // Victims: lowest scores first, at most the run's removal cap of the user's active memories.
    // The user's access rows are read as one index range and hashed, not probed per memory.
    let (evicted, below_min, over_cap, capped): (i64, i64, i64, i64) = sqlx::query_as(
        "WITH scored AS (
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
         ), victims AS (
            SELECT * FROM eligible ORDER BY score, id
             LIMIT (SELECT greatest(floor(count(*) * $10), 1)::bigint FROM scored)
         ), evicted AS (
            UPDATE memories m SET status = 'evicted', updated_at = $5
              FROM victims v WHERE m.tenant_id = $1 AND m.id = v.id
            RETURNING m.id, v.score, v.rank, v.below_min
         ), history AS (
            INSERT INTO memory_history (tenant_id, id, memory_id, user_id, action, before, after, reason, job_run_id, actor)
            SELECT $1, uuidv7(), e.id, $2, 'evicted', jsonb_build_object('status', 'active'),
                   jsonb_build_object('status', 'evicted', 'score', round(e.score::numeric, 6), 'rank', e.rank),
                   CASE WHEN e.below_min THEN format('decay score %s below min_score %s', round(e.score::numeric, 6), $6)
                        ELSE format('rank %s beyond the per-user cap of %s', e.rank, $7) END,
                   $11, 'job:evict'
              FROM evicted e
         )
         SELECT (SELECT count(*) FROM evicted), (SELECT count(*) FROM evicted WHERE below_min),
                (SELECT count(*) FROM evicted WHERE NOT below_min),
                (SELECT count(*) FROM eligible) - (SELECT count(*) FROM victims)",
    )
    .bind(unit.tenant.as_str())
    .bind(unit.user.as_str())
    .bind(params.decay.lambdas_json())
    .bind(params.decay.default_lambda)
    .bind(unit.now)
    .bind(params.min_score)
    .bind(params.max_per_user)
    .bind(&params.protected_categories)
    .bind(params.min_age_days)
    .bind(unit.budget.max_removed_fraction)
    .bind(unit.run_id)
    .fetch_one(conn)
    .await?;
    let mut counts = Counts::default();
    counts.add("evicted", evicted);
    counts.add("evicted_below_min_score", below_min);
    counts.add("evicted_over_cap", over_cap);
    counts.add("kept_by_removal_cap", capped);
    Ok(counts)
}
