//! The prompt-ready context block for one user: working, episodic and semantic memory
//! within one token budget ([`estimate_tokens`] per line, plus one per line for its
//! bullet and newline). Sections, in order:
//!
//! 1. **Current conversation** (with `session_id`): that session's latest turns, oldest
//!    first, within `search.context_working_share` of the budget (0.3).
//! 2. **About the user**: identity and personal facts, most important first, within
//!    `search.context_profile_share` (0.2).
//! 3. **Relations** (with `query`): chains of the user's graph from the entities the
//!    query names to the relations that answer it (`张伟 —colleague→ 李明 —leads→ 电商项目
//!    —uses→ PostgreSQL`), within `search.context_relations_share` (0.15).
//! 4. **Relevant memories** (with `query`): the facts, insights and raw turns most
//!    relevant to the query, best first (one lookup, [`crate::search`]), each line dated
//!    with when it was said, and a relative time phrase in it resolved (`[Mon 8 May
//!    2023] user: I went yesterday. (yesterday = Sun 7 May 2023)`), while the budget lasts.
//! 5. **Recent conversations**, then **Earlier periods**: the latest session and period
//!    summaries, while budget remains.
//!
//! A line already written (a turn of the current session found again by the query) is
//! not repeated; a section's unused share goes to the sections after it.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgConnection;

use crate::configuration::SearchSettings;
use crate::domain::{Kind, ResultKind, Role, SessionId, TenantId, UserId};
use crate::search::SearchResult;
pub use crate::text::estimate_tokens;

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ContextItem {
    pub id: String,
    pub kind: ResultKind,
    /// `working`, `profile`, `relations`, `relevant`, `sessions` or `periods`.
    pub section: &'static str,
    pub tokens: usize,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Context {
    pub text: String,
    pub tokens: usize,
    pub max_tokens: usize,
    pub items: Vec<ContextItem>,
}

/// `GET /v1/users/{user_id}/context`: the block and how long it took.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ContextResponse {
    #[serde(flatten)]
    pub context: Context,
    pub took_ms: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error(transparent)]
    Invalid(#[from] crate::domain::ValidationError),
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
    #[error("database error while building a context")]
    Database(#[from] sqlx::Error),
}

/// What a context is asked for.
pub struct ContextRequest<'a> {
    pub user: &'a UserId,
    pub query: Option<&'a str>,
    pub session: Option<&'a SessionId>,
    pub max_tokens: usize,
}

/// The block for a request (see the module documentation). Also says whether the query
/// found anything.
pub async fn build(
    db: &crate::db::Database,
    lookup: &crate::search::Lookup<'_>,
    tenant: &TenantId,
    request: &ContextRequest<'_>,
) -> Result<(Context, bool), ContextError> {
    let user = request.user;
    let mut tx = crate::db::begin_tenant_tx(&db.read_pool, tenant).await?;
    let working = match request.session {
        Some(session) => latest_turns(&mut tx, tenant, user, session).await?,
        None => Vec::new(),
    };
    let profile = profile(&mut tx, tenant, user).await?;
    let (sessions, periods) = recent_summaries(&mut tx, tenant, user).await?;
    tx.commit().await?;
    let relevant = match request.query {
        None => Vec::new(),
        Some(text) => {
            let query =
                crate::search::SearchQuery::for_context(user.clone(), text, lookup.settings, lookup.embedder.dims())?;
            lookup.search(tenant, &query).await?
        }
    };
    let hit = relevant.iter().any(|r| r.score >= lookup.settings.default_min_score);
    let relations = match request.query {
        Some(text) => relations(lookup, tenant, user, text, &relevant).await?,
        None => Vec::new(),
    };
    let relevant = relevant.into_iter().map(dated).collect();
    let working_budget = (lookup.settings.context_working_share * request.max_tokens as f64).floor() as usize;
    let working = latest_within(working, WORKING_HEADING, working_budget);
    let context = assemble(
        sections(lookup.settings, working, profile, relations, relevant, sessions, periods),
        request.max_tokens,
    );
    Ok((context, hit))
}

/// The relations section: the chains from the entities the query names (and those of
/// the best results' turns) to the relations that score at or above
/// `search.context_min_score`, best first; a chain another one extends is left out.
async fn relations(
    lookup: &crate::search::Lookup<'_>,
    tenant: &TenantId,
    user: &UserId,
    text: &str,
    relevant: &[SearchResult],
) -> Result<Vec<Candidate>, ContextError> {
    let vector = lookup.embedder.embed_one(text).await.map_err(crate::search::SearchError::from)?;
    let from_events: Vec<uuid::Uuid> =
        relevant.iter().take(3).flat_map(|r| r.source_event_ids.iter().copied()).collect();
    let query = crate::search::relations::RelationQuery {
        user,
        text,
        vector: Some(&vector),
        from_events: &from_events,
        as_of: None,
    };
    let mut found = crate::search::relations::search(lookup, tenant, &query).await?;
    for result in &mut found {
        result.score = result.parts.explain(lookup.settings, None).score();
    }
    found.retain(|r| r.score >= lookup.settings.context_min_score);
    found.sort_by(|a, b| b.score.total_cmp(&a.score));
    let chains: Vec<(String, String)> = found.into_iter().map(|r| (r.id, r.path.unwrap_or(r.content))).collect();
    Ok(chains
        .iter()
        .filter(|(_, chain)| {
            !chains.iter().any(|(_, other)| other.len() > chain.len() && other.starts_with(chain.as_str()))
        })
        .take(MAX_CHAINS)
        .map(|(id, chain)| Candidate { id: id.clone(), kind: ResultKind::Relation, content: chain.clone() })
        .collect())
}

