//! `summarize_sessions` (level 0 → 1): each ended session without a summary gets one,
//! with its embedding and the ids of the events it covers. With an LLM, the prompt
//! `jobs/prompts/summarize_session.md`, over chunks that fit the model's context and
//! then over the chunk summaries. Without one, an extractive summary: the user's most
//! central sentences (embedding centrality, near-duplicates removed), in their own
//! words and original order, within a token budget. Sensitive data never enters a
//! summary.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::job::{Candidate, InTransaction, Job, Unit, Units};
use super::{Counts, Models, Scope};
use crate::sessions::summaries::{self, Summary};
use engram_base::domain::{Role, TenantId, UserId};
use engram_base::models::{Embedding, Prompt, TokenBudget};
use engram_language::secrets::{redact, sensitive_kinds};
use engram_language::text::{estimate_tokens, is_small_talk, sentences, word_count};

/// Session summaries' vectors, for `reembed`.
pub const VECTORS: engram_base::stored_vectors::VectorColumn = engram_base::stored_vectors::VectorColumn {
    name: "session_summaries",
    table: "sessions",
    key: "session_id",
    key_type: "text",
    text: || "summary",
    storage: "vector",
    filter: "summary IS NOT NULL",
};

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummarizeParams {
    /// A session without events for this long has ended.
    pub idle_minutes: i64,
    /// Sessions summarized per user and run.
    pub max_sessions: i64,
    /// The most tokens of transcript sent in one LLM call; longer sessions go in chunks.
    pub chunk_tokens: usize,
    /// Length of an LLM summary, in words.
    pub max_words: usize,
    /// Length of an extractive summary, in tokens.
    pub extractive_tokens: usize,
}

impl Default for SummarizeParams {
    fn default() -> Self {
        Self { idle_minutes: 30, max_sessions: 50, chunk_tokens: 2500, max_words: 150, extractive_tokens: 160 }
    }
}

/// Users with an ended, unsummarized session.
pub async fn candidates(
    pool: &PgPool,
    params: &SummarizeParams,
    scope: &Scope,
    now: DateTime<Utc>,
) -> sqlx::Result<Vec<Candidate>> {
    let (tenant, user) = scope.columns();
    sqlx::query!(
        r#"SELECT DISTINCT tenant_id AS "tenant_id!: TenantId", user_id AS "user_id!: UserId" FROM sessions
          WHERE summarized_at IS NULL AND ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)
            AND coalesce(ended_at, last_event_at + make_interval(mins => $3::int)) <= $4"#,
        tenant,
        user,
        params.idle_minutes as i32,
        now
    )
    .map(|r| (r.tenant_id, r.user_id))
    .fetch_all(pool)
    .await
}

pub async fn run_unit(
    conn: &mut PgConnection,
    params: &SummarizeParams,
    unit: &Unit<'_>,
    models: &Models,
) -> anyhow::Result<Counts> {
    let mut counts = Counts::default();
    let ended = unit.now - Duration::minutes(params.idle_minutes);
    let sessions: Vec<(String, DateTime<Utc>, DateTime<Utc>)> = sqlx::query!(
        "SELECT session_id, started_at, last_event_at FROM sessions
          WHERE tenant_id = $1 AND user_id = $2 AND summarized_at IS NULL AND coalesce(ended_at, last_event_at) <= $3
          ORDER BY last_event_at LIMIT $4",
        unit.tenant.as_str(),
        unit.user.as_str(),
        ended,
        params.max_sessions
    )
    .map(|r| (r.session_id, r.started_at, r.last_event_at))
    .fetch_all(&mut *conn)
    .await?;
    for (session, started, last) in sessions {
        let events: Vec<(Uuid, Role, String)> = sqlx::query!(
            r#"SELECT id, role AS "role: Role", content FROM events WHERE tenant_id = $1 AND user_id = $2 AND session_id = $3 ORDER BY created_at, seq"#,
            unit.tenant.as_str(),
            unit.user.as_str(),
            &session
        )
        .map(|r| (r.id, r.role, r.content))
        .fetch_all(&mut *conn)
        .await?;
        let (summary, tokens) = match &models.llm {
            Some(llm) => {
                summarize_with_llm(params, (models, llm), &events, started, last, unit.budget.max_llm_tokens).await?
            }
            None => (extractive(params, models, &events).await?, 0),
        };
        counts.add("llm_tokens", tokens as i64);
        let summary = redact(summary.trim());
        let embedding = models.embedder.embed_one(if summary.is_empty() { "(empty)" } else { &summary }).await?;
        let ids: Vec<Uuid> = events.iter().map(|(id, ..)| *id).collect();
        let stored = Summary { text: &summary, embedding: &embedding, model: models.embedder.model() };
        summaries::set_session(conn, unit.tenant, unit.user, &session, &stored, &ids, unit.now).await?;
        counts.add(if summary.is_empty() { "summarized_empty" } else { "summarized" }, 1);
    }
    Ok(counts)
}

#[derive(Deserialize)]
struct LlmSummary {
    summary: String,
}

