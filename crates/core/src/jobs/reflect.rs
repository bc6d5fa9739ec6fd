//! `reflect`: for users whose memories created since their last reflection add up to
//! `importance_threshold` (the Generative Agents trigger), look at their recent
//! memories as a whole. With an LLM (`jobs/prompts/reflect.md`): contradictions are
//! resolved by superseding the older, insights become `kind = insight` memories with
//! `derived_from` and an embedding, and cleanup candidates are evicted within the
//! run's removal cap. Everything the LLM returns is checked: an id must be one of the
//! memories it was shown, else the item is ignored and counted. Without an LLM: only
//! same-key contradictions (the newer value supersedes), no insights.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::job::{Candidate, InTransaction, Job, Unit, Units};
use super::{Counts, Models, Scope};
use crate::memories::{self, NewMemory, lifecycle};
use engram_base::domain::{TenantId, UserId};
use engram_base::models::TokenBudget;
use engram_language::facts::{Category, technologies};
use engram_language::secrets::sensitive_kinds;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReflectParams {
    /// Sum of the importance of memories created since the last reflection that triggers one.
    pub importance_threshold: f64,
    /// Recent memories shown to the LLM.
    pub max_memories: i64,
    /// Insights kept per reflection.
    pub max_insights: usize,
}

impl Default for ReflectParams {
    fn default() -> Self {
        Self { importance_threshold: 3.0, max_memories: 50, max_insights: 3 }
    }
}

/// Users whose new memories since their last reflection reach the threshold.
pub async fn candidates(pool: &PgPool, params: &ReflectParams, scope: &Scope) -> sqlx::Result<Vec<Candidate>> {
    let (tenant, user) = scope.columns();
    sqlx::query!(
        r#"SELECT m.tenant_id AS "tenant_id!: TenantId", m.user_id AS "user_id!: UserId" FROM memories m
           JOIN memory_history h ON h.tenant_id = m.tenant_id AND h.memory_id = m.id AND h.action = 'created'
           LEFT JOIN job_checkpoints k ON k.tenant_id = m.tenant_id AND k.job = 'reflect' AND k.user_id = m.user_id
          WHERE m.status = 'active' AND m.kind = 'fact' AND h.created_at > coalesce(k.done_at, '-infinity')
            AND ($1::text IS NULL OR m.tenant_id = $1) AND ($2::text IS NULL OR m.user_id = $2)
          GROUP BY m.tenant_id, m.user_id
         HAVING sum(m.importance) >= $3"#,
        tenant,
        user,
        params.importance_threshold as _
    )
    .map(|r| (r.tenant_id, r.user_id))
    .fetch_all(pool)
    .await
}

#[derive(Debug, Clone, sqlx::FromRow)]
struct Recent {
    id: Uuid,
    category: String,
    key: Option<String>,
    content: String,
    valid_from: DateTime<Utc>,
}

