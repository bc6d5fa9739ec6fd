//! Raw turns in search (episodic memory): the user's events nearest the query by
//! meaning, those containing its words, and — when the query names a time — the
//! nearest within that window. Two ways, as for memories ([`super::query`]): a user with
//! at most `search.scan_limit` events has them read once on a connection with cached
//! generic plans, and what to keep is chosen in the service ([`choice`]); a user with
//! more is looked up through the HNSW index over event vectors and the text indexes,
//! planned per lookup.
//!
//! A turn is read with its neighbours in its session, because an answer often makes
//! sense only beside the question it answers ("What did you paint?" — "A sunrise by the
//! lake."): its vector is made from the turn before it and itself
//! ([`crate::ingest::vectors`]), and a query term found not in the turn but in the turn
//! before or after it counts half its weight. Scanned users' keyword candidates are the
//! turns with the best weighted share of the query's terms, and the turns on either side
//! of them.

mod choice;

use sqlx::PgConnection;

use super::lookups::{Scanned, TableLookup};
use super::terms::RECENT_TURNS;
use super::{SearchQuery, SearchResult};
use crate::user_indexes::Indexed;
use choice::{Turn, TurnRow, TurnTerms};
use engram_base::configuration::SearchSettings;
use engram_base::domain::TenantId;
use engram_base::models::Embedding;
use engram_language::terms::Terms;
use engram_language::when::Window;

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

/// The user's rows, by the parameters `$1` and `$2`.
const OWNER: &str = "tenant_id = $1 AND user_id = $2";

/// Within `since`/`until` (`$6`, `$7`).
const INSIDE: &str = "($6::timestamptz IS NULL OR created_at >= $6) AND ($7::timestamptz IS NULL OR created_at < $7)";

