//! The LLM path of graph extraction: the `extract_graph` prompt with the user's messages
//! and their most recently seen entities (with ids); every relation that comes back is
//! checked before it counts, as facts are: the quote must be the user's own words, a
//! known entity's id must be among those given, a new entity's name (or one of its
//! aliases) must be in the message, predicate and types must be known, and the
//! predicate must join those kinds of entity ([`Predicate::joins`]). A new entity whose
//! name the technology lexicon holds is a technology, whatever kind the LLM gave it.

use std::collections::HashMap;

use serde::Deserialize;
use sqlx::PgConnection;
use uuid::Uuid;

use super::{EntityType, Graph, Predicate};
use super::{Extracted, Triple};
use engram_base::domain::Owner;
use engram_base::models::{Llm, ModelError, Prompts, TokenBudget};
use engram_language::relations::mention::Mention;
use engram_language::relations::names::normalise;

/// How many of the user's entities the prompt lists.
const KNOWN_ENTITIES: i64 = 40;

#[derive(Deserialize)]
struct Answer {
    relations: Vec<LlmRelation>,
    user_name: Option<String>,
}

#[derive(Deserialize)]
struct LlmRelation {
    subject: LlmEntity,
    predicate: String,
    object: LlmEntity,
    ends: Option<LlmEntity>,
    source_quote: String,
    message: usize,
}

#[derive(Deserialize)]
struct LlmEntity {
    id: Option<String>,
    name: String,
    #[serde(rename = "type")]
    kind: String,
}

/// What the LLM found in each message (by index into `messages`, `None` when its answer
/// was unusable), how many of its relations were dropped as invalid, and the tokens spent.
pub struct Found {
    pub per_message: Option<Vec<Extracted>>,
    pub invalid: i64,
    pub tokens: i64,
}

/// Asks the LLM for the relations in `messages` (the user's, sensitive data already
/// removed) and checks every one.
pub async fn extract(
    conn: &mut PgConnection,
    owner: Owner<'_>,
    llm: &Llm,
    prompts: &Prompts,
    graph: &Graph,
    messages: &[&str],
    max_tokens: u64,
) -> Result<Found, anyhow::Error> {
    let Owner { tenant, user } = owner;
    let known: Vec<(Uuid, String, String, bool)> = sqlx::query!(
        "SELECT id, name, type, is_user FROM entities WHERE tenant_id = $1 AND user_id = $2 AND status = 'active'
          ORDER BY last_seen DESC LIMIT $3",
        tenant.as_str(),
        user.as_str(),
        KNOWN_ENTITIES
    )
    .map(|r| (r.id, r.name, r.r#type, r.is_user))
    .fetch_all(&mut *conn)
    .await?;
    let listed: Vec<String> = known
        .iter()
        .map(|(id, name, kind, is_user)| match is_user {
            true => format!("- user: {name} (the user themself)"),
            false => format!("- {id}: {name} ({kind})"),
        })
        .collect();
    let numbered: Vec<String> = messages.iter().enumerate().map(|(i, m)| format!("[{}] {m}", i + 1)).collect();
    let vars: HashMap<&str, String> = HashMap::from([
        ("predicates", Predicate::ALL.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")),
        ("types", EntityType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")),
        ("known_entities", if listed.is_empty() { "(none)".to_owned() } else { listed.join("\n") }),
        ("messages", numbered.join("\n")),
    ]);
    let prompt = prompts.get("extract_graph")?;
    let budget = TokenBudget::new(Some(max_tokens));
    let answer: Answer = match llm.complete("extract_graph", prompt, &vars, &budget).await {
        Ok(answer) => answer,
        Err(ModelError::Malformed(reason)) => {
            tracing::warn!(%reason, "extract_graph: the LLM's answer is unusable; the rules read these messages");
            return Ok(Found { per_message: None, invalid: 0, tokens: budget.used() as i64 });
        }
        Err(err) => return Err(err.into()),
    };
    let mut per_message: Vec<Extracted> = messages.iter().map(|_| Extracted::default()).collect();
    let mut invalid = 0;
    let known_ids: HashMap<String, (String, EntityType, bool)> = known
        .iter()
        .map(|(id, name, kind, is_user)| {
            let key = if *is_user { "user".to_owned() } else { id.to_string() };
            (key, (name.clone(), EntityType::parse(kind).unwrap_or(EntityType::Other), *is_user))
        })
        .collect();
    if let Some(name) = answer.user_name.filter(|n| !n.trim().is_empty())
        && let Some(first) = messages.iter().position(|m| normalise(m).contains(&normalise(&name)))
    {
        per_message[first].user_name = Some(name.trim().to_owned());
    }
    for relation in answer.relations {
        let Some(message) = relation.message.checked_sub(1).and_then(|i| messages.get(i)) else {
            invalid += 1;
            continue;
        };
        let said = normalise(message);
        let quoted = engram_base::models::answers::said_in(message, &relation.source_quote);
        let entity = |e: &LlmEntity| -> Option<Mention> {
            match e.id.as_deref().filter(|id| !id.is_empty()) {
                Some("user") => Some(Mention::user()),
                Some(id) => known_ids.get(id).map(|(name, kind, is_user)| Mention {
                    name: name.clone(),
                    kind: *kind,
                    is_user: *is_user,
                }),
                None => {
                    let name = e.name.trim();
                    let kind = match engram_language::technologies::is_named(name) {
                        true => EntityType::Technology,
                        false => EntityType::parse(&e.kind)?,
                    };
                    let named = graph.aliases.all_names_of(name).iter().any(|n| said.contains(n.as_str()))
                        || said.contains(&normalise(name));
                    (named && !name.is_empty() && name.chars().count() <= 60).then(|| Mention {
                        name: name.to_owned(),
                        kind,
                        is_user: false,
                    })
                }
            }
        };
        let (subject, object) = (entity(&relation.subject), entity(&relation.object));
        let ends = relation.ends.as_ref().map(entity);
        let (Some(subject), Some(object), Some(predicate), true) =
            (subject, object, Predicate::parse(&relation.predicate), quoted)
        else {
            invalid += 1;
            continue;
        };
        if !predicate.joins(subject.kind, object.kind) {
            invalid += 1;
            continue;
        }
        if ends.as_ref().is_some_and(Option::is_none) {
            invalid += 1;
            continue;
        }
        per_message[relation.message - 1].triples.push(Triple { subject, predicate, object, ended: ends.flatten() });
    }
    Ok(Found { per_message: Some(per_message), invalid, tokens: budget.used() as i64 })
}
