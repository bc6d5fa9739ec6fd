//! `dedup`: for each user with memories changed since the last run, the changed ones
//! are compared with their nearest active neighbours (pgvector kNN, never all pairs):
//! - the same key and the same value (the technology or text the key names), or a
//!   similarity of at least `merge_similarity`: merged, no LLM needed;
//! - the same key and a *different* value: not a duplicate but a contradiction, resolved
//!   as a knowledge update — the newer supersedes the older, never a blend;
//! - similar but not identical: with an LLM, it decides whether they say the same and
//!   writes the merged text; without one, both are kept.
//!
//! A merge keeps the older memory (max importance, union of sources, summed accesses)
//! and marks the other `merged`, with history rows for both. Graph entities created
//! since the last run are merged into their nearest older one of the same type when
//! their names are alike and not told apart (see [`crate::graph::merge::merge_duplicates`]).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::job::{Candidate, InTransaction, Job, Unit, Units};
use super::{Counts, Models, Scope};
use crate::memories::lifecycle;
use engram_base::domain::{TenantId, UserId};
use engram_base::models::answers::{kept_share, says_nothing};
use engram_base::models::{ModelError, TokenBudget};
use engram_language::facts::technologies;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DedupParams {
    /// Neighbours looked at per changed memory.
    pub neighbours: i64,
    /// Pairs less similar than this are not candidates.
    pub min_similarity: f64,
    /// At or above this similarity two memories are the same without asking.
    pub merge_similarity: f64,
}

impl Default for DedupParams {
    fn default() -> Self {
        Self { neighbours: 5, min_similarity: 0.75, merge_similarity: 0.95 }
    }
}

/// Users with memories changed (created, updated, restored: their history says when,
/// in server time) since their last dedup.
pub async fn candidates(pool: &PgPool, scope: &Scope) -> sqlx::Result<Vec<Candidate>> {
    let (tenant, user) = scope.columns();
    sqlx::query!(
        r#"SELECT DISTINCT h.tenant_id AS "tenant_id!: TenantId", h.user_id AS "user_id!: UserId" FROM memory_history h
           LEFT JOIN job_checkpoints k ON k.tenant_id = h.tenant_id AND k.job = 'dedup' AND k.user_id = h.user_id
          WHERE h.action IN ('created', 'updated', 'restored', 'insight') AND h.created_at > coalesce(k.done_at, '-infinity')
            AND ($1::text IS NULL OR h.tenant_id = $1) AND ($2::text IS NULL OR h.user_id = $2)
         UNION
         SELECT DISTINCT e.tenant_id, e.user_id FROM entities e
           LEFT JOIN job_checkpoints k ON k.tenant_id = e.tenant_id AND k.job = 'dedup' AND k.user_id = e.user_id
          WHERE e.status = 'active' AND e.created_at > coalesce(k.done_at, '-infinity')
            AND ($1::text IS NULL OR e.tenant_id = $1) AND ($2::text IS NULL OR e.user_id = $2)"#,
        tenant,
        user
    )
    .map(|r| (r.tenant_id, r.user_id))
    .fetch_all(pool)
    .await
}

#[derive(Debug, Clone, sqlx::FromRow)]
struct Row {
    id: Uuid,
    category: String,
    key: Option<String>,
    content: String,
    created_at: DateTime<Utc>,
}

