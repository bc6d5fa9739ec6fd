//! Hybrid search over every tier of memory: facts and insights (semantic memory), raw
//! turns (episodic memory), session and period summaries, and the graph's relations.
//! Each tier's candidates are its nearest rows by cosine distance (pgvector) and its
//! keyword matches (PostgreSQL text search, with substring bigrams for CJK), twice the
//! requested `limit` of each (at least 10, at most `search.candidates`). Every candidate
//! is then ordered on one scale by the ranker (`search.ranker`, see [`ranker`]):
//!
//! - **learned**: the probability that the candidate is evidence for the
//!   question, from a logistic model over its [`features`] (similarity, keyword share,
//!   tier and speaker, recency, the question's time and names, …) fitted on labelled
//!   evidence;
//! - **blend** (the default): the hand-set scale below.
//!
//! ```text
//! similarity = cosine similarity of query and result embeddings
//! keyword    = weighted share of the query's terms the result contains (0..1), rare terms
//!              weighing more (see [`terms`]); a raw turn also counts half of those only
//!              the turn before or after it holds (see `events`)
//! relevance  = 1 − (1 − max(similarity, 0)) × (1 − keyword)   — either may be enough, keywords
//!              only ever help, and both together count for more than either
//! tier       = facts, insights: 0.8 + 0.2 × decay (engram_decay(), 0..1)
//!              raw turns:       search.event_weight (0.8) for the user's own, that ×
//!                               search.other_turn_weight (0.8) for the assistant's, a
//!                               tool's or the system's: memory is about the user, and
//!                               the other side's turns often name them without being
//!                               about them
//!              summaries:       1
//!              relations:       graph.relation_weight (0.85) × (1 + graph) / 2, graph =
//!                               how surely the walk reached it (1 for an edge of an entity
//!                               the query names, × graph.hop_decay per further hop); their
//!                               similarity is the mean of that to the query and to what it
//!                               asks of the entities it names (the query without their names:
//!                               "张伟用的什么数据库" → "用的什么数据库"), their keyword share that
//!                               of the latter (see `crate::graph::retrieve`)
//! time       = 1, or search.outside_window_weight (0.7) for a result outside the window
//!              of a time phrase in the query ("last week", "in May", "上周"; see `when`)
//! blend      = relevance × tier × time
//! ```
//!
//! so under the blend decay moves a memory's score by at most 20%: an old but relevant
//! fact still ranks.
//! Terms and vector are those of the query without the names every memory of the user is
//! about: their own, and those of the people their sessions are between (see [`names`]).
//! Scores are absolute (not rank-based like reciprocal rank fusion), which is what
//! lets `min_score` and the hit/miss metric mean the same thing for every query;
//! `explain: true` returns each result's parts, its features and, learned, each term's
//! contribution. Every turn takes one slot: a fact and
//! the turn it came from (or two facts of one turn) never both appear; whichever scores
//! higher is kept (the fact on a tie), and a fact's `source_event_ids` still name the turn. `since`/`until` filter every tier by when
//! it happened (a turn's time, a memory's `valid_from`, a summary's span).
//! Lookups are read-only SQL; access statistics go through [`crate::access`].

mod events;
mod facts;
pub mod features;
mod lookups;
mod names;
pub mod present;
mod query;
pub mod ranker;
pub mod relations;
mod rerank;
mod score;
mod summaries;
pub use lookups::{candidates, has_own_index};
pub mod terms;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use engram_base::configuration::SearchSettings;
use engram_base::domain::{Category, Kind, ResultKind, Role, UserId, ValidationError};
use engram_base::models::Embedding;

pub use lookups::Lookups;
pub use query::{SearchError, run};
pub use ranker::Ranker;
pub use score::{Explanation, Parts, Tier};

/// `POST /v1/search` as the client sends it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    #[schema(value_type = String)]
    pub user_id: UserId,
    #[serde(default)]
    pub query: String,
    pub limit: Option<i64>,
    pub min_score: Option<f64>,
    pub categories: Option<Vec<Category>>,
    pub kinds: Option<Vec<ResultKind>>,
    pub as_of: Option<String>,
    /// Only what happened at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Only what happened before this time (RFC 3339).
    pub until: Option<String>,
    /// A query vector the client computed itself, with the configured dimension.
    pub embedding: Option<Vec<f32>>,
    /// Adds `explanation` to every result: the parts of its score.
    #[serde(default)]
    pub explain: bool,
}

