//! The lookups agents make on every turn: search and the context block. Both count
//! `engram_lookups_total` and time themselves.

use std::time::Instant;

use serde::Deserialize;

use super::input::Int;
use super::{AppState, Error, scopes};
use crate::context::{self, ContextRequest, ContextResponse};
use crate::search::{SearchQuery, SearchRequest, SearchResponse};
use engram_base::auth::Principal;
use engram_base::domain::{ResultKind, SessionId, UserId};

/// A search, counted and timed.
pub async fn search(state: &AppState, principal: &Principal, request: SearchRequest) -> Result<SearchResponse, Error> {
    let started = Instant::now();
    scopes::reach(principal, &request.user_id)?;
    let settings = &state.settings.search;
    let query = SearchQuery::parse(request, settings, state.embedder.dims(), state.ranker.min_score(settings))?;
    let results = state.lookup().search(&principal.tenant, &query).await?;
    if query.relations {
        state.metrics.graph_walks.inc();
        let reached = results.iter().filter(|r| r.kind == ResultKind::Relation).count();
        state.metrics.graph_reached.observe(reached as f64);
    }
    let hit = !results.is_empty();
    let elapsed = started.elapsed().as_secs_f64();
    state.metrics.lookup("search", hit, elapsed);
    Ok(SearchResponse { results, hit, took_ms: elapsed * 1000.0 })
}

/// What a context is for (`GET /v1/users/{user_id}/context`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextQuery {
    /// What the agent is about to answer.
    pub query: Option<String>,
    /// The block's token budget: 1 to `search.context_max_tokens`.
    pub max_tokens: Option<Int>,
    /// The current session: its latest turns open the block.
    pub session_id: Option<SessionId>,
}

/// The context block for a token budget, counted and timed.
pub async fn context(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    query: ContextQuery,
) -> Result<ContextResponse, Error> {
    let started = Instant::now();
    scopes::reach(principal, user)?;
    let limits = &state.settings.search;
    let budget = 1..=limits.context_max_tokens as i64;
    let max_tokens =
        Int::within(query.max_tokens, "max_tokens", limits.context_default_tokens as i64, budget)? as usize;
    let text = query.query.as_deref().filter(|q| !q.is_empty());
    let request = ContextRequest { user, query: text, session: query.session_id.as_ref(), max_tokens };
    let (context, hit) = context::build(&state.db, &state.lookup(), &principal.tenant, &request).await?;
    if request.query.is_some() {
        state.metrics.graph_walks.inc();
        let reached = context.items.iter().filter(|i| i.section == "relations").count();
        state.metrics.graph_reached.observe(reached as f64);
    }
    let elapsed = started.elapsed().as_secs_f64();
    state.metrics.lookup("context", hit, elapsed);
    Ok(ContextResponse { context, took_ms: elapsed * 1000.0 })
}