/// Chains the relations section holds at most.
const MAX_CHAINS: usize = 8;

/// The sections in order, with their shares of the budget.
fn sections(
    settings: &SearchSettings,
    working: Vec<Candidate>,
    profile: Vec<Candidate>,
    relations: Vec<Candidate>,
    relevant: Vec<Candidate>,
    sessions: Vec<Candidate>,
    periods: Vec<Candidate>,
) -> Vec<Section> {
    vec![
        Section { name: "working", heading: WORKING_HEADING, share: settings.context_working_share, lines: working },
        Section {
            name: "profile",
            heading: "## About the user",
            share: settings.context_profile_share,
            lines: profile,
        },
        Section {
            name: "relations",
            heading: "## Relations",
            share: settings.context_relations_share,
            lines: relations,
        },
        Section { name: "relevant", heading: "## Relevant memories", share: 1.0, lines: relevant },
        Section { name: "sessions", heading: "## Recent conversations", share: 1.0, lines: sessions },
        Section { name: "periods", heading: "## Earlier periods", share: 1.0, lines: periods },
    ]
}

const WORKING_HEADING: &str = "## Current conversation";

/// The latest of `turns` (oldest first) that fit `budget` with their heading, oldest first.
fn latest_within(mut turns: Vec<Candidate>, heading: &str, budget: usize) -> Vec<Candidate> {
    let mut used = estimate_tokens(heading) + 2;
    let mut keep = 0;
    for turn in turns.iter().rev() {
        let tokens = estimate_tokens(&format!("- {}", turn.content.replace('\n', " "))) + 1;
        if used + tokens > budget {
            break;
        }
        used += tokens;
        keep += 1;
    }
    turns.split_off(turns.len() - keep)
}

/// A search result as a dated line: a turn with its speaker's role, a memory with the
/// time it was stated.
fn dated(result: SearchResult) -> Candidate {
    let at = result.created_at.or(result.parts.span.map(|(start, _)| start));
    let content = match (result.role, at) {
        (Some(role), Some(at)) => said(at, Some(role), &result.content),
        (None, Some(at)) => said(at, None, &result.content),
        (_, None) => result.content,
    };
    Candidate { id: result.id, kind: result.kind, content }
}

/// A dated line of what was said, with what a relative time phrase in it meant:
/// `[Mon 8 May 2023] user: I went yesterday. (yesterday = Sun 7 May 2023)`.
fn said(at: DateTime<Utc>, role: Option<Role>, content: &str) -> String {
    let line = match role {
        Some(role) => format!("{}: {content}", role.as_str()),
        None => content.to_owned(),
    };
    match crate::search::when::annotate(content, at) {
        Some(meant) => crate::text::dated(at, &format!("{line} ({meant})")),
        None => crate::text::dated(at, &line),
    }
}

/// One candidate line of the block.
pub struct Candidate {
    pub id: String,
    pub kind: ResultKind,
    pub content: String,
}

/// A section of the block: at most `share` of the budget, its lines best first.
pub struct Section {
    pub name: &'static str,
    pub heading: &'static str,
    pub share: f64,
    pub lines: Vec<Candidate>,
}

/// Assembles sections in order, each line only if it still fits its section's share and
/// the budget.
pub fn assemble(sections: Vec<Section>, max_tokens: usize) -> Context {
    let mut text = String::new();
    let mut used = 0;
    let mut items = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for Section { name, heading, share, lines } in sections {
        let cap = used + (share * max_tokens as f64).floor() as usize;
        let heading_tokens = estimate_tokens(heading) + 1;
        let mut wrote_heading = false;
        for candidate in lines {
            if seen.contains(&candidate.id) {
                continue;
            }
            let line = format!("- {}", candidate.content.replace('\n', " "));
            let tokens = estimate_tokens(&line) + 1;
            let extra = if wrote_heading { 0 } else { heading_tokens + usize::from(!text.is_empty()) };
            if used + tokens + extra > max_tokens.min(cap) {
                continue;
            }
            if !wrote_heading {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(heading);
                text.push('\n');
                wrote_heading = true;
            }
            seen.insert(candidate.id.clone());
            text.push_str(&line);
            text.push('\n');
            used += tokens + extra;
            items.push(ContextItem { id: candidate.id, kind: candidate.kind, section: name, tokens });
        }
    }
    Context { text, tokens: used, max_tokens, items }
}

