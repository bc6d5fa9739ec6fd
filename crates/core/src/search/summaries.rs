//! Summaries in search: session and period summaries, ranked by relevance alone (they
//! do not decay), read on the scan connections.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::lookups::candidates;
use super::{Parts, SearchQuery, SearchResult};
use engram_base::configuration::SearchSettings;
use engram_base::domain::{ResultKind, TenantId};
use engram_base::models::Embedding;
use engram_language::terms::Terms;

/// How one kind of summary is stored.
pub struct SummaryTable {
    kind: ResultKind,
    table: &'static str,
    id: &'static str,
    sources: &'static str,
    updated: &'static str,
    visible: &'static str,
    /// When the summarised conversations happened: start and end.
    span: &'static str,
}

pub const SESSIONS: SummaryTable = SummaryTable {
    kind: ResultKind::SessionSummary,
    table: "sessions",
    id: "session_id",
    sources: "summary_event_ids",
    updated: "summarized_at",
    visible: "summary IS NOT NULL AND ($5::timestamptz IS NULL OR summarized_at <= $5)",
    span: "started_at AS span_start, last_event_at AS span_end",
};

pub const PERIODS: SummaryTable = SummaryTable {
    kind: ResultKind::PeriodSummary,
    table: "period_summaries",
    id: "id::text",
    sources: "'{}'::uuid[]",
    updated: "updated_at",
    visible: "($5::timestamptz IS NULL OR created_at <= $5)",
    span: "period_start::timestamptz AS span_start, (period_end + 1)::timestamptz - interval '1 second' AS span_end",
};

/// The user's summaries in `t` most relevant to the query.
pub async fn search(
    conn: &mut PgConnection,
    t: SummaryTable,
    tenant: &TenantId,
    query: &SearchQuery,
    vector: &Embedding,
    terms: &Terms,
    settings: &SearchSettings,
) -> sqlx::Result<Vec<SearchResult>> {
    let dims = vector.dims();
    let SummaryTable { table, id, sources, updated, visible, span, .. } = t;
    let sql = format!(
        "SELECT * FROM (SELECT {id}, summary, {updated}, {sources}, {span},
                CASE WHEN embedding_dims = {dims} THEN 1 - (embedding::vector({dims}) <=> $3) ELSE 0 END AS similarity,
                (SELECT coalesce(sum(w), 0) FROM unnest($4::text[], $9::float8[]) u(t, w), {forms} WHERE {contains})::float8
           FROM {table}
          WHERE tenant_id = $1 AND user_id = $2 AND {visible}) s
          WHERE ($7::timestamptz IS NULL OR s.span_end >= $7) AND ($8::timestamptz IS NULL OR s.span_start < $8)
          ORDER BY similarity DESC LIMIT $6",
        contains = super::terms::contains_sql("summary"),
        forms = super::terms::forms_sql("t"),
    );
    let (like_terms, weights) = terms.weighted();
    // id, summary, updated, sources, span start and end, similarity, lexical
    type SummaryRow = (String, String, Option<DateTime<Utc>>, Vec<Uuid>, DateTime<Utc>, DateTime<Utc>, f64, f64);
    let rows: Vec<SummaryRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.as_str())
        .bind(query.user.as_str())
        .bind(vector.to_pgvector())
        .bind(&like_terms)
        .bind(query.as_of)
        .bind(candidates(query.limit, settings) as i64)
        .bind(query.since)
        .bind(query.until)
        .bind(&weights)
        .fetch_all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, content, updated_at, sources, start, end, similarity, lexical)| {
            let parts = Parts::summary(similarity, lexical, Some((start, end)));
            SearchResult::new(id, t.kind, content, updated_at.unwrap_or_default(), sources, parts)
        })
        .collect())
}
