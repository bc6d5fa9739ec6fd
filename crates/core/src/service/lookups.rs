//! The lookups agents make on every turn: search and the context block. Both count
//! `engram_lookups_total` and time themselves.

use std::time::Instant;

use super::input::Params;
use super::{AppState, Error, scopes};
use crate::context::{self, ContextRequest, ContextResponse};
use crate::search::{SearchQuery, SearchRequest, SearchResponse};
use engram_base::auth::Principal;
use engram_base::domain::{ResultKind, SessionId, ValidationError};

/// A search, counted and timed.
pub async fn search(state: &AppState, principal: &Principal, request: SearchRequest) -> Result<SearchResponse, Error> {
    let started = Instant::now();
    scopes::user(principal, request.user_id.as_str())?;
    let query = SearchQuery::parse(request, &state.settings.search, state.embedder.dims())?;
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

/// The parameters of a context: `query`, `max_tokens`, `session_id`.
pub const CONTEXT_PARAMS: &[&str] = &["query", "max_tokens", "session_id"];

/// The context block for a token budget, counted and timed.
pub async fn context(
    state: &AppState,
    principal: &Principal,
    user: String,
    params: &Params,
) -> Result<ContextResponse, Error> {
    let started = Instant::now();
    let user = scopes::user(principal, user)?;
    let limits = &state.settings.search;
    let max_tokens =
        params.int("max_tokens", limits.context_default_tokens as i64, 1..=limits.context_max_tokens as i64)? as usize;
    let session = params
        .text("session_id")
        .map(|s| SessionId::parse(s.to_owned()).map_err(|e| ValidationError::new("session_id", e.message)))
        .transpose()?;
    let request = ContextRequest { user: &user, query: params.text("query"), session: session.as_ref(), max_tokens };
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
