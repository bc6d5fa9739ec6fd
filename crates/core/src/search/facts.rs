//! Facts and insights in search (semantic memory): the user's memories nearest the query
//! by meaning and those holding its words. Two ways ([`super::lookups`]): a user with at
//! most `search.scan_limit` memories has them read once, on a connection with cached
//! generic plans, and only the candidates (the nearest, the first holding a word) leave
//! the statement; a user with more is looked up through the HNSW and text indexes,
//! planned per lookup.
//!
//! Either way the database finds candidates and the service ranks them: a candidate's
//! keyword share is the weighted share of the query's terms its text holds (a keyed
//! fact's canonical statement too, [`crate::memories::keyword_text`], matched as
//! `engram_language::terms::holds`), its decay [`DecayParams::weight`]. Ranking in SQL cost a
//! scan more than the read itself (a subplan per candidate and term, a sort, a lookup of
//! access counts per candidate).

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgConnection, Row as _};
use uuid::Uuid;

use super::lookups::{Scanned, TableLookup};
use super::{Lookup, Parts, SearchQuery, SearchResult, candidates};
use crate::memories::decay::DecayParams;
use crate::user_indexes::Indexed;
use engram_base::configuration::SearchSettings;
use engram_base::domain::{Category, Kind, TenantId};
use engram_base::models::Embedding;
use engram_language::terms::Terms;

/// A candidate as both ways read it, by column name: everything ranking needs.
#[derive(sqlx::FromRow)]
struct Candidate {
    id: Uuid,
    kind: Kind,
    category: String,
    key: Option<String>,
    value: Option<String>,
    content: String,
    updated_at: DateTime<Utc>,
    source_event_ids: Vec<Uuid>,
    importance: f32,
    created_at: DateTime<Utc>,
    valid_from: DateTime<Utc>,
    similarity: f64,
    last_accessed_at: Option<DateTime<Utc>>,
    access_count: Option<i32>,
    /// The query terms' weights, when the statement weighed them (the same on every row).
    weights: Vec<f64>,
}

/// A statement with its parameters bound.
type Query<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// The user's rows, by the parameters `$1` and `$2`.
const OWNER: &str = "tenant_id = $1 AND user_id = $2";

impl TableLookup for MemoryLookup<'_> {
    const TABLE: Indexed = Indexed::Memories;

    fn user(&self) -> (&TenantId, &str) {
        (self.tenant, self.query.user.as_str())
    }

    fn dims(&self) -> usize {
        self.vector.dims()
    }

    async fn scan(&self, conn: &mut PgConnection) -> sqlx::Result<Option<Scanned>> {
        MemoryLookup::scan(self, conn).await
    }

    async fn indexed(&self, conn: &mut PgConnection) -> sqlx::Result<Scanned> {
        MemoryLookup::indexed(self, conn).await
    }
}

/// One search of a user's memories (facts and insights).
pub(super) struct MemoryLookup<'a> {
    tenant: &'a TenantId,
    query: &'a SearchQuery,
    vector: &'a Embedding,
    terms: &'a Terms,
    /// Whether the statement weighs the query's terms itself, over the user's latest
    /// turns ([`super::terms::weights_sql`]), rather than take `terms`' weights.
    weigh: bool,
    settings: &'a SearchSettings,
    decay: &'a DecayParams,
    now: DateTime<Utc>,
}

impl<'a> MemoryLookup<'a> {
    pub(super) fn new(
        lookup: &Lookup<'a>,
        tenant: &'a TenantId,
        query: &'a SearchQuery,
        vector: &'a Embedding,
        terms: &'a Terms,
        weigh: bool,
    ) -> Self {
        let Lookup { settings, decay, now, .. } = *lookup;
        Self { tenant, query, vector, terms, weigh, settings, decay, now }
    }

