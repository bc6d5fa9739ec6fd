//! The prompt-ready context block for one user: working, episodic and semantic memory
//! within one token budget ([`estimate_tokens`] per line, plus one per line for its
//! bullet and newline). Sections, in the order they take the budget in:
//!
//! 1. **Current conversation** (with `session_id`): that session's latest turns, oldest
//!    first, within `search.context_working_share` of the budget (0.3).
//! 2. **Relations** (with `query`): chains of the user's graph from the entities the
//!    query names to the relations that answer it (`张伟 —colleague→ 李明 —leads→ 电商项目
//!    —uses→ PostgreSQL`), within `search.context_relations_share` (0.15).
//! 3. **Relevant memories** (with `query`): the facts, insights and raw turns most
//!    relevant to the query, best first (one lookup, [`crate::search`]), each line dated
//!    with when it was said, and a relative time phrase in it resolved (`[Mon 8 May
//!    2023] user: I went yesterday. (yesterday = Sun 7 May 2023)`), leaving the profile
//!    its share.
//! 4. **About the user**: identity and personal facts, most important first, within
//!    `search.context_profile_share` (0.2).
//! 5. **Recent conversations**, then **Earlier periods**: the latest session and period
//!    summaries, while budget remains.
//!
//! The block shows what answers the query first, **Relations** then **Relevant
//! memories**: an agent reads the answer before what is known of the user in general.
//! The others follow in the order above.
//!
//! For a question about the present ("where does she live now?"), a profile line or a
//! relation that a newer relevant result on its topic changed is left out: it is history
//! there, and the newer line answers. A line already written (a turn of the current
//! session found again by the query) is not repeated; a section's unused share goes to the sections after it.
//!
//! `context/assemble.rs` packs the sections into the budget; `context/read.rs` reads what
//! they hold and writes it as dated lines.

mod assemble;
mod read;

use serde::Serialize;

use crate::search::SearchResult;
use assemble::{Candidate, Section, assemble, latest_within, tokens_of};
use engram_base::configuration::SearchSettings;
use engram_base::domain::{ResultKind, SessionId, TenantId, UserId};
pub use engram_language::text::estimate_tokens;
use read::{dated, latest_turns, profile, recent_summaries};

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
    Invalid(#[from] engram_base::domain::ValidationError),
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
    db: &engram_base::db::Database,
    lookup: &crate::search::Lookup<'_>,
    tenant: &TenantId,
    request: &ContextRequest<'_>,
) -> Result<(Context, bool), ContextError> {
    let user = request.user;
    let mut tx = engram_base::db::begin_tenant_tx(&db.read_pool, tenant).await?;
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
            let query = crate::search::SearchQuery::for_context(user.clone(), text, lookup)?;
            lookup.search(tenant, &query).await?
        }
    };
    let hit = relevant.iter().any(|r| r.score >= lookup.ranker.min_score(lookup.settings));
    let relations = match request.query {
        Some(text) => relations(lookup, tenant, user, text, &relevant).await?,
        None => Vec::new(),
    };
    let (profile, relations) = match request.query {
        Some(text) if engram_language::when::present::asks(text) => {
            without_changed(db, tenant, profile, relations, &relevant).await?
        }
        _ => (profile, relations),
    };
    let relevant = with_questions(db, tenant, user, relevant, lookup).await?;
    let working_budget = (lookup.settings.context_working_share * request.max_tokens as f64).floor() as usize;
    let working = latest_within(working, WORKING_HEADING, working_budget);
    let context = assemble(
        sections(
            lookup.settings,
            request.max_tokens,
            Lines { working, profile, relations, relevant, sessions, periods },
        ),
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
        keep: usize::MAX,
        window: None,
    };
    let mut scans = lookup.lookups.scan_connection();
    let mut found = crate::search::relations::search(lookup, &mut scans, tenant, &query).await?;
    scans.give_back();
    found.retain(|r| r.score >= lookup.ranker.context_min_score(lookup.settings));
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

/// The profile and relations without the lines a newer relevant result on their topic
/// changed: for a question about the present they are history, not what stands (see
/// [`crate::search::present`]).
async fn without_changed(
    db: &engram_base::db::Database,
    tenant: &TenantId,
    profile: Vec<Candidate>,
    relations: Vec<Candidate>,
    relevant: &[SearchResult],
) -> Result<(Vec<Candidate>, Vec<Candidate>), ContextError> {
    let standing: Vec<uuid::Uuid> = profile.iter().chain(&relations).filter_map(|c| c.id.parse().ok()).collect();
    let mut tx = engram_base::db::begin_tenant_tx(&db.read_pool, tenant).await?;
    let changed = crate::search::present::changed(&mut tx, tenant, &standing, relevant).await?;
    tx.commit().await?;
    let stands = |c: &Candidate| c.id.parse().map_or(true, |id| !changed.contains(&id));
    Ok((profile.into_iter().filter(stands).collect(), relations.into_iter().filter(stands).collect()))
}

/// A reply this short ("Yes, last week!") is shown with the turn it answers.
const SHORT_REPLY_TOKENS: usize = 16;

/// Replies shown with their question, at most.
const MAX_QUESTIONS: usize = 5;

