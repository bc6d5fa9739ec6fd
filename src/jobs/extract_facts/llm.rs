//! The LLM path of `extract_facts`: a multilingual pre-filter decides which messages
//! are sent; one call carries them with the user's most relevant known facts; every
//! fact that comes back is checked before it counts.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use serde::Deserialize;
use sqlx::PgConnection;
use uuid::Uuid;

use super::super::facts::{self, Found};
use super::super::job::Unit;
use super::super::{Counts, Models};
use super::{Event, ExtractParams};
use crate::memories::CATEGORIES;
use crate::models::{ModelError, TokenBudget};
use crate::text::sensitive_kinds;

/// Compiled trigger patterns, by their source list.
type TriggerCache = std::sync::Mutex<HashMap<Vec<String>, Arc<Vec<regex::Regex>>>>;

static TRIGGERS: LazyLock<TriggerCache> = LazyLock::new(Default::default);

/// The compiled trigger patterns (compiled once per distinct list).
pub(super) fn triggers(patterns: &[String]) -> anyhow::Result<Arc<Vec<regex::Regex>>> {
    let mut cache = TRIGGERS.lock().expect("not poisoned");
    if let Some(compiled) = cache.get(patterns) {
        return Ok(compiled.clone());
    }
    let compiled = patterns
        .iter()
        .map(|p| regex::Regex::new(&format!("(?i){p}")).map_err(|e| anyhow::anyhow!("params.triggers: {e}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let compiled = Arc::new(compiled);
    cache.insert(patterns.to_vec(), compiled.clone());
    Ok(compiled)
}

#[derive(Deserialize)]
struct LlmFacts {
    facts: Vec<LlmFact>,
}

#[derive(Deserialize)]
struct LlmFact {
    category: String,
    key: Option<String>,
    content: String,
    importance: f32,
    source_quote: String,
    message: usize,
    resolution: String,
    existing_id: Option<String>,
}

/// The LLM path: messages past the pre-filter, with the user's most relevant known facts,
/// in one call; every returned fact is checked before it counts.
pub(super) async fn with_llm<'e>(
    conn: &mut PgConnection,
    params: &ExtractParams,
    unit: &Unit<'_>,
    models: &Models,
    said: &[(&'e Event, String)],
    counts: &mut Counts,
) -> anyhow::Result<Vec<(&'e Event, Found, Option<Uuid>)>> {
    let triggers = triggers(&params.triggers)?;
    let sent: Vec<&(&Event, String)> = said
        .iter()
        .filter(|(_, text)| {
            let keep = triggers.is_empty() || triggers.iter().any(|t| t.is_match(text));
            if !keep {
                counts.add("prefilter_skipped", 1);
            }
            keep
        })
        .collect();
    if sent.is_empty() {
        if !said.is_empty() {
            counts.add("llm_calls_saved", 1);
        }
        return Ok(Vec::new());
    }
    let llm = models.llm.as_ref().expect("called with an LLM");
    let messages: Vec<String> = sent.iter().enumerate().map(|(i, (_, text))| format!("[{}] {text}", i + 1)).collect();
    let probe = models.embedder.embed_one(&messages.join("\n")).await?;
    let known: Vec<(Uuid, String, Option<String>, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT id, category, key, content FROM memories
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND embedding_dims = {dims}
          ORDER BY embedding::vector({dims}) <=> $3 LIMIT $4",
        dims = probe.dims()
    )))
    .bind(unit.tenant.as_str())
    .bind(unit.user.as_str())
    .bind(probe.to_pgvector())
    .bind(params.known_facts)
    .fetch_all(&mut *conn)
    .await?;
    let known_text: Vec<String> = known
        .iter()
        .map(|(id, category, key, content)| {
            format!("- {id} [{category}{}] {content}", key.as_deref().map(|k| format!("/{k}")).unwrap_or_default())
        })
        .collect();
    let vars: HashMap<&str, String> = HashMap::from([
        ("categories", CATEGORIES.join(", ")),
        ("known_facts", if known_text.is_empty() { "(none)".to_owned() } else { known_text.join("\n") }),
        ("messages", messages.join("\n")),
    ]);
    let prompt = models.prompts.get("extract_facts")?;
    let budget = TokenBudget::new(Some(unit.budget.max_llm_tokens));
    counts.add("llm_calls", 1);
    let answer: LlmFacts = match llm.complete("extract_facts", prompt, &vars, &budget).await {
        Ok(answer) => answer,
        // An answer that is not the schema's is the model's failure, not the messages':
        // the rules read them instead, and the watermark moves on.
        Err(ModelError::Malformed(reason)) => {
            counts.add("llm_tokens", budget.used() as i64);
            counts.add("llm_unusable", 1);
            tracing::warn!(%reason, "extract_facts: the LLM's answer is unusable; the rules read these messages");
            return Ok(super::by_rules(sent.into_iter(), params.keep_statements));
        }
        Err(err) => return Err(err.into()),
    };
    counts.add("llm_tokens", budget.used() as i64);
    let mut found = Vec::new();
    for fact in answer.facts {
        let Some((event, text)) = fact.message.checked_sub(1).and_then(|i| sent.get(i)) else {
            counts.add("invalid", 1);
            continue;
        };
        let quoted = normalise(text).contains(&normalise(&fact.source_quote)) && !fact.source_quote.trim().is_empty();
        let Some(category) = CATEGORIES.iter().find(|c| **c == fact.category) else {
            counts.add("invalid", 1);
            continue;
        };
        if !quoted || !sensitive_kinds(&fact.content).is_empty() || fact.content.trim().is_empty() {
            counts.add("invalid", 1);
            continue;
        }
        let existing = fact
            .existing_id
            .as_deref()
            .and_then(|id| id.parse::<Uuid>().ok())
            .filter(|id| known.iter().any(|k| k.0 == *id));
        let resolves = match fact.resolution.as_str() {
            "ignore" => {
                counts.add("ignored", 1);
                continue;
            }
            "update" | "merge" => existing,
            _ => None,
        };
        let key = fact.key.filter(|k| !k.trim().is_empty()).map(|k| k.trim().to_lowercase());
        let value = key
            .as_ref()
            .and_then(|k| facts::technologies(&fact.content).into_iter().find(|(t, _)| t == k).map(|(_, v)| v));
        found.push((
            *event,
            Found {
                category,
                key,
                value,
                content: fact.content.trim().to_owned(),
                importance: fact.importance.clamp(0.0, 1.0),
                replaces: None,
                is_change: resolves.is_some(),
                source_quote: Some(fact.source_quote.trim().to_owned()),
            },
            resolves,
        ));
    }
    Ok(found)
}

/// Lower case, single spaces: a quote matches whatever the spacing.
fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}