pub async fn run_unit(
    conn: &mut PgConnection,
    params: &DedupParams,
    unit: &Unit<'_>,
    models: &Models,
) -> anyhow::Result<Counts> {
    let mut counts = Counts::default();
    let changed: Vec<Row> = sqlx::query_as!(
        Row,
        "SELECT m.id, m.category, m.key, m.content, m.created_at FROM memories m
          WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.status = 'active' AND m.embedding IS NOT NULL
            AND EXISTS (SELECT 1 FROM memory_history h
                          LEFT JOIN job_checkpoints k ON k.tenant_id = h.tenant_id AND k.job = 'dedup' AND k.user_id = h.user_id
                         WHERE h.tenant_id = m.tenant_id AND h.memory_id = m.id
                           AND h.action IN ('created', 'updated', 'restored', 'insight') AND h.created_at > coalesce(k.done_at, '-infinity'))
          ORDER BY m.created_at, m.id",
        unit.tenant.as_str(),
        unit.user.as_str()
    )
    .fetch_all(&mut *conn)
    .await?;
    sqlx::raw_sql("SET LOCAL hnsw.iterative_scan = relaxed_order").execute(&mut *conn).await?;
    let mut gone: HashSet<Uuid> = HashSet::new();
    let budget = TokenBudget::new(Some(unit.budget.max_llm_tokens));
    for memory in changed {
        if gone.contains(&memory.id) {
            continue;
        }
        let dims = models.embedder.dims();
        let mut nearby = neighbours(conn, unit, memory.id, params, dims).await?;
        for (namesake, similarity) in namesakes(conn, unit, &memory, dims).await? {
            if !nearby.iter().any(|(n, _)| n.id == namesake.id) {
                nearby.push((namesake, similarity));
            }
        }
        for (neighbour, similarity) in nearby {
            if gone.contains(&neighbour.id) || gone.contains(&memory.id) {
                continue;
            }
            counts.add("pairs_compared", 1);
            let (older, newer) =
                if neighbour.created_at <= memory.created_at { (&neighbour, &memory) } else { (&memory, &neighbour) };
            match verdict(older, newer, similarity, params) {
                Verdict::Same => {
                    // The keyed one stays when only one is: it answers questions about its key.
                    let (keep, drop) =
                        if older.key.is_none() && newer.key.is_some() { (newer, older) } else { (older, newer) };
                    merge(conn, unit, keep.id, drop.id, None, "the same fact, said again").await?;
                    gone.insert(drop.id);
                    counts.add("merged", 1);
                }
                Verdict::Contradicts => {
                    let change = unit.change("contradicted by a newer fact with the same key");
                    lifecycle::supersede(conn, unit.tenant, unit.user, older.id, newer.id, newer.created_at, &change)
                        .await?;
                    gone.insert(older.id);
                    counts.add("superseded", 1);
                }
                Verdict::Ask => match &models.llm {
                    Some(llm) => match ask((models, llm), &budget, older, newer).await? {
                        Some(text) => {
                            merge(conn, unit, older.id, newer.id, Some(&text), "the LLM judged them the same").await?;
                            gone.insert(newer.id);
                            counts.add("merged_by_llm", 1);
                        }
                        None => counts.add("kept_by_llm", 1),
                    },
                    None => counts.add("kept_similar", 1),
                },
                Verdict::Different => counts.add("kept_conflicting", 1),
            }
        }
    }
    counts.add("llm_tokens", budget.used() as i64);
    let since: Option<DateTime<Utc>> = sqlx::query_scalar!(
        "SELECT done_at FROM job_checkpoints WHERE tenant_id = $1 AND user_id = $2 AND job = 'dedup'",
        unit.tenant.as_str(),
        unit.user.as_str()
    )
    .fetch_optional(&mut *conn)
    .await?
    .flatten();
    let change = unit.change("the same entity under another name");
    let threshold = models.graph.settings.merge_similarity;
    let limit = models.graph.settings.scan_limit;
    let entities =
        crate::graph::merge::merge_duplicates(conn, unit.tenant, unit.user, since, threshold, &change, limit).await?;
    counts.add("entities_merged", entities);
    Ok(counts)
}

#[derive(Debug, PartialEq)]
enum Verdict {
    Same,
    Contradicts,
    Ask,
    /// Similar words, different technologies ("uses PostgreSQL" / "uses MySQL"): never merged.
    Different,
}

fn verdict(older: &Row, newer: &Row, similarity: f64, params: &DedupParams) -> Verdict {
    let names = |row: &Row| -> HashMap<&'static str, String> { technologies(&row.content).into_iter().collect() };
    let (a, b) = (names(older), names(newer));
    let conflicting = a.iter().any(|(kind, name)| b.get(kind).is_some_and(|other| other != name));
    if let (Some(k1), Some(k2)) = (&older.key, &newer.key)
        && k1 == k2
        && older.category == newer.category
    {
        return match (a.get(k1.as_str()), b.get(k2.as_str())) {
            (Some(x), Some(y)) if x != y => Verdict::Contradicts,
            (Some(x), Some(y)) if x == y => Verdict::Same,
            _ if conflicting => Verdict::Contradicts,
            _ if similarity >= params.merge_similarity => Verdict::Same,
            _ => Verdict::Ask,
        };
    }
    // A keyed fact and a statement naming the same value for that key: one memory.
    let keyed = match (&older.key, &newer.key) {
        (Some(key), None) => Some((key, &a, &b)),
        (None, Some(key)) => Some((key, &b, &a)),
        _ => None,
    };
    if let Some((key, keyed_names, other_names)) = keyed
        && !conflicting
        && keyed_names.get(key.as_str()).is_some_and(|value| other_names.get(key.as_str()) == Some(value))
    {
        return Verdict::Same;
    }
    if conflicting {
        Verdict::Different
    } else if similarity >= params.merge_similarity {
        Verdict::Same
    } else {
        Verdict::Ask
    }
}

/// The nearest active memories of the same user, most similar first, above the threshold.
/// The memory's embedding goes in as a parameter: compared to a column of an outer row
/// (a lateral join) the HNSW index cannot order by it, and a user with 100,000 memories
/// would be scanned whole for each changed memory.
async fn neighbours(
    conn: &mut PgConnection,
    unit: &Unit<'_>,
    id: Uuid,
    params: &DedupParams,
    dims: usize,
) -> sqlx::Result<Vec<(Row, f64)>> {
    let sql = format!(
        "SELECT embedding::vector({dims}) FROM memories WHERE tenant_id = $1 AND id = $2 AND embedding_dims = {dims}"
    );
    let embedding: Option<pgvector::Vector> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(unit.tenant.as_str())
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(embedding) = embedding else { return Ok(Vec::new()) };
    let sql = format!(
        "SELECT id, category, key, content, created_at, similarity FROM (
            SELECT id, category, key, content, created_at, 1 - (embedding::vector({dims}) <=> $4) AS similarity
              FROM memories
             WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND id <> $3 AND embedding_dims = {dims}
             ORDER BY embedding::vector({dims}) <=> $4 LIMIT $5) nearest
          WHERE similarity >= $6
          ORDER BY similarity DESC"
    );
    let rows: Vec<NeighbourRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(unit.tenant.as_str())
        .bind(unit.user.as_str())
        .bind(id)
        .bind(embedding)
        .bind(params.neighbours)
        .bind(params.min_similarity)
        .fetch_all(conn)
        .await?;
    Ok(with_similarity(rows))
}

