//! Raw turns in search (episodic memory): the user's events nearest the query by
//! meaning, those containing its words, and — when the query names a time — the
//! nearest within that window. Two ways, as for memories ([`super::query`]): a user with
//! at most `search.scan_limit` events has them read once on a connection with cached
//! generic plans; a user with more is looked up through the HNSW index over event
//! vectors and the text indexes, planned per lookup.
//!
//! A turn is read with its neighbours in its session, because an answer often makes
//! sense only beside the question it answers ("What did you paint?" — "A sunrise by the
//! lake."): its vector is made from the turn before it and itself
//! ([`crate::event_vectors`]), and a query term found not in the turn but in the turn
//! before or after it counts [`NEIGHBOUR_SHARE`] of its weight. Scanned users' keyword
//! candidates are the turns with the best weighted share of the query's terms, and the
//! turns on either side of them.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::lookups::{Scanned, TableLookup};
use super::terms::{RECENT_TURNS, Terms};
use super::when::Window;
use super::{Parts, SearchQuery, SearchResult};
use crate::configuration::SearchSettings;
use crate::domain::{ResultKind, Role, TenantId};
use crate::models::Embedding;
use crate::user_indexes::Indexed;

/// What a query term found only in a neighbouring turn of the same session counts, as a
/// share of its weight.
const NEIGHBOUR_SHARE: f64 = 0.5;

/// One search of a user's raw turns.
pub struct EventLookup<'a> {
    tenant: &'a TenantId,
    query: &'a SearchQuery,
    vector: &'a Embedding,
    terms: &'a Terms,
    phrase: Option<Window>,
    candidates: usize,
    scan_limit: u32,
}

impl TableLookup for EventLookup<'_> {
    const TABLE: Indexed = Indexed::Events;

    fn user(&self) -> (&TenantId, &str) {
        (self.tenant, self.query.user.as_str())
    }

    fn dims(&self) -> usize {
        self.vector.dims()
    }

    async fn scan(&self, conn: &mut PgConnection) -> sqlx::Result<Option<Scanned>> {
        EventLookup::scan(self, conn).await
    }

    async fn indexed(&self, conn: &mut PgConnection) -> sqlx::Result<Scanned> {
        let results = EventLookup::indexed(self, conn).await?;
        Ok(Scanned { results, weights: None })
    }
}

/// id, content, time, role, session, similarity, keyword share, rows scanned, the
/// weights of the query's terms.
type EventRow = (Uuid, String, DateTime<Utc>, Role, String, f64, f64, i64, Vec<f64>);

/// Within `since`/`until` (`$6`, `$7`).
const INSIDE: &str = "($6::timestamptz IS NULL OR created_at >= $6) AND ($7::timestamptz IS NULL OR created_at < $7)";

/// Holds at least one of the query's terms that find candidates: the form the text
/// indexes serve, which a plan made for the lookup's words reads them with.
const MATCHES: &str = "(($5 <> '' AND content_tsv @@ to_tsquery('simple', $5)) OR content ILIKE ANY($11))";

/// The same for a scan's cached generic plan, which would otherwise parse the query's
/// words again for every turn it reads: parsed once, before the scan.
const MATCHES_ONCE: &str =
    "(($5 <> '' AND content_tsv @@ (SELECT to_tsquery('simple', $5))) OR content ILIKE ANY($11))";

impl<'a> EventLookup<'a> {
    pub fn new(
        tenant: &'a TenantId,
        query: &'a SearchQuery,
        vector: &'a Embedding,
        terms: &'a Terms,
        phrase: Option<Window>,
        settings: &SearchSettings,
    ) -> Self {
        let candidates = super::candidates(query.limit, settings);
        Self { tenant, query, vector, terms, phrase, candidates, scan_limit: settings.scan_limit }
    }

    /// The columns of a candidate, its similarity to `query` (the query vector as a
    /// `halfvec` of the lookup's dimension).
    fn columns(&self, query: &str) -> String {
        let dims = self.vector.dims();
        format!(
            "id, content, content_tsv, created_at, seq, role, session_id,
             CASE WHEN embedding_dims = {dims} THEN 1 - (embedding::halfvec({dims}) <=> {query}) ELSE 0 END AS similarity"
        )
    }

    /// The query vector as the index way's statements write it: a plan made for the
    /// lookup folds it into a constant, and the HNSW index sees its own expression.
    fn query_vector(&self) -> String {
        format!("$3::vector::halfvec({})", self.vector.dims())
    }

