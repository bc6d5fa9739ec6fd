//! `extract_facts`: the user's new events since their watermark become facts. Without
//! an LLM (the default) the rules of [`super::facts`] find self-introductions,
//! preferences, tools and changes, and keep other informative statements verbatim.
//! Sensitive data never becomes a memory. Knowledge updates, by rule:
//! - the same value for a keyed fact refreshes it (and adds the source event);
//! - a different value supersedes the old fact when the user states a change, or said
//!   it in the same session within an hour; otherwise both are kept;
//! - a change that names the old value ("from MySQL to …") also supersedes the user's
//!   active memories that mention it in a similar context (embedding similarity).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::facts::{self, Found};
use super::runner::Unit;
use super::{Counts, Scope};
use crate::memories::{self, NewMemory};
use crate::models::{Embedder, Embedding};
use crate::text::{redact, sensitive_kinds, sentences};

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
    pub blocked_categories: Vec<String>,
    /// A change supersedes memories naming the old value at least this similar.
    pub change_similarity: f32,
    /// An unkeyed fact this similar to an active memory is a duplicate.
    pub duplicate_similarity: f32,
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
            blocked_categories: vec!["health".into(), "finance".into()],
            change_similarity: 0.4,
            duplicate_similarity: 0.92,
        }
    }
}

/// Users with events after their `extract_facts` watermark.
pub async fn candidates(pool: &PgPool, scope: &Scope) -> sqlx::Result<Vec<(String, String)>> {
    let (tenant, user) = scope.columns();
    sqlx::query_as(
        "SELECT s.tenant_id, s.user_id FROM sessions s
          LEFT JOIN job_checkpoints k ON k.tenant_id = s.tenant_id AND k.job = 'extract_facts' AND k.user_id = s.user_id
          WHERE ($1::text IS NULL OR s.tenant_id = $1) AND ($2::text IS NULL OR s.user_id = $2)
          GROUP BY s.tenant_id, s.user_id
         HAVING EXISTS (SELECT 1 FROM events e WHERE e.tenant_id = s.tenant_id AND e.user_id = s.user_id
                           AND e.seq > coalesce(max((k.state ->> 'seq')::bigint), 0))",
    )
    .bind(tenant)
    .bind(user)
    .fetch_all(pool)
    .await
}

