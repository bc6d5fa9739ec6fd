//! The SQL of a search, on the lookup pool: connections preset (see `startup.rs`)
//! with pgvector's iterative index scan, so a per-user filter still yields enough
//! neighbours from the HNSW index, and with custom plans, because whether the HNSW
//! index or the user's own rows are the faster way depends on how many memories the
//! user has, which a generic plan cannot know.
//!
//! Unlike other tenant work, lookups do not run under the row-level-security role:
//! the text-search operators are not leakproof, so under a policy PostgreSQL must
//! check the policy before them and cannot use the text indexes, which turns a
//! keyword lookup for a user with 100,000 memories into a scan of all of them
//! (240 ms instead of 1 ms). Every statement here filters by `tenant_id = $1`
//! itself, and the isolation tests check every route.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::terms::{Terms, terms};
use super::{SearchQuery, SearchResult, score};
use crate::configuration::SearchSettings;
use crate::domain::TenantId;
use crate::memories::decay::DecayParams;
use crate::models::{Embedder, Embedding, ModelError};

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("cannot embed the query: {0}")]
    Embedding(#[from] ModelError),
    #[error("database error during search")]
    Database(#[from] sqlx::Error),
}

/// Runs a validated search as of `now`; results are sorted by score and at or above `min_score`.
pub async fn run(
    pool: &PgPool,
    embedder: &Embedder,
    tenant: &TenantId,
    query: &SearchQuery,
    settings: &SearchSettings,
    decay: &DecayParams,
    now: DateTime<Utc>,
) -> Result<Vec<SearchResult>, SearchError> {
    let vector = match &query.embedding {
        Some(vector) => vector.clone(),
        None => embedder.embed_one(&query.text).await?,
    };
    let terms = terms(&query.text);
    let mut conn = pool.acquire().await?;
    let mut results = Vec::new();
    if !query.memory_kinds.is_empty() {
        results.extend(memories(&mut conn, tenant, query, &vector, &terms, settings, decay, now).await?);
    }
    if query.session_summaries {
        results.extend(summaries(&mut conn, SESSION_SUMMARIES, tenant, query, &vector, &terms, settings).await?);
    }
    if query.period_summaries {
        results.extend(summaries(&mut conn, PERIOD_SUMMARIES, tenant, query, &vector, &terms, settings).await?);
    }
    results.retain(|r| r.score >= query.min_score);
    results.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.updated_at.cmp(&a.updated_at)));
    results.truncate(query.limit);
    Ok(results)
}

/// Candidates per source: enough for re-ranking to matter, few enough that a user
/// with 100,000 memories does not make the HNSW scan go far.
pub fn candidates(limit: usize, settings: &SearchSettings) -> usize {
    (2 * limit).max(10).min(settings.candidates.max(limit))
}

type Row = (Uuid, String, String, Option<String>, String, DateTime<Utc>, Vec<Uuid>, f64, f64, f64);

