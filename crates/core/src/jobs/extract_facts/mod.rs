//! `extract_facts`: the user's new events since their watermark become facts. Without
//! an LLM (the default) the rules of `engram_language::facts` find self-introductions,
//! preferences, tools and changes, and keep other informative statements verbatim.
//! With one, the rules read the messages too, and those that pass a cheap multilingual
//! pre-filter also go to the LLM in one call with the user's most relevant known facts;
//! whatever it returns is checked (the quote must be the user's own words, ids must be
//! among those given) before it goes beside the rules' findings ([`beside_rules`]). Sensitive data never becomes a memory and is
//! redacted before anything reaches the LLM. A request to forget not yet honoured at
//! ingest is honoured first ([`crate::privacy::forget`]). Knowledge updates, by rule first:
//! - the same value for a keyed fact refreshes it (and adds the source event);
//! - a different value supersedes the old fact when the user states a change, or said
//!   it in the same session within an hour; otherwise both are kept;
//! - a change that names the old value ("from MySQL to …") also supersedes the user's
//!   active memories that mention it in a similar context (embedding similarity).

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

mod graph;
mod llm;
mod store;

use super::checkpoints;
use super::job::{Candidate, InTransaction, Job, Unit, Units};
use super::{Counts, Models, Scope};
use crate::privacy::forget;
use engram_base::domain::{Category, Owner, Role, TenantId, UserId};
use engram_language::facts::{self, Found};
use engram_language::secrets::{redact, sensitive_kinds};
use engram_language::text::sentences;
use llm::with_llm;
use store::{open_corrections, store};

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExtractParams {
    /// Events read per user and run; the rest wait for the next run.
    pub max_events: i64,
    /// Keep informative sentences no pattern recognised, verbatim (category `statement`).
    pub keep_statements: bool,
    /// What happens to a sentence with sensitive data: `drop` it, or `redact` the data.
    pub sensitive: Sensitive,
    /// Categories never stored (e.g. `health`, `finance`).
    pub blocked_categories: Vec<Category>,
    /// A change supersedes memories naming the old value at least this similar.
    pub change_similarity: f32,
    /// An unkeyed fact this similar to an active memory is a duplicate.
    pub duplicate_similarity: f32,
    /// With an LLM: only messages matching one of these (case-insensitive regular
    /// expressions) are sent; empty sends every message.
    pub triggers: Triggers,
    /// With an LLM: how many of the user's known facts go into the prompt.
    pub known_facts: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sensitive {
    Drop,
    Redact,
}

impl Default for ExtractParams {
    fn default() -> Self {
        Self {
            max_events: 1000,
            keep_statements: true,
            sensitive: Sensitive::Drop,
            blocked_categories: vec![Category::Health, Category::Finance],
            change_similarity: 0.4,
            duplicate_similarity: 0.92,
            triggers: Triggers::new(engram_language::configured::TRIGGERS).expect("the shipped triggers compile"),
            known_facts: 20,
        }
    }
}

/// `params.triggers`, compiled once, when the job file is read: a pattern that is no
/// regular expression stops the file from loading, naming it.
#[derive(Debug, Clone)]
pub struct Triggers(std::sync::Arc<engram_language::configured::Patterns>);

impl Triggers {
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, String> {
        engram_language::configured::Patterns::new(patterns).map(|p| Self(std::sync::Arc::new(p)))
    }
}

impl std::ops::Deref for Triggers {
    type Target = engram_language::configured::Patterns;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Triggers {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::new(&Vec::<String>::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// Users with events after their `extract_facts` watermark.
pub async fn candidates(pool: &PgPool, scope: &Scope) -> sqlx::Result<Vec<Candidate>> {
    let (tenant, user) = scope.columns();
    sqlx::query!(
        r#"SELECT s.tenant_id AS "tenant_id!: TenantId", s.user_id AS "user_id!: UserId" FROM sessions s
          LEFT JOIN job_checkpoints k ON k.tenant_id = s.tenant_id AND k.job = 'extract_facts' AND k.user_id = s.user_id
          WHERE ($1::text IS NULL OR s.tenant_id = $1) AND ($2::text IS NULL OR s.user_id = $2)
          GROUP BY s.tenant_id, s.user_id
         HAVING EXISTS (SELECT 1 FROM events e WHERE e.tenant_id = s.tenant_id AND e.user_id = s.user_id
                           AND e.seq > coalesce(max((k.state ->> 'seq')::bigint), 0))"#,
        tenant,
        user
    )
    .map(|r| (r.tenant_id, r.user_id))
    .fetch_all(pool)
    .await
}

struct Event {
    id: Uuid,
    seq: i64,
    session_id: String,
    role: Role,
    content: String,
    created_at: DateTime<Utc>,
}

/// A keyed fact already stored.
#[derive(sqlx::FromRow)]
struct Existing {
    id: Uuid,
    content: String,
    source_event_ids: Vec<Uuid>,
    created_at: DateTime<Utc>,
}

pub async fn run_unit(
    conn: &mut PgConnection,
    params: &ExtractParams,
    unit: &Unit<'_>,
    models: &Models,
) -> anyhow::Result<Counts> {
    let embedder = &models.embedder;
    let mut counts = Counts::default();
    let watermark = checkpoints::last_seq(conn, unit.tenant, unit.user, unit.job).await?;
    let mut events = new_events(conn, unit, watermark, params.max_events).await?;
    // Requests to forget not honoured at ingest (turns stored by `engram ingest`, say)
    // go first: nothing they take back becomes a fact.
    let asks: Vec<Uuid> =
        events.iter().filter(|e| e.role == Role::User && forget::asks_to_forget(&e.content)).map(|e| e.id).collect();
    if !asks.is_empty() {
        let change = unit.change("the user asked to forget it");
        let limit = models.graph.settings.scan_limit;
        let honoured =
            forget::honour(conn, embedder, Owner::new(unit.tenant, unit.user), &asks, &change, limit).await?;
        counts.add("forget_requests", honoured.requests as i64);
        counts.add("forgotten_memories", honoured.counts.get("memories").copied().unwrap_or(0) as i64);
        counts.add("forgotten_turns", honoured.counts.get("events_redacted").copied().unwrap_or(0) as i64);
        events = new_events(conn, unit, watermark, params.max_events).await?;
    }
    let Some(last) = events.last().map(|e| e.seq) else { return Ok(counts) };
    // The user's sentences, with sensitive data dropped or redacted before anything else.
    let mut said: Vec<(&Event, String)> = Vec::new();
    for event in events.iter().filter(|e| e.role == Role::User) {
        counts.add("events_read", 1);
        let mut kept = Vec::new();
        for sentence in sentences(&event.content) {
            match (sensitive_kinds(sentence).is_empty(), params.sensitive) {
                (true, _) => kept.push(sentence.to_owned()),
                (false, Sensitive::Drop) => counts.add("sensitive_dropped", 1),
                (false, Sensitive::Redact) => {
                    counts.add("sensitive_redacted", 1);
                    kept.push(redact(sentence));
                }
            }
        }
        if !kept.is_empty() {
            said.push((event, kept.join(" ")));
        }
    }
    let rules = by_rules(said.iter(), params.keep_statements);
    let found = match &models.llm {
        Some(llm) => {
            beside_rules(rules, with_llm(conn, params, unit, (models, llm), &said, &mut counts).await?, &mut counts)
        }
        None => rules,
    };
    let corrections = open_corrections(conn, unit).await?;
    let mut stored: Vec<graph::Stored> = Vec::new();
    for (event, found, resolves) in found {
        if params.blocked_categories.contains(&found.category) {
            counts.add("blocked", 1);
            continue;
        }
        let (action, memory) = store(conn, params, unit, embedder, event, &found, resolves, &corrections).await?;
        counts.add(action, 1);
        stored.push(graph::Stored { event: event.id, quote: found.source_quote.unwrap_or(found.content), memory });
    }
    if models.graph.settings.enabled {
        graph::extract(conn, unit, models, params, &said, &stored, &mut counts).await?;
    }
    checkpoints::set_last_seq(conn, unit.tenant, unit.user, unit.job, last).await?;
    Ok(counts)
}

/// The user's events after `watermark`, oldest first, at most `limit`.
async fn new_events(conn: &mut PgConnection, unit: &Unit<'_>, watermark: i64, limit: i64) -> sqlx::Result<Vec<Event>> {
    let rows: Vec<(Uuid, i64, String, Role, String, DateTime<Utc>)> = sqlx::query!(
        r#"SELECT id, seq, session_id, role AS "role: Role", content, created_at FROM events
          WHERE tenant_id = $1 AND user_id = $2 AND seq > $3 ORDER BY seq LIMIT $4"#,
        unit.tenant.as_str(),
        unit.user.as_str(),
        watermark,
        limit
    )
    .map(|r| (r.id, r.seq, r.session_id, r.role, r.content, r.created_at))
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, seq, session_id, role, content, created_at)| Event {
            id,
            seq,
            session_id,
            role,
            content,
            created_at,
        })
        .collect())
}

/// The LLM's facts beside the rules': never fewer than the rules found. A keyed fact
/// of the rules stands, and the LLM's facts with the same key from these turns are left
/// out (they would compete with the rules' reading, or supersede it); everything else
/// of both is kept, and a restatement is merged when stored.
fn beside_rules<'e>(
    rules: Vec<(&'e Event, Found, Option<Uuid>)>,
    by_llm: Vec<(&'e Event, Found, Option<Uuid>)>,
    counts: &mut Counts,
) -> Vec<(&'e Event, Found, Option<Uuid>)> {
    counts.add("facts_by_rules", rules.len() as i64);
    let (same, added): (Vec<_>, Vec<_>) = by_llm
        .into_iter()
        .partition(|(_, llm, _)| llm.key.is_some() && rules.iter().any(|(_, rule, _)| rule.key == llm.key));
    counts.add("llm_same_key_as_rules", same.len() as i64);
    counts.add("facts_by_llm", added.len() as i64);
    rules.into_iter().chain(added).collect()
}

/// What the rules find in what was said, each fact with the event it comes from.
fn by_rules<'e, 's>(
    said: impl Iterator<Item = &'s (&'e Event, String)>,
    keep_statements: bool,
) -> Vec<(&'e Event, Found, Option<Uuid>)>
where
    'e: 's,
{
    said.flat_map(|(event, text)| {
        sentences(text)
            .into_iter()
            .flat_map(|s| facts::extract(s, keep_statements))
            .map(|f| (*event, f, None))
            .collect::<Vec<_>>()
    })
    .collect()
}

impl Job for ExtractParams {
    fn prompts(&self) -> &'static [&'static str] {
        &["extract_facts", "extract_graph"]
    }

    async fn candidates(
        &self,
        pool: &PgPool,
        scope: &Scope,
        _now: DateTime<Utc>,
        _models: &Models,
    ) -> sqlx::Result<Vec<Candidate>> {
        candidates(pool, scope).await
    }

    fn units(&self) -> Units<'_> {
        Units::InTransaction { custom_plans: true, job: self }
    }
}

impl InTransaction for ExtractParams {
    async fn run_unit(&self, conn: &mut PgConnection, unit: &Unit<'_>, models: &Models) -> anyhow::Result<Counts> {
        run_unit(conn, self, unit, models).await
    }
}
