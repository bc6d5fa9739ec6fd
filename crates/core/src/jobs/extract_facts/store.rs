//! Storing one found fact against what the user's memory already holds: a restatement
//! refreshes the memory it repeats, a new value for a key supersedes the old one (so
//! does a correction the user made), anything else is a new memory.

use std::sync::Arc;

use sqlx::PgConnection;
use uuid::Uuid;

use super::super::job::Unit;
use super::{Event, Existing, ExtractParams};
use crate::feedback;
use crate::memories::{self, NewMemory, lifecycle};
use engram_base::models::{Embedder, Embedding};
use engram_language::facts::{self, Found};

/// Stores one found fact, resolving it against what the user's memory already holds;
/// returns the action taken and the memory that holds the fact.
#[allow(
    clippy::too_many_arguments,
    reason = "one fact's whole context: the job, its unit and turn, what it resolves and corrects"
)]
pub(super) async fn store(
    conn: &mut PgConnection,
    params: &ExtractParams,
    unit: &Unit<'_>,
    embedder: &Arc<Embedder>,
    event: &Event,
    found: &Found,
    resolves: Option<Uuid>,
    corrections: &[Correction],
) -> anyhow::Result<(&'static str, Uuid)> {
    let text = memories::match_text(&found.content, found.key.as_deref(), found.value.as_deref());
    let embedding = embedder.embed_one(&text).await?;
    let mut supersedes: Vec<(Uuid, &str)> =
        resolves.map(|id| (id, "the LLM resolved the new statement as an update")).into_iter().collect();
    if let (Some(key), Some(value)) = (&found.key, &found.value) {
        let existing: Vec<Existing> = sqlx::query_as!(
            Existing,
            "SELECT id, content, source_event_ids, created_at FROM memories
              WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND category = $3 AND key = $4",
            unit.tenant.as_str(),
            unit.user.as_str(),
            found.category.as_str(),
            key
        )
        .fetch_all(&mut *conn)
        .await?;
        for old in existing {
            if states_value(&old.content, key, value) {
                refresh(conn, unit, &old, event).await?;
                return Ok(("refreshed", old.id));
            }
            let same_session_soon = same_session_within_hour(conn, unit, &old, event).await?;
            let corrected = corrections.iter().any(|c| c.memory_id == old.id);
            if (found.is_change || same_session_soon || corrected) && !supersedes.iter().any(|(id, _)| *id == old.id) {
                let reason = match (found.is_change, corrected) {
                    (_, true) => "the user corrected it",
                    (true, _) => "the user stated a change",
                    _ => "restated differently in the same session",
                };
                supersedes.push((old.id, reason));
            }
        }
    } else if let Some((id, similar)) = most_similar(conn, unit, &embedding).await?
        && similar >= params.duplicate_similarity
        && resolves.is_none()
    {
        // Said again in other words: one memory, with this event among its sources.
        lifecycle::refresh(conn, unit.tenant, unit.user, id, event.id, &unit.change("restated by the user")).await?;
        return Ok(("duplicates", id));
    }
    if let Some(old_value) = &found.replaces {
        for id in naming(conn, unit, old_value, &embedding, params.change_similarity).await? {
            if !supersedes.iter().any(|(s, _)| *s == id) {
                supersedes.push((id, "the user moved away from what it states"));
            }
        }
    }
    // A memory the user corrected in this very message gives way to what they said instead.
    for correction in corrections.iter().filter(|c| c.event_id == Some(event.id)) {
        if !supersedes.iter().any(|(id, _)| *id == correction.memory_id)
            && similarity(conn, unit, correction.memory_id, &embedding)
                .await?
                .is_some_and(|s| s >= params.change_similarity)
        {
            supersedes.push((correction.memory_id, "the user corrected it"));
        }
    }
    let memory = NewMemory {
        user_id: unit.user.clone(),
        kind: memories::Kind::Fact,
        category: found.category,
        key: found.key.clone(),
        value: found.value.clone(),
        content: found.content.clone(),
        importance: found.importance,
        source_event_ids: vec![event.id],
        source_quote: Some(found.content.clone()),
        derived_from: vec![],
        valid_from: event.created_at,
        pinned: false,
    };
    let reason = if found.source_quote.is_some() { "extracted by the LLM" } else { "extracted by rules" };
    let memory =
        NewMemory { source_quote: Some(found.source_quote.clone().unwrap_or_else(|| found.content.clone())), ..memory };
    let id = memories::insert(conn, unit.tenant, &memory, &embedding, embedder.model(), &unit.change(reason)).await?;
    for (old, reason) in &supersedes {
        lifecycle::supersede(conn, unit.tenant, unit.user, *old, id, event.created_at, &unit.change(*reason)).await?;
    }
    let superseded: Vec<Uuid> = supersedes.iter().map(|(id, _)| *id).collect();
    feedback::resolve(conn, unit.tenant, &superseded).await?;
    Ok((if supersedes.is_empty() { "created" } else { "superseded" }, id))
}