    /// Current memories, or those believed at `as_of`: valid then, and active or
    /// superseded now, or evicted or merged since (their `updated_at` is when).
    /// Spelled out per case: the HNSW and text indexes cover what search can return,
    /// and the planner uses them only when the statement says so in so many words.
    fn filter(&self, owner: &str) -> String {
        let validity = match self.query.as_of {
            None => "status = 'active' AND $10::timestamptz IS NULL",
            Some(_) => {
                "(status IN ('active', 'superseded') OR status IN ('evicted', 'merged') AND updated_at > $10)
                 AND valid_from <= $10 AND (valid_to IS NULL OR valid_to > $10)"
            }
        };
        format!(
            "{owner} AND kind = ANY($3) AND ($4::text[] IS NULL OR category = ANY($4)) AND {validity}
             AND ($11::timestamptz IS NULL OR valid_from >= $11) AND ($12::timestamptz IS NULL OR valid_from < $12)"
        )
    }

    /// A candidate's columns up to its similarity: everything ranking needs, so nothing
    /// is fetched twice by id.
    fn columns(&self) -> String {
        let dims = self.vector.dims();
        format!(
            "id, kind, category, key, value, content, updated_at, source_event_ids, importance, created_at, valid_from,
             CASE WHEN embedding_dims = {dims} THEN 1 - (embedding::vector({dims}) <=> $5) ELSE 0 END AS similarity"
        )
    }

    /// `WITH` entries weighing the query's terms and the column that returns the weights
    /// (empty when the statement takes them as given).
    fn weights(&self) -> (String, &'static str) {
        match self.weigh {
            true => (
                format!("{},", super::terms::recent_weights_sql("$9")),
                "(SELECT coalesce(array_agg(w ORDER BY n), '{}') FROM weights)",
            ),
            false => (String::new(), "'{}'::float8[]"),
        }
    }

