//! Raw turns in search (episodic memory): the user's events nearest the query by
//! meaning, those containing its words, and — when the query names a time — the
//! nearest within that window, in one statement planned per lookup (the HNSW index over
//! event vectors, or the user's own rows, whichever the planner finds cheaper).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::terms::{Terms, escape_like};
use super::when::Window;
use super::{Parts, SearchQuery, SearchResult};
use crate::domain::{ResultKind, Role, TenantId};
use crate::models::Embedding;

/// The user's raw turns most relevant to the query, within `since`/`until`. Their
/// keyword part counts words as text search does (a term matches a word it begins), not
/// substrings.
pub async fn search(
    conn: &mut PgConnection,
    tenant: &TenantId,
    query: &SearchQuery,
    vector: &Embedding,
    terms: &Terms,
    phrase: Option<Window>,
    candidates: usize,
) -> sqlx::Result<Vec<SearchResult>> {
    let dims = vector.dims();
    let filter = "tenant_id = $1 AND user_id = $2
                  AND ($6::timestamptz IS NULL OR created_at >= $6) AND ($7::timestamptz IS NULL OR created_at < $7)";
    let columns = format!(
        "id, content, created_at, role, session_id,
         CASE WHEN embedding_dims = {dims} THEN 1 - (embedding::halfvec({dims}) <=> $3::vector::halfvec({dims})) ELSE 0 END AS similarity"
    );
    let in_phrase = match phrase {
        Some(_) => format!(
            "UNION SELECT * FROM (SELECT {columns} FROM events WHERE {filter} AND embedding_dims = {dims}
                AND created_at >= $9 AND created_at < $10
              ORDER BY embedding::halfvec({dims}) <=> $3::vector::halfvec({dims}) LIMIT $4) p"
        ),
        None => String::new(),
    };
    let sql = format!(
        "WITH candidates AS (
            SELECT * FROM (SELECT {columns} FROM events WHERE {filter} AND embedding_dims = {dims}
              ORDER BY embedding::halfvec({dims}) <=> $3::vector::halfvec({dims}) LIMIT $4) v
            UNION
            SELECT * FROM (SELECT {columns} FROM events WHERE {filter}
                AND (($5 <> '' AND content_tsv @@ to_tsquery('simple', $5)) OR content ILIKE ANY($11))
              ORDER BY ts_rank(content_tsv, to_tsquery('simple', $5)) DESC LIMIT $4) k
            {in_phrase}
         )
         SELECT c.id, c.content, c.created_at, c.role, c.session_id, c.similarity,
                ((SELECT count(*) FROM unnest($8::text[]) t WHERE to_tsvector('simple', c.content) @@ to_tsquery('simple', t))
                 + (SELECT count(*) FROM unnest($12::text[]) t WHERE c.content ILIKE '%' || t || '%'))::float8
                    / greatest(cardinality($8::text[]) + cardinality($12::text[]), 1)
           FROM candidates c"
    );
    // A word counts where the turn has a word it begins (`paint` finds "painting", `go`
    // not "ago"); unspaced scripts as substrings.
    let words: Vec<String> = terms.words();
    let like_terms: Vec<String> = terms.all.iter().filter(|t| !t.is_ascii()).map(|t| escape_like(t)).collect();
    type EventRow = (Uuid, String, DateTime<Utc>, Role, String, f64, f64);
    let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.as_str())
        .bind(query.user.as_str())
        .bind(vector.to_pgvector())
        .bind(candidates as i64)
        .bind(&terms.tsquery)
        .bind(query.since)
        .bind(query.until)
        .bind(&words)
        .bind(phrase.map(|w| w.since))
        .bind(phrase.map(|w| w.until))
        .bind(&terms.like_patterns)
        .bind(&like_terms)
        .fetch_all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, content, created_at, role, session_id, similarity, keyword)| SearchResult {
            id: id.to_string(),
            kind: ResultKind::Event,
            category: None,
            key: None,
            content,
            score: 0.0,
            similarity,
            updated_at: created_at,
            source_event_ids: vec![id],
            created_at: Some(created_at),
            role: Some(role),
            session_id: Some(session_id),
            explanation: None,
            parts: Parts::event(similarity, keyword, created_at, role),
        })
        .collect())
}