/// A served memory the user said was wrong or outdated, not yet resolved.
pub(super) struct Correction {
    memory_id: Uuid,
    /// The user's correcting message, when the correction was detected in conversation.
    event_id: Option<Uuid>,
}

pub(super) async fn open_corrections(conn: &mut PgConnection, unit: &Unit<'_>) -> sqlx::Result<Vec<Correction>> {
    let rows: Vec<(Uuid, Option<Uuid>)> = sqlx::query!(
        "SELECT memory_id, event_id FROM feedback
          WHERE tenant_id = $1 AND user_id = $2 AND kind IN ('wrong', 'outdated') AND resolved_at IS NULL",
        unit.tenant.as_str(),
        unit.user.as_str()
    )
    .map(|r| (r.memory_id, r.event_id))
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|(memory_id, event_id)| Correction { memory_id, event_id }).collect())
}

/// Cosine similarity of a stored memory to `embedding`.
async fn similarity(
    conn: &mut PgConnection,
    unit: &Unit<'_>,
    id: Uuid,
    embedding: &Embedding,
) -> sqlx::Result<Option<f32>> {
    let dims = embedding.dims();
    let sql = format!(
        "SELECT (1 - (embedding::vector({dims}) <=> $3))::real FROM memories
          WHERE tenant_id = $1 AND id = $2 AND status = 'active' AND embedding_dims = {dims}"
    );
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(unit.tenant.as_str())
        .bind(id)
        .bind(embedding.to_pgvector())
        .fetch_optional(conn)
        .await
}

/// Whether a stored fact already states `value` for `key`.
fn states_value(content: &str, key: &str, value: &str) -> bool {
    let techs = facts::technologies(content);
    if let Some((_, name)) = techs.iter().find(|(k, _)| *k == key) {
        return name == value;
    }
    content.to_lowercase().contains(value)
}

async fn refresh(conn: &mut PgConnection, unit: &Unit<'_>, old: &Existing, event: &Event) -> sqlx::Result<()> {
    if old.source_event_ids.contains(&event.id) {
        return Ok(());
    }
    lifecycle::refresh(conn, unit.tenant, unit.user, old.id, event.id, &unit.change("restated by the user")).await
}

async fn same_session_within_hour(
    conn: &mut PgConnection,
    unit: &Unit<'_>,
    old: &Existing,
    event: &Event,
) -> sqlx::Result<bool> {
    if (event.created_at - old.created_at).num_minutes().abs() > 60 {
        return Ok(false);
    }
    let session: Option<String> = sqlx::query_scalar!("SELECT e.session_id FROM memories m JOIN events e ON e.tenant_id = m.tenant_id AND e.id = m.source_event_ids[1]
          WHERE m.tenant_id = $1 AND m.id = $2", unit.tenant.as_str(), old.id)
    .fetch_optional(conn)
    .await?;
    Ok(session.as_deref() == Some(event.session_id.as_str()))
}

/// The user's active memory most similar to `embedding`, and how similar.
async fn most_similar(
    conn: &mut PgConnection,
    unit: &Unit<'_>,
    embedding: &Embedding,
) -> sqlx::Result<Option<(Uuid, f32)>> {
    let dims = embedding.dims();
    let sql = format!(
        "SELECT id, (1 - (embedding::vector({dims}) <=> $3))::real FROM memories
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND embedding_dims = {dims}
          ORDER BY embedding::vector({dims}) <=> $3 LIMIT 1"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(unit.tenant.as_str())
        .bind(unit.user.as_str())
        .bind(embedding.to_pgvector())
        .fetch_optional(conn)
        .await
}

/// Active memories that name `value` and are at least `threshold` similar to the change.
async fn naming(
    conn: &mut PgConnection,
    unit: &Unit<'_>,
    value: &str,
    embedding: &Embedding,
    threshold: f32,
) -> sqlx::Result<Vec<Uuid>> {
    let dims = embedding.dims();
    let sql = format!(
        "SELECT id FROM memories
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND embedding_dims = {dims}
            AND content ILIKE '%' || $3 || '%' AND 1 - (embedding::vector({dims}) <=> $4) >= $5"
    );
    let value = value.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(unit.tenant.as_str())
        .bind(unit.user.as_str())
        .bind(value)
        .bind(embedding.to_pgvector())
        .bind(threshold as f64)
        .fetch_all(conn)
        .await
}