/// A validated search.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    pub user: UserId,
    pub text: String,
    pub limit: usize,
    pub min_score: f64,
    pub categories: Option<Vec<String>>,
    /// `fact` and/or `insight`.
    pub memory_kinds: Vec<Kind>,
    pub session_summaries: bool,
    pub period_summaries: bool,
    pub events: bool,
    pub relations: bool,
    pub as_of: Option<DateTime<Utc>>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub embedding: Option<Embedding>,
    pub explain: bool,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SearchResult {
    pub id: String,
    pub kind: ResultKind,
    /// A memory's category (`fact` and `insight` results).
    pub category: Option<Category>,
    pub key: Option<String>,
    pub content: String,
    pub score: f64,
    pub similarity: f64,
    pub updated_at: DateTime<Utc>,
    pub source_event_ids: Vec<Uuid>,
    /// When a raw turn was said (`event` results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// Who said a raw turn (`event` results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// The session of a raw turn (`event` results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// A relation's predicate, such as `works_at` (`relation` results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicate: Option<String>,
    /// The sentence that states a relation (`relation` results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fact: Option<String>,
    /// The chain from an entity the query named to a relation (`relation` results):
    /// `张伟 —colleague→ 李明 —leads→ 电商项目`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The parts of `score`, with `explain: true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
    #[serde(skip)]
    pub parts: Parts,
}

impl SearchResult {
    /// A result of `kind` scored by `parts` (its similarity theirs), none of the fields
    /// only some kinds have set.
    pub fn new(
        id: String,
        kind: ResultKind,
        content: String,
        updated_at: DateTime<Utc>,
        source_event_ids: Vec<Uuid>,
        parts: Parts,
    ) -> Self {
        Self {
            id,
            kind,
            category: None,
            predicate: None,
            key: None,
            content,
            score: 0.0,
            similarity: parts.similarity,
            updated_at,
            source_event_ids,
            created_at: None,
            role: None,
            session_id: None,
            fact: None,
            path: None,
            explanation: None,
            parts,
        }
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SearchResponse {
    pub results: Vec<SearchResult>,
    pub hit: bool,
    pub took_ms: f64,
}

impl SearchQuery {
    /// The lookup `/context` makes for `text`: the best facts, insights and raw turns
    /// down to the context's floor (`search.context_min_score`, or the ranker's), as
    /// many as a lookup may return (the block keeps what fits its budget).
    pub fn for_context(user: UserId, text: &str, lookup: &Lookup<'_>) -> Result<Self, ValidationError> {
        let limits = lookup.settings;
        let request = SearchRequest {
            user_id: user.clone(),
            query: text.to_owned(),
            limit: Some(limits.max_limit as i64),
            min_score: Some(lookup.ranker.context_min_score(limits)),
            categories: None,
            kinds: Some(vec![ResultKind::Fact, ResultKind::Insight, ResultKind::Event]),
            as_of: None,
            since: None,
            until: None,
            embedding: None,
            explain: false,
        };
        Self::parse(request, limits, lookup.embedder.dims(), lookup.ranker.min_score(limits))
    }

    /// A request as a lookup; `default_min_score` applies when it names none.
    pub fn parse(
        request: SearchRequest,
        limits: &SearchSettings,
        dims: usize,
        default_min_score: f64,
    ) -> Result<Self, ValidationError> {
        let user = request.user_id;
        let text = request.query.trim().to_owned();
        if text.is_empty() && request.embedding.is_none() {
            return Err(ValidationError::new("query", "must not be empty"));
        }
        if text.chars().count() > limits.max_query_chars {
            return Err(ValidationError::new(
                "query",
                format!("must be at most {} characters", limits.max_query_chars),
            ));
        }
        let limit = request.limit.unwrap_or(limits.default_limit as i64);
        if !(1..=limits.max_limit as i64).contains(&limit) {
            return Err(ValidationError::new("limit", format!("must be between 1 and {}", limits.max_limit)));
        }
        let min_score = request.min_score.unwrap_or(default_min_score);
        if !(0.0..=1.0).contains(&min_score) {
            return Err(ValidationError::new("min_score", "must be between 0 and 1"));
        }
        let kinds = request.kinds.unwrap_or_else(|| vec![ResultKind::Fact, ResultKind::Insight]);
        if kinds.is_empty() {
            return Err(ValidationError::new("kinds", "must not be empty"));
        }
        let time = |field: &'static str, value: Option<String>| {
            value
                .map(|t| DateTime::parse_from_rfc3339(&t).map(|t| t.with_timezone(&Utc)))
                .transpose()
                .map_err(|_| ValidationError::new(field, "must be an RFC 3339 timestamp"))
        };
        let as_of = time("as_of", request.as_of)?;
        let (since, until) = (time("since", request.since)?, time("until", request.until)?);
        if let (Some(since), Some(until)) = (since, until)
            && until <= since
        {
            return Err(ValidationError::new("until", "must be later than since"));
        }
        let embedding = request
            .embedding
            .map(|values| Embedding::new(values, dims))
            .transpose()
            .map_err(|err| ValidationError::new("embedding", err.to_string()))?;
        Ok(Self {
            user,
            text,
            limit: limit as usize,
            min_score,
            categories: request
                .categories
                .filter(|c| !c.is_empty())
                .map(|c| c.into_iter().map(|c| c.as_str().to_owned()).collect()),
            memory_kinds: kinds.iter().filter_map(|k| k.memory()).collect(),
            session_summaries: kinds.contains(&ResultKind::SessionSummary),
            period_summaries: kinds.contains(&ResultKind::PeriodSummary),
            events: kinds.contains(&ResultKind::Event),
            relations: kinds.contains(&ResultKind::Relation),
            as_of,
            since,
            until,
            embedding,
            explain: request.explain,
        })
    }
}

/// What a lookup needs besides the query: the read connections, the embedder, the
/// settings and decay it ranks by, the clock, and the recorder of access statistics.
pub struct Lookup<'a> {
    pub lookups: &'a Lookups,
    pub embedder: &'a engram_base::models::Embedder,
    pub settings: &'a SearchSettings,
    pub decay: &'a crate::memories::decay::DecayParams,
    pub graph: &'a crate::graph::Graph,
    pub access: &'a crate::access::AccessRecorder,
    /// The rerank stage, if one is configured ([`rerank`]).
    pub reranker: Option<&'a engram_base::models::Reranker>,
    /// How candidates are ordered ([`ranker`]).
    pub ranker: &'a Ranker,
    pub now: DateTime<Utc>,
}