#[allow(clippy::too_many_arguments)]
async fn memories(
    conn: &mut PgConnection,
    tenant: &TenantId,
    query: &SearchQuery,
    vector: &Embedding,
    terms: &Terms,
    settings: &SearchSettings,
    decay: &DecayParams,
    now: DateTime<Utc>,
) -> sqlx::Result<Vec<SearchResult>> {
    let dims = vector.dims();
    // Current memories, or those valid at `as_of` (superseded ones included then).
    // Spelled out per case: the HNSW index covers active memories only, and the planner
    // uses it only when the statement says `status = 'active'` in so many words.
    let validity = match query.as_of {
        None => "status = 'active' AND $12::timestamptz IS NULL",
        Some(_) => "status IN ('active', 'superseded') AND valid_from <= $12 AND (valid_to IS NULL OR valid_to > $12)",
    };
    let filter = format!("tenant_id = $1 AND user_id = $2 AND kind = ANY($3) AND ($4::text[] IS NULL OR category = ANY($4)) AND {validity}");
    // Both candidate sets carry the whole row, so nothing is fetched twice by id.
    let columns = format!(
        "id, kind, category, key, content, updated_at, source_event_ids, importance, created_at,
         CASE WHEN embedding_dims = {dims} THEN 1 - (embedding::vector({dims}) <=> $5) ELSE 0 END AS similarity"
    );
    let sql = format!(
        "WITH vec AS (
            SELECT {columns} FROM memories WHERE {filter} AND embedding_dims = {dims}
             ORDER BY embedding::vector({dims}) <=> $5 LIMIT $6
         ), kw AS (
            SELECT {columns} FROM memories WHERE {filter}
               AND (($7 <> '' AND content_tsv @@ to_tsquery('simple', $7)) OR content ILIKE ANY($8))
             LIMIT $6
         ), candidates AS (SELECT * FROM vec UNION ALL SELECT * FROM kw WHERE id NOT IN (SELECT id FROM vec))
         SELECT m.id, m.kind, m.category, m.key, m.content, m.updated_at, m.source_event_ids, m.similarity,
                (SELECT count(*) FROM unnest($9::text[]) t WHERE m.content ILIKE '%' || t || '%')::float8
                    / greatest(cardinality($9::text[]), 1),
                engram_decay(m.importance, coalesce(a.last_accessed_at, m.created_at), coalesce(a.access_count, 0),
                             coalesce(($10::jsonb ->> m.category)::float8, $11), $13)
           FROM candidates m
           LEFT JOIN memory_access a ON a.tenant_id = $1 AND a.memory_id = m.id"
    );
    let like_terms: Vec<String> = terms.all.iter().map(|t| super::terms::escape_like(t)).collect();
    let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.as_str())
        .bind(query.user.as_str())
        .bind(&query.memory_kinds)
        .bind(&query.categories)
        .bind(vector.to_pgvector())
        .bind(candidates(query.limit, settings) as i64)
        .bind(&terms.tsquery)
        .bind(&terms.like_patterns)
        .bind(&like_terms)
        .bind(decay.lambdas_json())
        .bind(decay.default_lambda)
        .bind(query.as_of)
        .bind(now)
        .fetch_all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, kind, category, key, content, updated_at, sources, similarity, lexical, decay)| SearchResult {
            id: id.to_string(),
            kind,
            category: Some(category),
            key,
            content,
            score: score(similarity, lexical, decay),
            similarity,
            updated_at,
            source_event_ids: sources,
        })
        .collect())
}

/// How one kind of summary is stored.
struct SummaryTable {
    kind: &'static str,
    table: &'static str,
    id: &'static str,
    sources: &'static str,
    updated: &'static str,
    visible: &'static str,
}

const SESSION_SUMMARIES: SummaryTable = SummaryTable {
    kind: "session_summary",
    table: "sessions",
    id: "session_id",
    sources: "summary_event_ids",
    updated: "summarized_at",
    visible: "summary IS NOT NULL AND ($5::timestamptz IS NULL OR summarized_at <= $5)",
};

const PERIOD_SUMMARIES: SummaryTable = SummaryTable {
    kind: "period_summary",
    table: "period_summaries",
    id: "id::text",
    sources: "'{}'::uuid[]",
    updated: "updated_at",
    visible: "($5::timestamptz IS NULL OR created_at <= $5)",
};

/// Summaries rank by relevance alone: they do not decay.
async fn summaries(
    conn: &mut PgConnection,
    t: SummaryTable,
    tenant: &TenantId,
    query: &SearchQuery,
    vector: &Embedding,
    terms: &Terms,
    settings: &SearchSettings,
) -> sqlx::Result<Vec<SearchResult>> {
    let dims = vector.dims();
    let SummaryTable { table, id, sources, updated, visible, .. } = t;
    let sql = format!(
        "SELECT {id}, summary, {updated}, {sources},
                CASE WHEN embedding_dims = {dims} THEN 1 - (embedding::vector({dims}) <=> $3) ELSE 0 END AS similarity,
                (SELECT count(*) FROM unnest($4::text[]) t WHERE summary ILIKE '%' || t || '%')::float8
                    / greatest(cardinality($4::text[]), 1)
           FROM {table}
          WHERE tenant_id = $1 AND user_id = $2 AND {visible}
          ORDER BY similarity DESC LIMIT $6"
    );
    let like_terms: Vec<String> = terms.all.iter().map(|t| super::terms::escape_like(t)).collect();
    let rows: Vec<(String, String, Option<DateTime<Utc>>, Vec<Uuid>, f64, f64)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.as_str())
        .bind(query.user.as_str())
        .bind(vector.to_pgvector())
        .bind(&like_terms)
        .bind(query.as_of)
        .bind(candidates(query.limit, settings) as i64)
        .fetch_all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, content, updated_at, sources, similarity, lexical)| SearchResult {
            id,
            kind: t.kind.to_owned(),
            category: None,
            key: None,
            content,
            score: score(similarity, lexical, 1.0),
            similarity,
            updated_at: updated_at.unwrap_or_default(),
            source_event_ids: sources,
        })
        .collect())
}