pub async fn run_unit(
    conn: &mut PgConnection,
    params: &ReflectParams,
    unit: &Unit<'_>,
    models: &Models,
) -> anyhow::Result<Counts> {
    let mut counts = Counts::default();
    let recent: Vec<Recent> = sqlx::query_as!(
        Recent,
        "SELECT id, category, key, content, valid_from FROM memories
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND NOT pinned
          ORDER BY valid_from DESC, id DESC LIMIT $3",
        unit.tenant.as_str(),
        unit.user.as_str(),
        params.max_memories
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut superseded: HashSet<Uuid> = HashSet::new();
    // Same-key contradictions, by rule: the newer value stands.
    let mut by_key: HashMap<(&str, &str), Vec<&Recent>> = HashMap::new();
    for memory in &recent {
        if let Some(key) = &memory.key {
            by_key.entry((memory.category.as_str(), key.as_str())).or_default().push(memory);
        }
    }
    for ((_, key), mut group) in by_key {
        group.sort_by_key(|m| m.valid_from);
        let Some(newest) = group.pop() else { continue };
        let value = |m: &Recent| technologies(&m.content).into_iter().find(|(k, _)| *k == key).map(|(_, v)| v);
        for older in group {
            if value(older).is_some_and(|v| Some(v) != value(newest)) {
                let change = unit.change("reflection: a newer fact with the same key contradicts it");
                lifecycle::supersede(conn, unit.tenant, unit.user, older.id, newest.id, newest.valid_from, &change)
                    .await?;
                superseded.insert(older.id);
                counts.add("contradictions_resolved", 1);
            }
        }
    }
    if let Some(llm) = &models.llm {
        let shown: Vec<&Recent> = recent.iter().filter(|m| !superseded.contains(&m.id)).collect();
        with_llm(conn, params, unit, (models, llm), &shown, &mut counts).await?;
    }
    Ok(counts)
}

#[derive(Deserialize)]
struct Reflection {
    contradictions: Vec<Contradiction>,
    insights: Vec<Insight>,
    cleanup: Vec<Cleanup>,
}

#[derive(Deserialize)]
struct Contradiction {
    older_id: String,
    newer_id: String,
    reason: String,
}

#[derive(Deserialize)]
struct Insight {
    content: String,
    category: String,
    importance: f32,
    derived_from: Vec<String>,
}

#[derive(Deserialize)]
struct Cleanup {
    id: String,
    reason: String,
}

async fn with_llm(
    conn: &mut PgConnection,
    params: &ReflectParams,
    unit: &Unit<'_>,
    (models, llm): (&Models, &engram_base::models::Llm),
    shown: &[&Recent],
    counts: &mut Counts,
) -> anyhow::Result<()> {
    if shown.is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = shown.iter().map(|m| format!("- {} [{}] {}", m.id, m.category, m.content)).collect();
    let vars = HashMap::from([("memories", listed.join("\n")), ("max_insights", params.max_insights.to_string())]);
    let budget = TokenBudget::new(Some(unit.budget.max_llm_tokens));
    let answer: Reflection = llm.complete("reflect", models.prompts.get("reflect")?, &vars, &budget).await?;
    counts.add("llm_tokens", budget.used() as i64);
    // Only ids the LLM was shown count; anything else is ignored and counted.
    let ids: HashMap<Uuid, &Recent> = shown.iter().map(|m| (m.id, *m)).collect();
    let known = |id: &str| id.parse::<Uuid>().ok().filter(|id| ids.contains_key(id));
    let mut touched: HashSet<Uuid> = HashSet::new();
    for c in answer.contradictions {
        match (known(&c.older_id), known(&c.newer_id)) {
            (Some(older), Some(newer)) if older != newer && touched.insert(older) => {
                let reason = format!("reflection: {}", c.reason.chars().take(200).collect::<String>());
                let at = ids[&newer].valid_from;
                lifecycle::supersede(conn, unit.tenant, unit.user, older, newer, at, &unit.change(reason)).await?;
                counts.add("contradictions_resolved", 1);
            }
            _ => counts.add("invalid", 1),
        }
    }
    for insight in answer.insights.into_iter().take(params.max_insights) {
        let sources: Vec<Uuid> = insight.derived_from.iter().filter_map(|id| known(id)).collect();
        let category = Category::parse(&insight.category).unwrap_or(Category::Other);
        if sources.is_empty()
            || sources.len() != insight.derived_from.len()
            || insight.content.trim().is_empty()
            || !sensitive_kinds(&insight.content).is_empty()
        {
            counts.add("invalid", 1);
            continue;
        }
        let embedding = models.embedder.embed_one(insight.content.trim()).await?;
        let memory = NewMemory {
            user_id: unit.user.clone(),
            kind: memories::Kind::Insight,
            category,
            key: None,
            value: None,
            content: insight.content.trim().to_owned(),
            importance: insight.importance.clamp(0.0, 1.0),
            source_event_ids: vec![],
            source_quote: None,
            derived_from: sources,
            valid_from: unit.now,
            pinned: false,
        };
        memories::insert(
            conn,
            unit.tenant,
            &memory,
            &embedding,
            models.embedder.model(),
            &unit.change("reflection: insight"),
        )
        .await?;
        counts.add("insights", 1);
    }
    let active: i64 = sqlx::query_scalar!(
        r#"SELECT count(*) AS "active!" FROM memories WHERE tenant_id = $1 AND user_id = $2 AND status = 'active'"#,
        unit.tenant.as_str(),
        unit.user.as_str()
    )
    .fetch_one(&mut *conn)
    .await?;
    let mut allowance = ((active as f64 * unit.budget.max_removed_fraction).floor() as i64).max(1);
    for cleanup in answer.cleanup {
        let Some(id) = known(&cleanup.id).filter(|id| !touched.contains(id)) else {
            counts.add("invalid", 1);
            continue;
        };
        if allowance == 0 {
            counts.add("kept_by_removal_cap", 1);
            continue;
        }
        let reason = format!("reflection: {}", cleanup.reason.chars().take(200).collect::<String>());
        if lifecycle::evict(conn, unit.tenant, unit.user, id, &unit.change(reason)).await? {
            touched.insert(id);
            allowance -= 1;
            counts.add("evicted", 1);
        }
    }
    Ok(())
}

impl Job for ReflectParams {
    fn prompts(&self) -> &'static [&'static str] {
        &["reflect"]
    }

    async fn candidates(
        &self,
        pool: &PgPool,
        scope: &Scope,
        _now: DateTime<Utc>,
        _models: &Models,
    ) -> sqlx::Result<Vec<Candidate>> {
        candidates(pool, self, scope).await
    }

    fn units(&self) -> Units<'_> {
        Units::InTransaction { custom_plans: true, job: self }
    }
}

impl InTransaction for ReflectParams {
    async fn run_unit(&self, conn: &mut PgConnection, unit: &Unit<'_>, models: &Models) -> anyhow::Result<Counts> {
        run_unit(conn, self, unit, models).await
    }
}