    /// The candidates `c` ranked with their keyword share, each with its neighbours `p`
    /// (before) and `n` (after) joined by `neighbours` (their `content` and `content_tsv`,
    /// null where there is none). `with` ends in one named `candidates` with a `scanned`
    /// count, after the terms' weights (`weights`, then [`SHARES`]).
    fn ranked(&self, with: &str, neighbours: &str) -> String {
        format!(
            "WITH {with}
             SELECT c.id, c.content, c.created_at, c.role, c.session_id, c.similarity, {share}::float8, c.scanned,
                    (SELECT coalesce(array_agg(w ORDER BY n), '{{}}') FROM weights)
               FROM candidates c {neighbours}",
            share = window_share()
        )
    }

    /// The user's turns read once; `None` when there are more than `search.scan_limit`.
    /// The query's terms are weighed over the latest of them in the same statement
    /// ([`super::terms::weights_sql`]), and the weights come back with the turns.
    /// The statement's plan is generic and cached, so what depends only on the query
    /// (its vector as a `halfvec`, its words as a `tsquery`) is computed once, before
    /// the scan, not once per turn (a third of the statement's time).
    pub async fn scan(&self, conn: &mut PgConnection) -> sqlx::Result<Option<Scanned>> {
        let sql = self.ranked(
            &format!(
                "mine AS MATERIALIZED (
                    SELECT {columns} FROM events WHERE tenant_id = $1 AND user_id = $2 LIMIT {limit}
                 ), recent AS MATERIALIZED (
                    SELECT lower(content) AS content FROM mine ORDER BY created_at DESC LIMIT {RECENT_TURNS}
                 ), weights AS MATERIALIZED ({weights}), {SHARES}, turns AS MATERIALIZED (
                    SELECT m.*, lag(id) OVER w AS prev_id, lead(id) OVER w AS next_id,
                           {INSIDE} AS inside,
                           CASE WHEN {MATCHES_ONCE} THEN {own} ELSE 0 END AS own
                      FROM mine m WINDOW w AS (PARTITION BY session_id ORDER BY created_at, seq)
                 ), matched AS (
                    SELECT id, prev_id, next_id FROM turns WHERE inside AND own > 0
                     ORDER BY own DESC, created_at DESC LIMIT $4
                 ), chosen AS (
                    (SELECT id FROM turns WHERE inside ORDER BY similarity DESC LIMIT $4)
                    UNION SELECT id FROM matched UNION SELECT prev_id FROM matched UNION SELECT next_id FROM matched
                    UNION (SELECT id FROM turns WHERE inside AND created_at >= $9 AND created_at < $10
                            ORDER BY similarity DESC LIMIT $4)
                 ), candidates AS (
                    -- A user with more turns than a scan reads shows it by the one past it,
                    -- whatever the window leaves.
                    SELECT t.*, (SELECT count(*) FROM mine) AS scanned FROM turns t
                     WHERE (t.inside AND t.id IN (SELECT id FROM chosen)) OR t.id IN (SELECT id FROM mine OFFSET {scan_limit})
                 )",
                columns = self.columns(&format!("(SELECT {})", self.query_vector())),
                scan_limit = self.scan_limit,
                limit = self.scan_limit as i64 + 1,
                weights = super::terms::weights_sql("$15"),
                own = own_share("m"),
            ),
            "LEFT JOIN turns p ON p.id = c.prev_id LEFT JOIN turns n ON n.id = c.next_id",
        );
        let mut rows = self.fetch(conn, sql).await?;
        if rows.iter().any(|row| row.7 > self.scan_limit as i64) {
            return Ok(None);
        }
        let weights = rows.first_mut().map(|row| std::mem::take(&mut row.8));
        Ok(Some(Scanned { results: results(rows), weights }))
    }

    /// The nearest from the HNSW index, the keyword matches from the text indexes, each
    /// with its neighbours looked up through the session index.
    pub async fn indexed(&self, conn: &mut PgConnection) -> sqlx::Result<Vec<SearchResult>> {
        let (query, dims) = (self.query_vector(), self.vector.dims());
        let columns = self.columns(&query);
        let filter = format!("tenant_id = $1 AND user_id = $2 AND {INSIDE}");
        let nearest = |window: &str| {
            format!(
                "SELECT * FROM (SELECT {columns} FROM events WHERE {filter} AND embedding_dims = {dims} {window}
                  ORDER BY embedding::halfvec({dims}) <=> {query} LIMIT $4)"
            )
        };
        let in_phrase = match self.phrase {
            Some(_) => format!("UNION {} p", nearest("AND created_at >= $9 AND created_at < $10")),
            None => String::new(),
        };
        let neighbour = |before: bool| {
            let (cmp, order) = if before { ("<", "DESC") } else { (">", "ASC") };
            format!(
                "SELECT e.content, e.content_tsv FROM events e
                  WHERE e.tenant_id = $1 AND e.user_id = $2 AND e.session_id = c.session_id
                    AND (e.created_at, e.seq) {cmp} (c.created_at, c.seq)
                  ORDER BY e.created_at {order}, e.seq {order} LIMIT 1"
            )
        };
        let sql = self.ranked(
            &format!(
                "{given}, {SHARES},
                 candidates AS (
                    SELECT *, 0::bigint AS scanned FROM (
                        {} v
                        UNION
                        SELECT * FROM (SELECT {columns} FROM events WHERE {filter} AND {MATCHES}
                          ORDER BY CASE WHEN $5 <> '' THEN ts_rank(content_tsv, to_tsquery('simple', $5)) END DESC NULLS LAST
                          LIMIT $4) k
                        {in_phrase}) c
                 )",
                nearest(""),
                given = super::terms::given_weights_sql("$16"),
            ),
            &format!(
                "LEFT JOIN LATERAL ({}) p ON true LEFT JOIN LATERAL ({}) n ON true",
                neighbour(true),
                neighbour(false)
            ),
        );
        Ok(results(self.fetch(conn, sql).await?))
    }

    async fn fetch(&self, conn: &mut PgConnection, sql: String) -> sqlx::Result<Vec<EventRow>> {
        let (words, word_positions, like_terms, like_positions) = self.terms.for_turns();
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
            .bind(&word_positions)
            .bind(&like_positions)
            .bind(self.terms.escaped())
            .bind(&self.terms.weights)
            .fetch_all(conn)
            .await
    }
}