    /// The user's rows read once; `None` when there are more than `search.scan_limit`.
    /// The candidates, chosen in the statement, are the nearest by meaning and the first
    /// rows holding a word of the query, each with its access counts (the user's access
    /// rows read in one range, not probed one candidate at a time); each row says how
    /// many the user has. Only the candidates leave the database: receiving every row
    /// for the service to choose from would spend the server's CPU on rows it drops.
    pub(super) async fn scan(&self, conn: &mut PgConnection) -> sqlx::Result<Option<Scanned>> {
        let (with, weights) = self.weights();
        let sql = format!(
            "WITH {with} mine AS MATERIALIZED (
                SELECT {columns},
                       ($7 <> '' AND content_tsv @@ (SELECT to_tsquery('simple', $7))) OR content ILIKE ANY($8) AS keyword
                  FROM memories WHERE {filter} LIMIT {limit}
             ), chosen AS (
                (SELECT id FROM mine ORDER BY similarity DESC LIMIT $6) UNION (SELECT id FROM mine WHERE keyword LIMIT $6)
             ), accessed AS MATERIALIZED (
                SELECT memory_id, last_accessed_at, access_count FROM memory_access WHERE tenant_id = $1 AND user_id = $2
             )
             SELECT m.*, a.last_accessed_at, a.access_count, {weights} AS weights, (SELECT count(*) FROM mine) AS total
               FROM mine m LEFT JOIN accessed a ON a.memory_id = m.id
              WHERE m.id IN (SELECT id FROM chosen)",
            columns = self.columns(),
            filter = self.filter(OWNER),
            limit = self.settings.scan_limit as i64 + 1
        );
        let rows: Vec<PgRow> = self.query(&sql).fetch_all(conn).await?;
        let total: i64 = rows.first().map(|row| row.try_get("total")).transpose()?.unwrap_or(0);
        if total > self.settings.scan_limit as i64 {
            return Ok(None);
        }
        let mut rows = rows.iter().map(Candidate::from_row).collect::<sqlx::Result<Vec<Candidate>>>()?;
        let weights = rows.first_mut().filter(|_| self.weigh).map(|row| std::mem::take(&mut row.weights));
        Ok(Some(self.ranked(rows.into_iter(), weights)))
    }

    /// The nearest from an HNSW index (the user's own when they have one: the plan sees
    /// their ids) and the keyword matches from the text indexes or the user's rows, in
    /// one statement planned for the lookup.
    pub(super) async fn indexed(&self, conn: &mut PgConnection) -> sqlx::Result<Scanned> {
        let sql = self.statement(&self.keyword_matches(&self.columns()));
        let mut rows = self.fetch(self.query(&sql), conn).await?;
        let weights = rows.first_mut().filter(|_| self.weigh).map(|row| std::mem::take(&mut row.weights));
        Ok(self.ranked(rows.into_iter(), weights))
    }

    /// SQL: at most `$6` of the user's memories holding a word of the query that finds
    /// candidates, as `columns`.
    fn keyword_matches(&self, columns: &str) -> String {
        format!(
            "SELECT {columns} FROM memories WHERE {}
                AND (($7 <> '' AND content_tsv @@ to_tsquery('simple', $7)) OR content ILIKE ANY($8))
              LIMIT $6",
            self.filter(OWNER)
        )
    }

    /// SQL: the user's memories nearest the query, with the rows of `keyword` not among
    /// them, each with its access counts.
    fn statement(&self, keyword: &str) -> String {
        let (with, weights) = self.weights();
        let (filter, columns, dims) = (self.filter(OWNER), self.columns(), self.vector.dims());
        // The limit in so many words: a generic plan that does not know it assumes a
        // tenth of the user's rows and may sort them all rather than walk the index.
        let candidates = candidates(self.query.limit, self.settings);
        format!(
            "WITH {with} vec AS (
                SELECT {columns} FROM memories WHERE {filter} AND embedding_dims = {dims}
                 ORDER BY embedding::vector({dims}) <=> $5 LIMIT {candidates}
             ), kw AS ({keyword})
             SELECT c.*, a.last_accessed_at, a.access_count, {weights} AS weights
               FROM (SELECT * FROM vec UNION ALL SELECT * FROM kw WHERE id NOT IN (SELECT id FROM vec)) c
               LEFT JOIN LATERAL (
                    SELECT last_accessed_at, access_count FROM memory_access
                     WHERE tenant_id = $1 AND memory_id = c.id LIMIT 1) a ON true"
        )
    }

    async fn fetch(&self, query: Query<'_>, conn: &mut PgConnection) -> sqlx::Result<Vec<Candidate>> {
        query.fetch_all(conn).await?.iter().map(Candidate::from_row).collect()
    }

    /// The statement `sql` with the lookup's parameters bound.
    fn query<'q>(&self, sql: &'q str) -> Query<'q> {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(self.tenant.as_str())
            .bind(self.query.user.as_str())
            .bind(self.query.memory_kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>())
            .bind(&self.query.categories)
            .bind(self.vector.to_pgvector())
            .bind(candidates(self.query.limit, self.settings) as i64)
            .bind(&self.terms.tsquery)
            .bind(&self.terms.like_patterns)
            .bind(self.terms.escaped())
            .bind(self.query.as_of)
            .bind(self.query.since)
            .bind(self.query.until)
    }

    /// The candidates as results with their keyword share and decay, and the weights
    /// the statement found when it weighed the terms (else `terms`' own count).
    fn ranked(&self, rows: impl Iterator<Item = Candidate>, weights: Option<Vec<f64>>) -> Scanned {
        let shares =
            engram_language::terms::normalised(weights.as_ref().unwrap_or(&self.terms.weights).iter().copied());
        let results = rows
            .map(|row| {
                let text = crate::memories::keyword_text(&row.content, row.key.as_deref(), row.value.as_deref());
                let text = text.to_lowercase();
                let keyword =
                    self.terms.all.iter().zip(&shares).filter(|(t, _)| engram_language::terms::holds(&text, t));
                let keyword: f64 = keyword.map(|(_, w)| w).sum();
                let touched = row.last_accessed_at.unwrap_or(row.created_at);
                let (importance, accesses) = (row.importance.into(), row.access_count.unwrap_or(0));
                let decay = self.decay.weight(importance, touched, accesses, &row.category, self.now);
                let parts = Parts::memory(row.similarity, keyword, decay, row.valid_from);
                let (id, kind) = (row.id.to_string(), row.kind.into());
                SearchResult {
                    category: Category::parse(&row.category),
                    key: row.key,
                    ..SearchResult::new(id, kind, row.content, row.updated_at, row.source_event_ids, parts)
                }
            })
            .collect();
        Scanned { results, weights }
    }
}