/// The memories that may say the same as `memory` in other words, whatever their vectors:
/// for a statement naming technologies, the keyed facts of those technologies' keys; for
/// a keyed fact, the statements whose words hold its value. [`verdict`] decides, by the
/// names both hold.
async fn namesakes(
    conn: &mut PgConnection,
    unit: &Unit<'_>,
    memory: &Row,
    dims: usize,
) -> sqlx::Result<Vec<(Row, f64)>> {
    let named = technologies(&memory.content);
    let (keys, value): (Vec<&str>, Option<String>) = match &memory.key {
        None => (named.iter().map(|(key, _)| *key).collect(), None),
        Some(key) => (Vec::new(), named.into_iter().find(|(k, _)| k == key).map(|(_, name)| name)),
    };
    if keys.is_empty() && value.is_none() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT m.id, m.category, m.key, m.content, m.created_at,
                1 - (m.embedding::vector({dims}) <=> me.embedding::vector({dims})) AS similarity
           FROM memories m, memories me
          WHERE me.tenant_id = $1 AND me.id = $3
            AND m.tenant_id = $1 AND m.user_id = $2 AND m.status = 'active' AND m.id <> $3
            AND m.embedding_dims = {dims} AND me.embedding_dims = {dims}
            AND (m.key = ANY($4) OR (m.key IS NULL AND strpos(lower(m.content), $5) > 0))
          ORDER BY similarity DESC LIMIT 20"
    );
    let rows: Vec<NeighbourRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(unit.tenant.as_str())
        .bind(unit.user.as_str())
        .bind(memory.id)
        .bind(&keys)
        .bind(value)
        .fetch_all(conn)
        .await?;
    Ok(with_similarity(rows))
}

fn with_similarity(rows: Vec<NeighbourRow>) -> Vec<(Row, f64)> {
    rows.into_iter()
        .map(|(id, category, key, content, created_at, similarity)| {
            (Row { id, category, key, content, created_at }, similarity)
        })
        .collect()
}

/// A neighbour as read: id, category, key, content, created, similarity.
type NeighbourRow = (Uuid, String, Option<String>, String, DateTime<Utc>, f64);

/// Folds `other` into `survivor` (see [`lifecycle::merge`]).
async fn merge(
    conn: &mut PgConnection,
    unit: &Unit<'_>,
    survivor: Uuid,
    other: Uuid,
    content: Option<&str>,
    reason: &str,
) -> sqlx::Result<()> {
    lifecycle::merge(conn, unit.tenant, unit.user, survivor, other, content, &unit.change(reason)).await
}

#[derive(Deserialize)]
struct LlmVerdict {
    same: bool,
    merged: String,
}

/// The LLM's judgement of a similar pair: the merged text when they say the same.
async fn ask(
    (models, llm): (&Models, &engram_base::models::Llm),
    budget: &TokenBudget,
    older: &Row,
    newer: &Row,
) -> anyhow::Result<Option<String>> {
    let prompt = models.prompts.get("dedup")?;
    let vars = HashMap::from([("older", older.content.clone()), ("newer", newer.content.clone())]);
    let answer: LlmVerdict = match llm.complete("dedup", prompt, &vars, budget).await {
        Ok(answer) => answer,
        Err(err @ (ModelError::BudgetExceeded(_) | ModelError::Config(_))) => return Err(err.into()),
        // No usable judgement: both stay, as without an LLM.
        Err(err) => {
            tracing::warn!(error = %err, "dedup: no usable answer from the LLM; both memories stay");
            return Ok(None);
        }
    };
    // A merge must keep what both said: a text that says nothing, or drops most of the
    // words of either, would lose a memory.
    let keeps_both = |merged: &str| {
        !says_nothing(merged) && kept_share(&older.content, merged) >= 0.5 && kept_share(&newer.content, merged) >= 0.5
    };
    Ok(answer.same.then_some(answer.merged).filter(|m| keeps_both(m)))
}

impl Job for DedupParams {
    fn prompts(&self) -> &'static [&'static str] {
        &["dedup"]
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
        Units::InTransaction { custom_plans: true, job: self }
    }
}

impl InTransaction for DedupParams {
    async fn run_unit(&self, conn: &mut PgConnection, unit: &Unit<'_>, models: &Models) -> anyhow::Result<Counts> {
        run_unit(conn, self, unit, models).await
    }
}