struct Event {
    id: Uuid,
    seq: i64,
    session_id: String,
    role: String,
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

pub async fn run_unit(conn: &mut PgConnection, params: &ExtractParams, unit: &Unit<'_>, embedder: &Arc<Embedder>) -> anyhow::Result<Counts> {
    let mut counts = Counts::default();
    let watermark: i64 = sqlx::query_scalar(
        "SELECT coalesce((state ->> 'seq')::bigint, 0) FROM job_checkpoints WHERE tenant_id = $1 AND user_id = $2 AND job = 'extract_facts'",
    )
    .bind(unit.tenant.as_str())
    .bind(unit.user.as_str())
    .fetch_optional(&mut *conn)
    .await?
    .unwrap_or(0);
    let events: Vec<(Uuid, i64, String, String, String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT id, seq, session_id, role, content, created_at FROM events
          WHERE tenant_id = $1 AND user_id = $2 AND seq > $3 ORDER BY seq LIMIT $4",
    )
    .bind(unit.tenant.as_str())
    .bind(unit.user.as_str())
    .bind(watermark)
    .bind(params.max_events)
    .fetch_all(&mut *conn)
    .await?;
    let events: Vec<Event> = events
        .into_iter()
        .map(|(id, seq, session_id, role, content, created_at)| Event { id, seq, session_id, role, content, created_at })
        .collect();
    let Some(last) = events.last().map(|e| e.seq) else { return Ok(counts) };
    for event in events.iter().filter(|e| e.role == "user") {
        counts.add("events_read", 1);
        for sentence in sentences(&event.content) {
            let sentence = match (sensitive_kinds(sentence).is_empty(), params.sensitive) {
                (true, _) => sentence.to_owned(),
                (false, Sensitive::Drop) => {
                    counts.add("sensitive_dropped", 1);
                    continue;
                }
                (false, Sensitive::Redact) => {
                    counts.add("sensitive_redacted", 1);
                    redact(sentence)
                }
            };
            for found in facts::extract(&sentence, params.keep_statements) {
                if params.blocked_categories.iter().any(|c| c == found.category) {
                    counts.add("blocked", 1);
                    continue;
                }
                let action = store(conn, params, unit, embedder, event, &found).await?;
                counts.add(action, 1);
            }
        }
    }
    sqlx::query(
        "INSERT INTO job_checkpoints (tenant_id, user_id, job, state) VALUES ($1, $2, 'extract_facts', jsonb_build_object('seq', $3::bigint))
         ON CONFLICT (tenant_id, job, user_id) DO UPDATE SET state = job_checkpoints.state || jsonb_build_object('seq', $3::bigint)",
    )
    .bind(unit.tenant.as_str())
    .bind(unit.user.as_str())
    .bind(last)
    .execute(&mut *conn)
    .await?;
    Ok(counts)
}

/// Stores one found fact, resolving it against what the user's memory already holds;
/// returns the action taken.
async fn store(
    conn: &mut PgConnection,
    params: &ExtractParams,
    unit: &Unit<'_>,
    embedder: &Arc<Embedder>,
    event: &Event,
    found: &Found,
) -> anyhow::Result<&'static str> {
    let embedding = embedder.embed_one(&found.content).await?;
    let mut supersedes = Vec::new();
    if let (Some(key), Some(value)) = (&found.key, &found.value) {
        let existing: Vec<Existing> = sqlx::query_as(
            "SELECT id, content, source_event_ids, created_at FROM memories
              WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND category = $3 AND key = $4",
        )
        .bind(unit.tenant.as_str())
        .bind(unit.user.as_str())
        .bind(found.category)
        .bind(key)
        .fetch_all(&mut *conn)
        .await?;
        for old in existing {
            if states_value(&old.content, key, value) {
                refresh(conn, unit, &old, event).await?;
                return Ok("refreshed");
            }
            let same_session_soon = same_session_within_hour(conn, unit, &old, event).await?;
            if found.is_change || same_session_soon {
                supersedes.push((old.id, if found.is_change { "the user stated a change" } else { "restated differently in the same session" }));
            }
        }
    } else if let Some(similar) = most_similar(conn, unit, &embedding).await? {
        if similar >= params.duplicate_similarity {
            return Ok("duplicates");
        }
    }
    if let Some(old_value) = &found.replaces {
        for id in naming(conn, unit, old_value, &embedding, params.change_similarity).await? {
            if !supersedes.iter().any(|(s, _)| *s == id) {
                supersedes.push((id, "the user moved away from what it states"));
            }
        }
    }
    let memory = NewMemory {
        user_id: unit.user.clone(),
        kind: "fact",
        category: found.category.to_owned(),
        key: found.key.clone(),
        content: found.content.clone(),
        importance: found.importance,
        source_event_ids: vec![event.id],
        source_quote: Some(found.content.clone()),
        derived_from: vec![],
        valid_from: event.created_at,
        pinned: false,
    };
    let id = memories::insert(conn, unit.tenant, &memory, &embedding, embedder.model(), "extracted by rules", Some(unit.run_id)).await?;
    for (old, reason) in &supersedes {
        memories::supersede(conn, unit.tenant, unit.user, *old, id, event.created_at, reason, Some(unit.run_id)).await?;
    }
    Ok(if supersedes.is_empty() { "created" } else { "superseded" })
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
    sqlx::query(
        "UPDATE memories SET updated_at = now(), source_event_ids = array_append(source_event_ids, $3) WHERE tenant_id = $1 AND id = $2",
    )
    .bind(unit.tenant.as_str())
    .bind(old.id)
    .bind(event.id)
    .execute(&mut *conn)
    .await?;
    let after = serde_json::json!({"source_event_ids": [event.id]});
    memories::record_history(conn, unit.tenant, old.id, unit.user, "updated", None, Some(after), "restated by the user", Some(unit.run_id), None).await
}

async fn same_session_within_hour(conn: &mut PgConnection, unit: &Unit<'_>, old: &Existing, event: &Event) -> sqlx::Result<bool> {
    if (event.created_at - old.created_at).num_minutes().abs() > 60 {
        return Ok(false);
    }
    let session: Option<String> = sqlx::query_scalar(
        "SELECT e.session_id FROM memories m JOIN events e ON e.tenant_id = m.tenant_id AND e.id = m.source_event_ids[1]
          WHERE m.tenant_id = $1 AND m.id = $2",
    )
    .bind(unit.tenant.as_str())
    .bind(old.id)
    .fetch_optional(conn)
    .await?;
    Ok(session.as_deref() == Some(event.session_id.as_str()))
}

/// The highest similarity of `embedding` to the user's active memories.
async fn most_similar(conn: &mut PgConnection, unit: &Unit<'_>, embedding: &Embedding) -> sqlx::Result<Option<f32>> {
    let dims = embedding.dims();
    let sql = format!(
        "SELECT (1 - (embedding::vector({dims}) <=> $3))::real FROM memories
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND embedding_dims = {dims}
          ORDER BY embedding::vector({dims}) <=> $3 LIMIT 1"
    );
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(unit.tenant.as_str())
        .bind(unit.user.as_str())
        .bind(embedding.to_pgvector())
        .fetch_optional(conn)
        .await
}

/// Active memories that name `value` and are at least `threshold` similar to the change.
async fn naming(conn: &mut PgConnection, unit: &Unit<'_>, value: &str, embedding: &Embedding, threshold: f32) -> sqlx::Result<Vec<Uuid>> {
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