/// Chunks of the transcript that fit the model's context, summarized one by one and
/// then together; returns the summary and the tokens spent.
async fn summarize_with_llm(
    params: &SummarizeParams,
    (models, llm): (&Models, &engram_base::models::Llm),
    events: &[(Uuid, Role, String)],
    started: DateTime<Utc>,
    last: DateTime<Utc>,
    max_tokens: u64,
) -> anyhow::Result<(String, u64)> {
    let prompt = models.prompts.get("summarize_session")?;
    let budget = TokenBudget::new(Some(max_tokens));
    let lines: Vec<String> =
        events.iter().map(|(_, role, content)| format!("{}: {}", role.as_str(), redact(content))).collect();
    let mut chunks: Vec<String> = vec![String::new()];
    for line in lines {
        let current = chunks.last_mut().expect("one chunk at least");
        if !current.is_empty() && estimate_tokens(current) + estimate_tokens(&line) > params.chunk_tokens {
            chunks.push(String::new());
        }
        let current = chunks.last_mut().expect("one chunk at least");
        current.push_str(&line);
        current.push('\n');
    }
    let mut summaries = Vec::new();
    for chunk in &chunks {
        summaries.push(ask(llm, prompt, params, chunk, events.len(), (started, last), &budget).await?);
    }
    let summary = match summaries.len() {
        1 => summaries.remove(0),
        _ => ask(llm, prompt, params, &summaries.join("\n"), events.len(), (started, last), &budget).await?,
    };
    Ok((summary, budget.used()))
}

/// The summary of `transcript`, of `event_count` turns said from `started` to `last`.
async fn ask(
    llm: &engram_base::models::Llm,
    prompt: &Prompt,
    params: &SummarizeParams,
    transcript: &str,
    event_count: usize,
    (started, last): (DateTime<Utc>, DateTime<Utc>),
    budget: &TokenBudget,
) -> anyhow::Result<String> {
    let vars: HashMap<&str, String> = HashMap::from([
        ("transcript", transcript.to_owned()),
        ("event_count", event_count.to_string()),
        ("started_at", started.to_rfc3339()),
        ("ended_at", last.to_rfc3339()),
        ("max_words", params.max_words.to_string()),
    ]);
    let answer: LlmSummary = llm.complete("summarize_session", prompt, &vars, budget).await?;
    Ok(answer.summary)
}

/// The user's most central sentences, without near-duplicates, in their original order.
async fn extractive(
    params: &SummarizeParams,
    models: &Models,
    events: &[(Uuid, Role, String)],
) -> anyhow::Result<String> {
    let texts: Vec<&str> =
        events.iter().filter(|(_, role, _)| *role == Role::User).map(|(_, _, content)| content.as_str()).collect();
    select_sentences(models, &texts, params.extractive_tokens).await
}

/// The most central sentences of `texts` (embedding centrality) within `max_tokens`, in
/// their original order. Small talk, questions and sentences with sensitive data are
/// left out; of two near-duplicates the later one stays (it is the latest word).
pub(super) async fn select_sentences(models: &Models, texts: &[&str], max_tokens: usize) -> anyhow::Result<String> {
    let all: Vec<String> = texts
        .iter()
        .flat_map(|text| sentences(text).into_iter().map(str::to_owned).collect::<Vec<_>>())
        .filter(|s| !is_small_talk(s) && word_count(s) >= 3 && sensitive_kinds(s).is_empty())
        .collect();
    if all.is_empty() {
        return Ok(String::new());
    }
    let all_vectors: Vec<Embedding> = models.embedder.embed(&all).await?;
    let keep: Vec<usize> =
        (0..all.len()).filter(|&i| !(i + 1..all.len()).any(|j| all_vectors[i].cosine(&all_vectors[j]) > 0.9)).collect();
    let candidates: Vec<&String> = keep.iter().map(|&i| &all[i]).collect();
    let vectors: Vec<&Embedding> = keep.iter().map(|&i| &all_vectors[i]).collect();
    let centrality: Vec<f32> = vectors.iter().map(|v| vectors.iter().map(|w| v.cosine(w)).sum::<f32>()).collect();
    let vectors: Vec<Embedding> = vectors.into_iter().cloned().collect();
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|a, b| centrality[*b].total_cmp(&centrality[*a]).then(a.cmp(b)));
    let mut chosen: Vec<usize> = Vec::new();
    let mut tokens = 0;
    for i in order {
        if chosen.iter().any(|&j| vectors[i].cosine(&vectors[j]) > 0.9) {
            continue;
        }
        let cost = estimate_tokens(candidates[i]) + 1;
        if tokens + cost > max_tokens {
            continue;
        }
        tokens += cost;
        chosen.push(i);
    }
    chosen.sort_unstable();
    Ok(chosen.iter().map(|&i| candidates[i].as_str()).collect::<Vec<_>>().join(" "))
}

impl Job for SummarizeParams {
    fn prompts(&self) -> &'static [&'static str] {
        &["summarize_session"]
    }

    async fn candidates(
        &self,
        pool: &PgPool,
        scope: &Scope,
        now: DateTime<Utc>,
        _models: &Models,
    ) -> sqlx::Result<Vec<Candidate>> {
        candidates(pool, self, scope, now).await
    }

    fn units(&self) -> Units<'_> {
        Units::InTransaction { custom_plans: true, job: self }
    }
}

impl InTransaction for SummarizeParams {
    async fn run_unit(&self, conn: &mut PgConnection, unit: &Unit<'_>, models: &Models) -> anyhow::Result<Counts> {
        run_unit(conn, self, unit, models).await
    }
}