/// Holds at least one of the query's terms that find candidates: the form the text
/// indexes serve, which a plan made for the lookup's words reads them with.
const MATCHES: &str = "(($5 <> '' AND content_tsv @@ to_tsquery('simple', $5)) OR content ILIKE ANY($10))";

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

    /// The columns of a turn `t` as [`TurnRow`] reads them: its similarity to `query`
    /// (the query vector as a `halfvec` of the lookup's dimension), and its lexemes
    /// when it holds one of the Latin terms of the parameter `latin`.
    fn columns(&self, t: &str, query: &str, latin: &str) -> String {
        let dims = self.vector.dims();
        format!(
            "{t}.id, {t}.content, {t}.created_at, {t}.seq, {t}.role, {t}.session_id,
             CASE WHEN {t}.embedding_dims = {dims} THEN 1 - ({t}.embedding::halfvec({dims}) <=> {query}) ELSE 0 END AS similarity,
             {} AS lexemes",
            lexemes(t, latin)
        )
    }

    /// The query vector as the index way's statements write it: a plan made for the
    /// lookup folds it into a constant, and the HNSW index sees its own expression.
    fn query_vector(&self) -> String {
        format!("$3::vector::halfvec({})", self.vector.dims())
    }

    /// The user's turns read once; `None` when there are more than `search.scan_limit`.
    /// The statement is a plain read of the user's rows (its plan generic and cached;
    /// what depends only on the query is computed once, before the read): the query's
    /// terms are weighed over the latest of them, and what to keep chosen, in the service.
    pub async fn scan(&self, conn: &mut PgConnection) -> sqlx::Result<Option<Scanned>> {
        let sql = format!(
            "SELECT {} FROM events e WHERE tenant_id = $1 AND user_id = $2 LIMIT {}",
            self.columns("e", &format!("(SELECT {})", self.query_vector()), "$4"),
            self.scan_limit as i64 + 1,
        );
        let rows: Vec<TurnRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(self.tenant.as_str())
            .bind(self.query.user.as_str())
            .bind(self.vector.to_pgvector())
            .bind(self.terms.latin_tsquery())
            .fetch_all(conn)
            .await?;
        if rows.len() > self.scan_limit as usize {
            return Ok(None);
        }
        let turns: Vec<Turn> = rows.into_iter().map(Turn::from).collect();
        let weights = self.weigh(&turns);
        let terms = TurnTerms::new(&self.terms.all, &weights);
        let window = (self.query.since, self.query.until);
        let results = choice::choose(turns, &terms, window, self.phrase, self.candidates);
        Ok(Some(Scanned { results, weights: Some(weights) }))
    }

    /// The query's terms weighed over the latest [`RECENT_TURNS`] of `turns`, as
    /// [`super::terms::weights_sql`] weighs them (one term weighs all there is).
    fn weigh(&self, turns: &[Turn]) -> Vec<f64> {
        if self.terms.all.len() < 2 {
            return vec![1.0; self.terms.all.len()];
        }
        let mut latest: Vec<&Turn> = turns.iter().collect();
        latest.sort_by_key(|t| std::cmp::Reverse((t.created_at, t.seq)));
        let recent: Vec<String> = latest.iter().take(RECENT_TURNS as usize).map(|t| t.content.to_lowercase()).collect();
        engram_language::terms::weigh_turns(&self.terms.all, &recent)
    }

    /// The nearest from an HNSW index (the user's own when they have one: the plan sees
    /// their ids) and the keyword matches from the text indexes or the user's rows, in
    /// one statement planned for the lookup.
    pub async fn indexed(&self, conn: &mut PgConnection) -> sqlx::Result<Vec<SearchResult>> {
        let sql = self.statement(&self.keyword_matches(&self.columns("events", &self.query_vector(), "$11")));
        let rows: Vec<IndexedRow> = self.bound(&sql).fetch_all(conn).await?;
        Ok(self.results(rows))
    }

    /// SQL: the user's turns holding the query's words, the best ranked first, as
    /// `columns` of `events`.
    fn keyword_matches(&self, columns: &str) -> String {
        format!(
            "SELECT * FROM (SELECT {columns} FROM events WHERE {OWNER} AND {INSIDE} AND {MATCHES}
              ORDER BY CASE WHEN $5 <> '' THEN ts_rank(content_tsv, to_tsquery('simple', $5)) END DESC NULLS LAST
              LIMIT $4) k"
        )
    }

    /// SQL: the user's nearest turns (and, with a time phrase, the nearest said in its
    /// window), with the rows of `keyword`, each with the content and lexemes of the
    /// turns before and after it in its session.
    fn statement(&self, keyword: &str) -> String {
        let (query, dims, candidates) = (self.query_vector(), self.vector.dims(), self.candidates);
        let columns = self.columns("events", &query, "$11");
        // The limit in so many words as well: a generic plan that does not know it
        // assumes a tenth of the user's rows and may sort them all rather than walk the index.
        let nearest = |window: &str| {
            format!(
                "SELECT * FROM (SELECT {columns} FROM events WHERE {OWNER} AND {INSIDE} AND embedding_dims = {dims} {window}
                  ORDER BY embedding::halfvec({dims}) <=> {query} LIMIT {candidates})"
            )
        };
        let in_phrase = match self.phrase {
            Some(_) => format!("UNION {} p", nearest("AND created_at >= $8 AND created_at < $9")),
            None => String::new(),
        };
        let neighbour = |before: bool| {
            let (cmp, order) = if before { ("<", "DESC") } else { (">", "ASC") };
            format!(
                "SELECT e.content, {} AS lexemes FROM events e
                  WHERE e.tenant_id = $1 AND e.user_id = $2 AND e.session_id = c.session_id
                    AND (e.created_at, e.seq) {cmp} (c.created_at, c.seq)
                  ORDER BY e.created_at {order}, e.seq {order} LIMIT 1",
                lexemes("e", "$11")
            )
        };
        format!(
            "SELECT c.*, p.content, p.lexemes, n.content, n.lexemes FROM ({} v UNION {keyword} {in_phrase}) c
             LEFT JOIN LATERAL ({}) p ON true LEFT JOIN LATERAL ({}) n ON true",
            nearest(""),
            neighbour(true),
            neighbour(false)
        )
    }

    /// The statement `sql` with the index way's parameters bound.
    fn bound<'q, R>(&self, sql: &'q str) -> sqlx::query::QueryAs<'q, sqlx::Postgres, R, sqlx::postgres::PgArguments>
    where
        'a: 'q,
        R: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>,
    {
        sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(self.tenant.as_str())
            .bind(self.query.user.as_str())
            .bind(self.vector.to_pgvector())
            .bind(self.candidates as i64)
            .bind(&self.terms.tsquery)
            .bind(self.query.since)
            .bind(self.query.until)
            .bind(self.phrase.map(|w| w.since))
            .bind(self.phrase.map(|w| w.until))
            .bind(&self.terms.like_patterns)
            .bind(self.terms.latin_tsquery())
    }

    /// The index way's rows as results, each with its keyword share counting its neighbours'.
    fn results(&self, rows: Vec<IndexedRow>) -> Vec<SearchResult> {
        let terms = TurnTerms::new(&self.terms.all, &self.terms.weights);
        let held = |content: Option<String>, lexemes: Option<Vec<String>>| match content {
            Some(content) => terms.held(lexemes.as_deref(), &content),
            None => 0,
        };
        rows.into_iter()
            .map(
                |(
                    id,
                    content,
                    created_at,
                    seq,
                    role,
                    session_id,
                    similarity,
                    lexemes,
                    before,
                    before_lexemes,
                    after,
                    after_lexemes,
                )| {
                    let turn = Turn::from((id, content, created_at, seq, role, session_id, similarity, lexemes));
                    let own = terms.held(turn.lexemes.as_deref(), &turn.content);
                    let keyword = terms.share(own, held(before, before_lexemes) | held(after, after_lexemes));
                    turn.result((keyword, terms.share(own, 0)))
                },
            )
            .collect()
    }
}

/// A turn as the index way reads it ([`TurnRow`]), with the content and lexemes of the
/// turns before and after it in its session.
type IndexedRow = (
    uuid::Uuid,
    String,
    chrono::DateTime<chrono::Utc>,
    i64,
    engram_base::domain::Role,
    String,
    f64,
    Option<Vec<String>>,
    Option<String>,
    Option<Vec<String>>,
    Option<String>,
    Option<Vec<String>>,
);

/// SQL: the lexemes of the turn `t` when it holds one of the Latin terms of the parameter
/// `latin` (a `to_tsquery` expression OR-ing them, '' for none), parsed once per
/// statement; null else, which holds none of them.
fn lexemes(t: &str, latin: &str) -> String {
    format!(
        "CASE WHEN {latin} <> '' AND {t}.content_tsv @@ (SELECT to_tsquery('simple', {latin})) THEN tsvector_to_array({t}.content_tsv) END"
    )
}
