//! The SQL of a search of facts and insights, and how the tiers' results come together
//! on one scale ([`run`]). Which connections and which way (scan or index) a lookup takes
//! is [`super::lookups`]'s.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::events::EventLookup;
use super::lookups::{Scanned, TableLookup};
use super::relations::{self, RelationQuery};
use super::terms::{Terms, terms};
use super::{Lookup, Parts, SearchQuery, SearchResult, score, summaries, when};
use crate::configuration::SearchSettings;
use crate::domain::{Kind, ResultKind, TenantId};
use crate::memories::decay::DecayParams;
use crate::models::{Embedding, ModelError};
use crate::user_indexes::Indexed;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("cannot embed the query: {0}")]
    Embedding(#[from] ModelError),
    #[error("database error during search")]
    Database(#[from] sqlx::Error),
}

/// Runs a validated search as of the lookup's clock; results are sorted by score and at
/// or above `min_score`.
pub async fn run(
    lookup: &Lookup<'_>,
    tenant: &TenantId,
    query: &SearchQuery,
) -> Result<Vec<SearchResult>, SearchError> {
    let Lookup { lookups, embedder, settings, now, .. } = *lookup;
    let vector = match &query.embedding {
        Some(vector) => vector.clone(),
        None => embedder.embed_one(&query.text).await?,
    };
    let mut terms = terms(&query.text);
    let window = when::resolve(&query.text, now);
    // The query's terms are weighed by the first statement that reads the user's latest
    // turns anyway, or whose plan is made for the lookup (the index way); else by a
    // statement of their own.
    let mut turns = None;
    if query.events {
        turns = lookups.scan(&EventLookup::new(tenant, query, &vector, &terms, window, settings)).await?;
        if let Some(weights) = turns.as_mut().and_then(|scanned| scanned.weights.take()) {
            terms.weigh(weights);
        }
    }
    let mut results = Vec::new();
    if !query.memory_kinds.is_empty() {
        let memories = MemoryLookup::new(lookup, tenant, query, &vector, &terms, terms.unweighed());
        let found = match lookups.scan(&memories).await? {
            Some(scanned) => scanned,
            None => lookups.indexed(&memories).await?,
        };
        if let Some(weights) = found.weights {
            terms.weigh(weights);
        }
        results.extend(found.results);
    }
    if (query.events && turns.is_none()) || query.session_summaries || query.period_summaries {
        lookups.weigh(tenant, query.user.as_str(), &mut terms).await?;
    }
    if query.events {
        match turns {
            Some(scanned) => results.extend(scanned.results),
            None => {
                let lookup = EventLookup::new(tenant, query, &vector, &terms, window, settings);
                results.extend(lookups.indexed(&lookup).await?.results);
            }
        }
    }
    for (wanted, table) in
        [(query.session_summaries, summaries::SESSIONS), (query.period_summaries, summaries::PERIODS)]
    {
        if wanted {
            let mut conn = lookups.scans.acquire().await?;
            results.extend(summaries::search(&mut conn, table, tenant, query, &vector, &terms, settings).await?);
        }
    }
    score_all(&mut results, query, settings, window);
    if query.relations {
        let from_events: Vec<Uuid> = results.iter().take(3).flat_map(|r| r.source_event_ids.iter().copied()).collect();
        let relation_query = RelationQuery {
            user: &query.user,
            text: &query.text,
            vector: Some(&vector),
            from_events: &from_events,
            as_of: query.as_of,
        };
        let mut reached = relations::search(lookup, tenant, &relation_query).await?;
        score_all(&mut reached, query, settings, window);
        results.extend(reached);
        sort(&mut results);
    }
    let mut results = score::one_slot_per_turn(results);
    results.truncate(query.limit);
    Ok(results)
}

/// Scores `results` on the one scale and keeps those at or above `min_score`, best first.
fn score_all(
    results: &mut Vec<SearchResult>,
    query: &SearchQuery,
    settings: &SearchSettings,
    window: Option<when::Window>,
) {
    for result in results.iter_mut() {
        let explanation = result.parts.explain(settings, window);
        result.score = explanation.score();
        result.explanation = query.explain.then_some(explanation);
    }
    results.retain(|r| r.score >= query.min_score);
    sort(results);
}

/// Best first; on a tie a memory before a turn, then the most recent.
fn sort(results: &mut [SearchResult]) {
    results.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| (a.kind == ResultKind::Event).cmp(&(b.kind == ResultKind::Event)))
            .then_with(|| b.updated_at.cmp(&a.updated_at))
    });
}

