//! `summarize_periods` (level 1 → 2): a user's session summaries from a week or month
//! that lies entirely more than `older_than_days` in the past, at least `min_sessions`
//! of them, become one period summary (organised by topic, latest conclusions) with its
//! embedding and session ids; those sessions are archived, which makes their raw events
//! eligible for `purge` after its retention. Without an LLM the summary is extractive
//! over the session summaries, where a later statement wins over an earlier near-duplicate.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::Deserialize;
use sqlx::{PgConnection, PgPool};

use super::job::{Candidate, InTransaction, Job, Unit, Units};
use super::summarize_sessions::select_sentences;
use super::{Counts, Models, Scope};
use crate::sessions::summaries::{self, Span, Summary};
use engram_base::domain::{TenantId, UserId};
use engram_base::models::TokenBudget;
use engram_language::secrets::redact;

/// Period summaries' vectors, for `reembed`.
pub const VECTORS: engram_base::stored_vectors::VectorColumn = engram_base::stored_vectors::VectorColumn {
    name: "period_summaries",
    table: "period_summaries",
    key: "id",
    key_type: "uuid",
    text: || "summary",
    storage: "vector",
    filter: "true",
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Period {
    Week,
    Month,
}

impl Period {
    fn as_str(self) -> &'static str {
        match self {
            Self::Week => "week",
            Self::Month => "month",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PeriodParams {
    pub period: Period,
    /// Only periods that ended at least this long ago.
    pub older_than_days: i64,
    pub min_sessions: usize,
    /// Length of an LLM summary, in words.
    pub max_words: usize,
    /// Length of an extractive summary, in tokens.
    pub extractive_tokens: usize,
}

impl Default for PeriodParams {
    fn default() -> Self {
        Self { period: Period::Week, older_than_days: 14, min_sessions: 2, max_words: 250, extractive_tokens: 300 }
    }
}

/// Users with summarized, unarchived sessions older than the threshold.
pub async fn candidates(
    pool: &PgPool,
    params: &PeriodParams,
    scope: &Scope,
    now: DateTime<Utc>,
) -> sqlx::Result<Vec<Candidate>> {
    let (tenant, user) = scope.columns();
    sqlx::query!(
        r#"SELECT DISTINCT tenant_id AS "tenant_id!: TenantId", user_id AS "user_id!: UserId" FROM sessions
          WHERE summary IS NOT NULL AND archived_at IS NULL AND last_event_at < $3
            AND ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)"#,
        tenant,
        user,
        now - Duration::days(params.older_than_days)
    )
    .map(|r| (r.tenant_id, r.user_id))
    .fetch_all(pool)
    .await
}

pub async fn run_unit(
    conn: &mut PgConnection,
    params: &PeriodParams,
    unit: &Unit<'_>,
    models: &Models,
) -> anyhow::Result<Counts> {
    let mut counts = Counts::default();
    let cutoff = unit.now - Duration::days(params.older_than_days);
    let sessions: Vec<(String, String, DateTime<Utc>, NaiveDate, NaiveDate)> = sqlx::query!(
        r#"SELECT session_id, summary AS "summary!", last_event_at,
                date_trunc($4, last_event_at AT TIME ZONE 'UTC')::date AS "period_start!",
                (date_trunc($4, last_event_at AT TIME ZONE 'UTC') + ('1 ' || $4)::interval)::date AS "period_end!"
           FROM sessions
          WHERE tenant_id = $1 AND user_id = $2 AND summary IS NOT NULL AND summary <> '' AND archived_at IS NULL AND last_event_at < $3
          ORDER BY last_event_at"#,
        unit.tenant.as_str(),
        unit.user.as_str(),
        cutoff,
        params.period.as_str()
    )
    .map(|r| (r.session_id, r.summary, r.last_event_at, r.period_start, r.period_end))
    .fetch_all(&mut *conn)
    .await?;
    // (start, end) of a period → its sessions: id, summary, last event.
    type Sessions = Vec<(String, String, DateTime<Utc>)>;
    let mut periods: BTreeMap<(NaiveDate, NaiveDate), Sessions> = BTreeMap::new();
    for (session, summary, at, start, end) in sessions {
        periods.entry((start, end)).or_default().push((session, summary, at));
    }
    for ((start, end), sessions) in periods {
        let ended = end.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc();
        if ended > cutoff || sessions.len() < params.min_sessions {
            counts.add("periods_waiting", 1);
            continue;
        }
        let (summary, tokens) = match &models.llm {
            Some(llm) => {
                summarize_with_llm(params, (models, llm), &sessions, start, end, unit.budget.max_llm_tokens).await?
            }
            None => {
                let texts: Vec<&str> = sessions.iter().map(|(_, summary, _)| summary.as_str()).collect();
                (select_sentences(models, &texts, params.extractive_tokens).await?, 0)
            }
        };
        counts.add("llm_tokens", tokens as i64);
        let summary = redact(summary.trim());
        let embedding = models.embedder.embed_one(if summary.is_empty() { "(empty)" } else { &summary }).await?;
        let ids: Vec<&str> = sessions.iter().map(|(id, ..)| id.as_str()).collect();
        let stored = Summary { text: &summary, embedding: &embedding, model: models.embedder.model() };
        let period = Span { kind: params.period.as_str(), start, end };
        let inserted = summaries::add_period(conn, unit.tenant, unit.user, &period, &stored, &ids, unit.now).await?;
        counts.add(if inserted { "periods_summarized" } else { "periods_existing" }, 1);
        counts.add("sessions_archived", ids.len() as i64);
    }
    Ok(counts)
}

#[derive(Deserialize)]
struct LlmSummary {
    summary: String,
}

async fn summarize_with_llm(
    params: &PeriodParams,
    (models, llm): (&Models, &engram_base::models::Llm),
    sessions: &[(String, String, DateTime<Utc>)],
    start: NaiveDate,
    end: NaiveDate,
    max_tokens: u64,
) -> anyhow::Result<(String, u64)> {
    let prompt = models.prompts.get("summarize_period")?;
    let budget = TokenBudget::new(Some(max_tokens));
    let summaries: Vec<String> =
        sessions.iter().map(|(_, summary, at)| format!("[{}] {}", at.format("%Y-%m-%d"), summary)).collect();
    let vars: HashMap<&str, String> = HashMap::from([
        ("summaries", summaries.join("\n")),
        ("period_start", start.to_string()),
        ("period_end", end.to_string()),
        ("max_words", params.max_words.to_string()),
    ]);
    let answer: LlmSummary = llm.complete("summarize_period", prompt, &vars, &budget).await?;
    Ok((answer.summary, budget.used()))
}

impl Job for PeriodParams {
    fn prompts(&self) -> &'static [&'static str] {
        &["summarize_period"]
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

impl InTransaction for PeriodParams {
    async fn run_unit(&self, conn: &mut PgConnection, unit: &Unit<'_>, models: &Models) -> anyhow::Result<Counts> {
        run_unit(conn, self, unit, models).await
    }
}
