//! The LLM path of `extract_facts`: a multilingual pre-filter decides which messages
//! are sent; one call carries them with the user's most relevant known facts; every
//! fact that comes back is checked before it counts, and one that fails a check is
//! dropped alone. What the LLM adds goes beside what the rules found
//! ([`super::run_unit`]), so an LLM that answers nothing usable takes nothing away.

use std::collections::HashMap;

use serde::Deserialize;
use sqlx::PgConnection;
use uuid::Uuid;

use super::super::job::Unit;
use super::super::{Counts, Models};
use super::{Event, ExtractParams};
use engram_base::models::answers::{said_in, says_nothing};
use engram_base::models::{ModelError, TokenBudget};
use engram_language::facts::{self, Category, Found};
use engram_language::secrets::sensitive_kinds;

/// Compiled trigger patterns, by their source list.
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

/// The LLM's facts: messages past the pre-filter, with the user's most relevant known
/// facts, in one call; every returned fact is checked before it counts. An answer that
/// is unusable or never comes (a refusal, a timeout, an outage) yields no facts, and
/// the rules' stand alone; only a spent token budget stops the unit.
pub(super) async fn with_llm<'e>(
    conn: &mut PgConnection,
    params: &ExtractParams,
    unit: &Unit<'_>,
    (models, llm): (&Models, &engram_base::models::Llm),
    said: &[(&'e Event, String)],
    counts: &mut Counts,
) -> anyhow::Result<Vec<(&'e Event, Found, Option<Uuid>)>> {
    let triggers = &params.triggers;
    let sent: Vec<&(&Event, String)> = said
        .iter()
        .filter(|(_, text)| {
            let keep = triggers.is_empty() || triggers.matches(text);
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
        ("categories", Category::names()),
        ("known_facts", if known_text.is_empty() { "(none)".to_owned() } else { known_text.join("\n") }),
        ("messages", messages.join("\n")),
    ]);
    let prompt = models.prompts.get("extract_facts")?;
    let budget = TokenBudget::new(Some(unit.budget.max_llm_tokens));
    counts.add("llm_calls", 1);
    counts.add("llm_messages", sent.len() as i64);
    let started = std::time::Instant::now();
    let answer = llm.complete::<serde_json::Value>("extract_facts", prompt, &vars, &budget).await;
    counts.add("llm_ms", started.elapsed().as_millis() as i64);
    counts.add("llm_tokens", budget.used() as i64);
    let answer = match answer.and_then(facts_in) {
        Ok(answer) => answer,
        Err(err @ (ModelError::BudgetExceeded(_) | ModelError::Config(_))) => return Err(err.into()),
        // The model's failure, not the messages': the rules' facts stand, the watermark
        // moves on.
        Err(err) => {
            counts.add(if matches!(err, ModelError::Malformed(_)) { "llm_unusable" } else { "llm_failed" }, 1);
            tracing::warn!(error = %err, "extract_facts: no usable answer from the LLM; the rules' facts stand");
            return Ok(Vec::new());
        }
    };
    let mut found = Vec::new();
    for fact in answer.facts {
        let Some((event, text)) = fact.message.checked_sub(1).and_then(|i| sent.get(i)) else {
            counts.add("invalid", 1);
            continue;
        };
        let quoted = said_in(text, &fact.source_quote);
        let category = category_of(&fact.category).unwrap_or_else(|| {
            counts.add("category_mapped", 1);
            Category::Statement
        });
        if !quoted || !sensitive_kinds(&fact.content).is_empty() || says_nothing(&fact.content) {
            counts.add("invalid", 1);
            continue;
        }
        let key = fact.key.filter(|k| !k.trim().is_empty()).map(|k| k.trim().to_lowercase());
        // The LLM may replace a memory it was shown only as a knowledge update: the same
        // key. Anything else would let a guess take away what the rules found.
        let existing = fact
            .existing_id
            .as_deref()
            .and_then(|id| id.parse::<Uuid>().ok())
            .filter(|id| known.iter().any(|k| k.0 == *id && k.2.is_some() && k.2 == key));
        let resolves = match fact.resolution.as_str() {
            "ignore" => {
                counts.add("ignored", 1);
                continue;
            }
            "update" | "merge" if existing.is_none() => {
                counts.add("llm_update_not_by_key", 1);
                None
            }
            "update" | "merge" => existing,
            _ => None,
        };
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

/// The facts of an answer, also when a model wrote one fact where a list was asked, or
/// the list alone.
fn facts_in(answer: serde_json::Value) -> Result<LlmFacts, ModelError> {
    let answer = match answer {
        serde_json::Value::Array(facts) => serde_json::json!({ "facts": facts }),
        serde_json::Value::Object(mut fields) => {
            if let Some(one) = fields.get_mut("facts").filter(|facts| facts.is_object()) {
                *one = serde_json::Value::Array(vec![one.take()]);
            } else if fields.contains_key("source_quote") {
                fields = serde_json::Map::from_iter([("facts".into(), serde_json::Value::Array(vec![fields.into()]))]);
            }
            serde_json::Value::Object(fields)
        }
        other => other,
    };
    serde_json::from_value(answer)
        .map_err(|e| ModelError::Malformed(format!("the answer does not fit the schema: {e}")))
}

/// A category as the model wrote it (any case, a plural `s` or surrounding spaces);
/// `None` for none of them.
fn category_of(written: &str) -> Option<Category> {
    let written = written.trim().to_lowercase();
    let singular = written.strip_suffix('s').unwrap_or(&written);
    Category::parse(&written).or_else(|| Category::parse(singular))
}