/// Candidates per source: enough for re-ranking to matter, few enough that a user
/// with 100,000 memories does not make the HNSW scan go far.
pub fn candidates(limit: usize, settings: &SearchSettings) -> usize {
    (2 * limit).max(10).min(settings.candidates.max(limit))
}

/// A candidate as both ways return it: the row, its similarity, its lexical match and
/// its decay weight, how many rows the scan read, and the weights of the query's terms.
type Row =
    (Uuid, Kind, String, Option<String>, String, DateTime<Utc>, Vec<Uuid>, DateTime<Utc>, f64, f64, f64, i64, Vec<f64>);

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
    pub tenant: &'a TenantId,
    pub query: &'a SearchQuery,
    pub vector: &'a Embedding,
    terms: &'a Terms,
    /// Whether the statement weighs the query's terms itself, over the user's latest
    /// turns ([`super::terms::weights_sql`]), rather than take `terms`' weights.
    weigh: bool,
    settings: &'a SearchSettings,
    decay: &'a DecayParams,
    now: DateTime<Utc>,
}

impl<'a> MemoryLookup<'a> {
    fn new(
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

    /// Current memories, or those valid at `as_of` (superseded ones included then).
    /// Spelled out per case: the HNSW and text indexes cover what search can return,
    /// and the planner uses them only when the statement says so in so many words.
    fn filter(&self) -> String {
        let validity = match self.query.as_of {
            None => "status = 'active' AND $12::timestamptz IS NULL",
            Some(_) => {
                "status IN ('active', 'superseded') AND valid_from <= $12 AND (valid_to IS NULL OR valid_to > $12)"
            }
        };
        format!(
            "tenant_id = $1 AND user_id = $2 AND kind = ANY($3) AND ($4::text[] IS NULL OR category = ANY($4)) AND {validity}
             AND ($14::timestamptz IS NULL OR valid_from >= $14) AND ($15::timestamptz IS NULL OR valid_from < $15)"
        )
    }

    /// The candidate rows carry everything needed, so nothing is fetched twice by id.
    fn columns(&self) -> String {
        let dims = self.vector.dims();
        format!(
            "id, kind, category, key, value, content, updated_at, source_event_ids, importance, created_at, valid_from,
             CASE WHEN embedding_dims = {dims} THEN 1 - (embedding::vector({dims}) <=> $5) ELSE 0 END AS similarity"
        )
    }

    /// Ranks the candidates of `candidates` (a `WITH` list ending in one named
    /// `candidates` with a `scanned` count) with their lexical match and decay weight.
    /// Access rows are looked up per candidate (`LIMIT 1` keeps the subquery a lookup):
    /// a generic plan, which cannot know how few candidates there are, would otherwise
    /// hash the tenant's whole `memory_access`.
    fn ranked(&self, candidates: &str) -> String {
        let weights = match self.weigh {
            true => super::terms::recent_weights_sql("$9"),
            false => super::terms::given_weights_sql("$16"),
        };
        format!(
            "WITH {weights}, query_terms AS MATERIALIZED (
                SELECT forms.*, w / nullif(sum(w) OVER (), 0) AS w
                  FROM unnest($9::text[]) WITH ORDINALITY u(t, n) JOIN weights USING (n) CROSS JOIN {forms}
             ), {candidates}
             SELECT m.id, m.kind, m.category, m.key, m.content, m.updated_at, m.source_event_ids, m.valid_from, m.similarity,
                    (SELECT coalesce(sum(w), 0) FROM query_terms WHERE {contains})::float8,
                    engram_decay(m.importance, coalesce(a.last_accessed_at, m.created_at), coalesce(a.access_count, 0),
                                 coalesce(($10::jsonb ->> m.category)::float8, $11), $13),
                    m.scanned, (SELECT coalesce(array_agg(w ORDER BY n), '{{}}') FROM weights)
               FROM candidates m
               LEFT JOIN LATERAL (
                    SELECT last_accessed_at, access_count FROM memory_access
                     WHERE tenant_id = $1 AND memory_id = m.id LIMIT 1) a ON true",
            // Only for the candidates: the words matched are a keyed fact's canonical statement too.
            contains = super::terms::contains_sql(crate::memories::match_text_sql()),
            forms = super::terms::forms_sql("t"),
        )
    }