/// SQL: the query's terms as a statement's turns are matched with, from its `weights`
/// (`(n, w)`: each term's position in the query and its weight): the Latin ones (`$8`,
/// positions `$13`) as `to_tsquery` expressions in `words`, the unspaced ones (`$12`,
/// positions `$14`) `ILIKE`-escaped in `unspaced`, their weights summing to 1 over both.
const SHARES: &str = "normalised AS (SELECT n, w / nullif(sum(w) OVER (), 0) AS w FROM weights),
     words AS MATERIALIZED (
        SELECT to_tsquery('simple', q) AS q, x.w FROM unnest($8::text[], $13::int8[]) u(q, n) JOIN normalised x USING (n)
     ), unspaced AS MATERIALIZED (
        SELECT q, x.w FROM unnest($12::text[], $14::int8[]) u(q, n) JOIN normalised x USING (n)
     )";

/// SQL: the weights of the query's terms the turn `t` holds: a Latin term (`words`) where
/// the turn has a word it begins (`paint` finds "painting", `go` not "ago"), an unspaced
/// one (`unspaced`) as a substring.
fn own_share(t: &str) -> String {
    format!(
        "((SELECT coalesce(sum(w), 0) FROM words WHERE {t}.content_tsv @@ q)
          + (SELECT coalesce(sum(w), 0) FROM unspaced WHERE {t}.content ILIKE '%' || q || '%'))"
    )
}

/// SQL: the keyword share of the candidate `c` read with its neighbours `p` and `n`: each
/// term's weight where `c` holds it, [`NEIGHBOUR_SHARE`] of it where only a neighbour does.
fn window_share() -> String {
    let part = |terms: &str, holds: &dyn Fn(&str) -> String| {
        format!(
            "(SELECT coalesce(sum(w * CASE WHEN {own} THEN 1 WHEN coalesce({prev} OR {next}, false) THEN {NEIGHBOUR_SHARE} ELSE 0 END), 0)
                FROM {terms})",
            own = holds("c"),
            prev = holds("p"),
            next = holds("n"),
        )
    };
    format!(
        "({} + {})",
        part("words", &|t| format!("{t}.content_tsv @@ q")),
        part("unspaced", &|t| format!("{t}.content ILIKE '%' || q || '%'")),
    )
}

fn results(rows: Vec<EventRow>) -> Vec<SearchResult> {
    rows.into_iter()
        .map(|(id, content, created_at, role, session_id, similarity, keyword, ..)| SearchResult {
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