/// The latest turns of a session, newest first as read and oldest first as returned; as
/// many as could fill the largest working share.
async fn latest_turns(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    session: &SessionId,
) -> sqlx::Result<Vec<Candidate>> {
    let mut rows: Vec<(uuid::Uuid, Role, String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT id, role, content, created_at FROM events
          WHERE tenant_id = $1 AND user_id = $2 AND session_id = $3
          ORDER BY created_at DESC, seq DESC LIMIT 200",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(session.as_str())
    .fetch_all(conn)
    .await?;
    rows.reverse();
    Ok(rows
        .into_iter()
        .map(|(id, role, content, at)| Candidate {
            id: id.to_string(),
            kind: ResultKind::Event,
            content: said(at, Some(role), &content),
        })
        .collect())
}

/// Identity and profile facts, most important first.
pub async fn profile(conn: &mut PgConnection, tenant: &TenantId, user: &UserId) -> sqlx::Result<Vec<Candidate>> {
    let rows: Vec<(uuid::Uuid, Kind, String)> = sqlx::query_as(
        "SELECT id, kind, content FROM memories
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND category IN ('identity', 'personal')
          ORDER BY pinned DESC, importance DESC, updated_at DESC LIMIT 20",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, kind, content)| Candidate { id: id.to_string(), kind: kind.into(), content })
        .collect())
}

/// The latest session summaries and period summaries.
pub async fn recent_summaries(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
) -> sqlx::Result<(Vec<Candidate>, Vec<Candidate>)> {
    let sessions: Vec<(String, String, Option<DateTime<Utc>>)> = sqlx::query_as(
        "SELECT session_id, summary, summarized_at FROM sessions
          WHERE tenant_id = $1 AND user_id = $2 AND summary IS NOT NULL
          ORDER BY last_event_at DESC LIMIT 3",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .fetch_all(&mut *conn)
    .await?;
    let periods: Vec<(uuid::Uuid, String)> = sqlx::query_as(
        "SELECT id, summary FROM period_summaries WHERE tenant_id = $1 AND user_id = $2
          ORDER BY period_start DESC LIMIT 2",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .fetch_all(conn)
    .await?;
    Ok((
        sessions
            .into_iter()
            .map(|(id, content, _)| Candidate { id, kind: ResultKind::SessionSummary, content })
            .collect(),
        periods
            .into_iter()
            .map(|(id, content)| Candidate { id: id.to_string(), kind: ResultKind::PeriodSummary, content })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: &str, content: &str) -> Candidate {
        Candidate { id: id.into(), kind: ResultKind::Fact, content: content.into() }
    }

    #[test]
    fn tokens_count_cjk_characters_one_each() {
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("我叫李明"), 4);
        assert_eq!(estimate_tokens(""), 0);
    }

    fn section(name: &'static str, share: f64, lines: Vec<Candidate>) -> Section {
        Section { name, heading: "## heading", share, lines }
    }

    #[test]
    fn the_block_never_exceeds_its_budget_and_skips_duplicates() {
        let sections = || {
            vec![
                section("profile", 1.0, vec![c("1", "Name: Alice"), c("2", "Lives in Lisbon")]),
                section("relevant", 1.0, vec![c("1", "Name: Alice"), c("3", &"long ".repeat(50))]),
            ]
        };
        for budget in [0, 5, 10, 20, 80, 1000] {
            let context = assemble(sections(), budget);
            assert!(context.tokens <= budget, "{budget}: {}", context.tokens);
            assert!(estimate_tokens(&context.text) <= context.tokens, "the estimate covers the text");
        }
        let all = assemble(sections(), 1000);
        assert_eq!(all.items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), vec!["1", "2", "3"]);
        assert!(all.text.starts_with("## heading\n- Name: Alice\n"));
    }

    #[test]
    fn a_section_keeps_to_its_share_and_leaves_the_rest_to_the_next() {
        let many: Vec<Candidate> = (0..40).map(|i| c(&format!("p{i}"), "a profile fact of some length")).collect();
        let context =
            assemble(vec![section("profile", 0.2, many), section("relevant", 1.0, vec![c("r", "the answer")])], 200);
        let profile: usize = context.items.iter().filter(|i| i.section == "profile").map(|i| i.tokens).sum();
        assert!(profile <= 40, "{profile}");
        assert!(context.items.iter().any(|i| i.id == "r"));
    }

    #[test]
    fn working_memory_keeps_the_latest_turns_in_order() {
        let turns: Vec<Candidate> = (0..30).map(|i| c(&format!("t{i}"), &format!("turn number {i}"))).collect();
        let kept = latest_within(turns, WORKING_HEADING, 40);
        let ids: Vec<&str> = kept.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids.last(), Some(&"t29"));
        assert!(ids.len() > 2 && ids.len() < 30, "{ids:?}");
        assert!(ids.windows(2).all(|w| w[0] < w[1] || w[0].len() < w[1].len()), "oldest first: {ids:?}");
    }
}