    /// The user's rows read once; `None` when there are more than `search.scan_limit`.
    pub(super) async fn scan(&self, conn: &mut PgConnection) -> sqlx::Result<Option<Scanned>> {
        let (filter, columns) = (self.filter(), self.columns());
        let sql = self.ranked(&format!(
            "mine AS MATERIALIZED (
                SELECT {columns},
                       ($7 <> '' AND content_tsv @@ (SELECT to_tsquery('simple', $7))) OR content ILIKE ANY($8) AS keyword
                  FROM memories WHERE {filter} LIMIT {limit}
             ), candidates AS (
                SELECT *, (SELECT count(*) FROM mine) AS scanned FROM (
                    (SELECT * FROM mine ORDER BY similarity DESC LIMIT $6)
                    UNION
                    (SELECT * FROM mine WHERE keyword LIMIT $6)) c
             )",
            limit = self.settings.scan_limit as i64 + 1
        ));
        let rows = self.fetch(conn, sql).await?;
        if rows.first().is_some_and(|row| row.11 > self.settings.scan_limit as i64) {
            return Ok(None);
        }
        Ok(Some(self.found(rows)))
    }

    /// The nearest from an HNSW index (the user's own when they have one: the plan sees
    /// their ids) and the keyword matches from the text indexes or the user's rows.
    pub(super) async fn indexed(&self, conn: &mut PgConnection) -> sqlx::Result<Scanned> {
        let (filter, columns) = (self.filter(), self.columns());
        let dims = self.vector.dims();
        let sql = self.ranked(&format!(
            "vec AS (
                SELECT {columns} FROM memories WHERE {filter} AND embedding_dims = {dims}
                 ORDER BY embedding::vector({dims}) <=> $5 LIMIT $6
             ), kw AS (
                SELECT {columns} FROM memories WHERE {filter}
                   AND (($7 <> '' AND content_tsv @@ to_tsquery('simple', $7)) OR content ILIKE ANY($8))
                 LIMIT $6
             ), candidates AS (
                SELECT *, 0::bigint AS scanned FROM (SELECT * FROM vec UNION ALL SELECT * FROM kw WHERE id NOT IN (SELECT id FROM vec)) c
             )"
        ));
        Ok(self.found(self.fetch(conn, sql).await?))
    }

    /// The rows as results, with the weights the statement found when it weighed the terms.
    fn found(&self, mut rows: Vec<Row>) -> Scanned {
        let weights = rows.first_mut().filter(|_| self.weigh).map(|row| std::mem::take(&mut row.12));
        Scanned { results: self.results(rows), weights }
    }

    async fn fetch(&self, conn: &mut PgConnection, sql: String) -> sqlx::Result<Vec<Row>> {
        let like_terms = self.terms.escaped();
        sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(self.tenant.as_str())
            .bind(self.query.user.as_str())
            .bind(self.query.memory_kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>())
            .bind(&self.query.categories)
            .bind(self.vector.to_pgvector())
            .bind(candidates(self.query.limit, self.settings) as i64)
            .bind(&self.terms.tsquery)
            .bind(&self.terms.like_patterns)
            .bind(&like_terms)
            .bind(self.decay.lambdas_json())
            .bind(self.decay.default_lambda)
            .bind(self.query.as_of)
            .bind(self.now)
            .bind(self.query.since)
            .bind(self.query.until)
            .bind(&self.terms.weights)
            .fetch_all(conn)
            .await
    }

    fn results(&self, rows: Vec<Row>) -> Vec<SearchResult> {
        rows.into_iter()
            .map(
                |(
                    id,
                    kind,
                    category,
                    key,
                    content,
                    updated_at,
                    sources,
                    valid_from,
                    similarity,
                    lexical,
                    decay,
                    ..,
                )| {
                    SearchResult {
                        id: id.to_string(),
                        kind: kind.into(),
                        category: Some(category),
                        key,
                        content,
                        score: 0.0,
                        similarity,
                        updated_at,
                        source_event_ids: sources,
                        created_at: None,
                        role: None,
                        session_id: None,
                        fact: None,
                        path: None,
                        explanation: None,
                        parts: Parts::memory(similarity, lexical, decay, valid_from),
                    }
                },
            )
            .collect()
    }
}
