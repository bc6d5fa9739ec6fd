//! Raw turns in search (episodic memory): the user's events nearest the query by
//! meaning, those containing its words, and — when the query names a time — the
//! nearest within that window. Two ways, as for memories ([`super::query`]): a user with
//! at most `search.scan_limit` events has them read once on a connection with cached
//! generic plans; a user with more is looked up through the HNSW index over event
//! vectors and the text indexes, planned per lookup.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::terms::Terms;
use super::when::Window;
use super::{Parts, SearchQuery, SearchResult};
use crate::domain::{ResultKind, Role, TenantId};
use crate::models::Embedding;

/// One search of a user's raw turns.
pub struct EventLookup<'a> {
    pub tenant: &'a TenantId,
    pub query: &'a SearchQuery,
    pub vector: &'a Embedding,
    pub terms: &'a Terms,
    pub phrase: Option<Window>,
    pub candidates: usize,
    pub scan_limit: u32,
}

/// id, content, time, role, session, similarity, keyword share, rows scanned.
type EventRow = (Uuid, String, DateTime<Utc>, Role, String, f64, f64, i64);

impl EventLookup<'_> {
    fn filter(&self) -> &'static str {
        "tenant_id = $1 AND user_id = $2
         AND ($6::timestamptz IS NULL OR created_at >= $6) AND ($7::timestamptz IS NULL OR created_at < $7)"
    }

    fn columns(&self) -> String {
        let dims = self.vector.dims();
        format!(
            "id, content, content_tsv, created_at, role, session_id,
             CASE WHEN embedding_dims = {dims} THEN 1 - (embedding::halfvec({dims}) <=> $3::vector::halfvec({dims})) ELSE 0 END AS similarity"
        )
    }

    /// Ranks `candidates` (a `WITH` list ending in one named `candidates` with a
    /// `scanned` count) with their keyword share, the weights of the terms it holds: a
    /// term counts where the turn has a word it begins (`paint` finds "painting", `go`
    /// not "ago"), unspaced scripts as substrings.
    fn ranked(&self, candidates: &str) -> String {
        format!(
            "WITH {candidates}
             SELECT c.id, c.content, c.created_at, c.role, c.session_id, c.similarity,
                    ((SELECT coalesce(sum(w), 0) FROM unnest($8::text[], $13::float8[]) u(t, w)
                       WHERE c.content_tsv @@ to_tsquery('simple', t))
                     + (SELECT coalesce(sum(w), 0) FROM unnest($12::text[], $14::float8[]) u(t, w)
                         WHERE c.content ILIKE '%' || t || '%'))::float8,
                    c.scanned
               FROM candidates c"
        )
    }

    /// The user's turns read once; `None` when there are more than `search.scan_limit`.
    pub async fn scan(&self, conn: &mut PgConnection) -> sqlx::Result<Option<Vec<SearchResult>>> {
        let (filter, columns) = (self.filter(), self.columns());
        let sql = self.ranked(&format!(
            "mine AS MATERIALIZED (
                SELECT {columns}, ($5 <> '' AND content_tsv @@ to_tsquery('simple', $5)) OR content ILIKE ANY($11) AS keyword
                  FROM events WHERE {filter} LIMIT {limit}
             ), candidates AS (
                SELECT *, (SELECT count(*) FROM mine) AS scanned FROM (
                    (SELECT * FROM mine ORDER BY similarity DESC LIMIT $4)
                    UNION
                    (SELECT * FROM mine WHERE keyword
                      ORDER BY CASE WHEN $5 <> '' THEN ts_rank(content_tsv, to_tsquery('simple', $5)) END DESC NULLS LAST
                      LIMIT $4)
                    UNION
                    (SELECT * FROM mine WHERE created_at >= $9 AND created_at < $10 ORDER BY similarity DESC LIMIT $4)) c
             )",
            limit = self.scan_limit as i64 + 1
        ));
        let rows = self.fetch(conn, sql).await?;
        if rows.first().is_some_and(|row| row.7 > self.scan_limit as i64) {
            return Ok(None);
        }
        Ok(Some(results(rows)))
    }

    /// The nearest from the HNSW index, the keyword matches from the text indexes.
    pub async fn indexed(&self, conn: &mut PgConnection) -> sqlx::Result<Vec<SearchResult>> {
        let (filter, columns, dims) = (self.filter(), self.columns(), self.vector.dims());
        let nearest = |window: &str| {
            format!(
                "SELECT * FROM (SELECT {columns} FROM events WHERE {filter} AND embedding_dims = {dims} {window}
                  ORDER BY embedding::halfvec({dims}) <=> $3::vector::halfvec({dims}) LIMIT $4)"
            )
        };
        let in_phrase = match self.phrase {
            Some(_) => format!("UNION {} p", nearest("AND created_at >= $9 AND created_at < $10")),
            None => String::new(),
        };
        let sql = self.ranked(&format!(
            "candidates AS (
                SELECT *, 0::bigint AS scanned FROM (
                    {} v
                    UNION
                    SELECT * FROM (SELECT {columns} FROM events WHERE {filter}
                        AND (($5 <> '' AND content_tsv @@ to_tsquery('simple', $5)) OR content ILIKE ANY($11))
                      ORDER BY CASE WHEN $5 <> '' THEN ts_rank(content_tsv, to_tsquery('simple', $5)) END DESC NULLS LAST
                      LIMIT $4) k
                    {in_phrase}) c
             )",
            nearest("")
        ));
        Ok(results(self.fetch(conn, sql).await?))
    }

    async fn fetch(&self, conn: &mut PgConnection, sql: String) -> sqlx::Result<Vec<EventRow>> {
        let (words, word_weights, like_terms, like_weights) = self.terms.for_turns();
        sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(self.tenant.as_str())
            .bind(self.query.user.as_str())
            .bind(self.vector.to_pgvector())
            .bind(self.candidates as i64)
            .bind(&self.terms.tsquery)
            .bind(self.query.since)
            .bind(self.query.until)
            .bind(&words)
            .bind(self.phrase.map(|w| w.since))
            .bind(self.phrase.map(|w| w.until))
            .bind(&self.terms.like_patterns)
            .bind(&like_terms)
            .bind(&word_weights)
            .bind(&like_weights)
            .fetch_all(conn)
            .await
    }
}

fn results(rows: Vec<EventRow>) -> Vec<SearchResult> {
    rows.into_iter()
        .map(|(id, content, created_at, role, session_id, similarity, keyword, _)| SearchResult {
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
            fact: None,
            path: None,
            explanation: None,
            parts: Parts::event(similarity, keyword, created_at, role),
        })
        .collect()
}