/// The relevant results as dated lines, best first: a line that says nothing the lines
/// before it did not (every word of it among theirs) is left out, and a strong hit that
/// is a reply — a short turn, or one that holds fewer of the query's words than its
/// neighbours do — comes after the turn it answers.
async fn with_questions(
    db: &engram_base::db::Database,
    tenant: &TenantId,
    user: &UserId,
    relevant: Vec<SearchResult>,
    lookup: &crate::search::Lookup<'_>,
) -> Result<Vec<Candidate>, ContextError> {
    let strong = lookup.ranker.min_score(lookup.settings);
    let replies: Vec<uuid::Uuid> = relevant
        .iter()
        .filter(|r| r.kind == ResultKind::Event && r.score >= strong)
        .filter(|r| r.parts.own_keyword < r.parts.keyword || estimate_tokens(&r.content) <= SHORT_REPLY_TOKENS)
        .filter_map(|r| r.id.parse().ok())
        .take(MAX_QUESTIONS)
        .collect();
    let mut before = std::collections::HashMap::new();
    if !replies.is_empty() {
        let mut tx = engram_base::db::begin_tenant_tx(&db.read_pool, tenant).await?;
        before.extend(read::turns_before(&mut tx, tenant, user, &replies).await?);
        tx.commit().await?;
    }
    Ok(ordered(relevant, before))
}

/// The lines of `relevant`, best first, each reply after the turn `before` it (by its
/// id), and none whose every word the lines before it hold.
fn ordered(
    relevant: Vec<SearchResult>,
    mut before: std::collections::HashMap<uuid::Uuid, Candidate>,
) -> Vec<Candidate> {
    let mut seen_words: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut shown: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut lines = Vec::new();
    for result in relevant {
        let words = engram_language::terms::words(&result.content);
        if !words.is_empty() && words.iter().all(|w| seen_words.contains(w)) {
            continue;
        }
        seen_words.extend(words);
        let question = result.id.parse::<uuid::Uuid>().ok().and_then(|id| before.remove(&id));
        if let Some(question) = question.filter(|q| !shown.contains(&q.id)) {
            shown.insert(question.id.clone());
            lines.push(question);
        }
        if shown.insert(result.id.clone()) {
            lines.push(dated(result));
        }
    }
    lines
}

/// Chains the relations section holds at most.
const MAX_CHAINS: usize = 8;

/// Each section's candidate lines.
struct Lines {
    working: Vec<Candidate>,
    profile: Vec<Candidate>,
    relations: Vec<Candidate>,
    relevant: Vec<Candidate>,
    sessions: Vec<Candidate>,
    periods: Vec<Candidate>,
}

/// The sections in the order they take the budget in, with their shares. What answers
/// the query (relations, relevant memories) comes before the profile and is shown first;
/// the relevant memories leave the profile its share.
fn sections(settings: &SearchSettings, max_tokens: usize, lines: Lines) -> Vec<Section> {
    let Lines { working, profile, relations, relevant, sessions, periods } = lines;
    vec![
        Section {
            name: "working",
            heading: WORKING_HEADING,
            share: settings.context_working_share,
            lines: working,
            leave: 0.0,
            first: false,
        },
        Section {
            name: "relations",
            heading: "## Relations",
            share: settings.context_relations_share,
            lines: relations,
            leave: 0.0,
            first: true,
        },
        Section {
            name: "relevant",
            heading: "## Relevant memories",
            share: 1.0,
            lines: relevant,
            leave: settings
                .context_profile_share
                .min(tokens_of(&profile, PROFILE_HEADING) as f64 / max_tokens.max(1) as f64),
            first: true,
        },
        Section {
            name: "profile",
            heading: PROFILE_HEADING,
            share: settings.context_profile_share,
            lines: profile,
            leave: 0.0,
            first: false,
        },
        Section {
            name: "sessions",
            heading: "## Recent conversations",
            share: 1.0,
            lines: sessions,
            leave: 0.0,
            first: false,
        },
        Section {
            name: "periods",
            heading: "## Earlier periods",
            share: 1.0,
            lines: periods,
            leave: 0.0,
            first: false,
        },
    ]
}

const WORKING_HEADING: &str = "## Current conversation";

const PROFILE_HEADING: &str = "## About the user";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::Parts;

    fn result(content: &str) -> SearchResult {
        let id = uuid::Uuid::new_v4();
        let parts = Parts::summary(0.5, 0.0, None);
        SearchResult::new(id.to_string(), ResultKind::Event, content.into(), chrono::Utc::now(), vec![id], parts)
    }

    #[test]
    fn a_line_that_says_nothing_new_is_left_out_and_a_reply_follows_its_question() {
        let reply = result("Yes, on Saturday!");
        let question = Candidate { id: "q".into(), kind: ResultKind::Event, content: "Did you go?".into() };
        let before = [(reply.id.parse().unwrap(), question)].into_iter().collect();
        let relevant = vec![
            result("We adopted a grey cat called Miso."),
            reply,
            result("a grey cat called Miso"),
            result("Miso sleeps all day."),
        ];
        let lines: Vec<String> = ordered(relevant, before).into_iter().map(|c| c.content).collect();
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(lines[0].contains("We adopted a grey cat called Miso."));
        assert_eq!(lines[1], "Did you go?");
        assert!(lines[2].contains("Yes, on Saturday!"));
        assert!(lines[3].contains("Miso sleeps all day."), "{lines:?}");
    }
}