impl Lookup<'_> {
    /// Runs `query` and records the memories it served (access statistics, buffered).
    pub async fn search(
        &self,
        tenant: &engram_base::domain::TenantId,
        query: &SearchQuery,
    ) -> Result<Vec<SearchResult>, SearchError> {
        let results = run(self, tenant, query).await?;
        let served = results.iter().filter(|r| r.kind.memory().is_some()).filter_map(|r| r.id.parse::<Uuid>().ok());
        self.access.record(tenant, &query.user, served, self.now);
        Ok(results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: serde_json::Value) -> Result<SearchQuery, ValidationError> {
        let request = serde_path_to_error::deserialize(json)
            .map_err(|err| ValidationError::new(err.path().to_string(), err.inner().to_string()))?;
        SearchQuery::parse(request, &SearchSettings::default(), 3, 0.3)
    }

    #[test]
    fn bad_fields_are_named() {
        let cases = [
            (serde_json::json!({"user_id": "u", "query": ""}), "query"),
            (serde_json::json!({"user_id": "u", "query": "q", "limit": 0}), "limit"),
            (serde_json::json!({"user_id": "u", "query": "q", "limit": 51}), "limit"),
            (serde_json::json!({"user_id": "u", "query": "q", "min_score": 1.5}), "min_score"),
            (serde_json::json!({"user_id": "u", "query": "q", "categories": ["gossip"]}), "categories[0]"),
            (serde_json::json!({"user_id": "u", "query": "q", "kinds": ["fact", "dream"]}), "kinds[1]"),
            (serde_json::json!({"user_id": "u", "query": "q", "as_of": "then"}), "as_of"),
            (serde_json::json!({"user_id": "u", "query": "q", "since": "last week"}), "since"),
            (serde_json::json!({"user_id": "u", "query": "q", "until": "2026-13-01T00:00:00Z"}), "until"),
            (
                serde_json::json!({"user_id": "u", "query": "q", "since": "2026-05-02T00:00:00Z", "until": "2026-05-01T00:00:00Z"}),
                "until",
            ),
            (serde_json::json!({"user_id": "u", "query": "q", "embedding": [1.0, 2.0]}), "embedding"),
            (serde_json::json!({"user_id": "", "query": "q"}), "user_id"),
            (serde_json::json!({"user_id": "u", "query": "x".repeat(2001)}), "query"),
        ];
        for (json, field) in cases {
            assert_eq!(request(json.clone()).unwrap_err().field, field, "{json}");
        }
        let ok = request(serde_json::json!({"user_id": "u", "embedding": [1.0, 0.0, 0.0]})).unwrap();
        assert_eq!(ok.memory_kinds, vec![Kind::Fact, Kind::Insight]);
    }
}
