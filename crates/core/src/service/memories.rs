//! One user's memories: listing and detail, and the person's own changes — an explicit
//! memory, an edit, a pin, a deletion for good, an operator's restore. Each change is
//! one transaction under the user's lock, with its history row and actor `key:<id>`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::input::{Int, Key, Page};
use super::{AppState, Error, scopes};
use crate::memories::edit::{self, Edit};
use crate::memories::{self, Change, HistoryEntry, ListFilter, Memory, NewMemory, RestoreError, Status};
use crate::privacy::{self, Erasure};
use engram_base::auth::Principal;
use engram_base::db::begin_tenant_tx;
use engram_base::domain::{Category, Cursor, Kind, MemoryId, Owner, UserId, ValidationError};

/// An explicit memory this similar to an active one of the user is that memory again.
const DUPLICATE_SIMILARITY: f64 = 0.92;

#[derive(Serialize, ToSchema)]
pub struct MemoryPage {
    pub memories: Vec<Memory>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct MemoryDetail {
    pub memory: Memory,
    pub history: Vec<HistoryEntry>,
}

/// An explicit memory (`POST /v1/users/{user_id}/memories`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMemoryRequest {
    /// What to remember, in a sentence.
    pub content: String,
    /// One of the memory categories; `statement` when absent.
    pub category: Option<Category>,
    /// A stable name for what this states (`employer`, `home_city`): a later memory with
    /// the same key supersedes this one.
    #[schema(value_type = Option<String>)]
    pub key: Option<Key>,
    /// 0–1; 0.7 when absent.
    pub importance: Option<f32>,
    /// A pinned memory is never evicted.
    pub pinned: Option<bool>,
    /// Since when it holds (RFC 3339); now when absent.
    pub valid_from: Option<String>,
}

/// What adding a memory came to.
#[derive(Serialize, ToSchema)]
pub struct AddedMemory {
    /// The new memory, or the existing one it duplicates.
    pub memory: Memory,
    pub outcome: Outcome,
    /// Same-key memories this one replaced.
    pub superseded: Vec<Uuid>,
}

/// Whether adding a memory made one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A new memory.
    Created,
    /// An active memory already said the same: that one, refreshed.
    Duplicate,
}

/// An edit (`PATCH /v1/users/{user_id}/memories/{memory_id}`): at least one field.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryEdit {
    pub content: Option<String>,
    pub category: Option<Category>,
    pub importance: Option<f32>,
    pub pinned: Option<bool>,
}

/// What deleting a memory removed.
#[derive(Serialize, ToSchema)]
pub struct MemoryDeleted {
    pub memory_id: Uuid,
    /// Rows deleted or rewritten, per kind: `memories` (with duplicates merged into it),
    /// `memory_access`, `history_redacted`, `relations`, `entities`, `events_redacted`,
    /// `summaries_cleared`.
    pub deleted: BTreeMap<String, u64>,
}

/// Which memories a listing shows (`GET /v1/users/{user_id}/memories`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryQuery {
    pub category: Option<Category>,
    pub status: Option<Status>,
    pub kind: Option<Kind>,
    pub key: Option<Key>,
    pub limit: Option<Int>,
    pub cursor: Option<Cursor>,
}

fn actor(principal: &Principal) -> String {
    principal.actor().to_string()
}

/// One page of a user's memories, newest first.
pub async fn page(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    query: MemoryQuery,
) -> Result<MemoryPage, Error> {
    scopes::reach(principal, user)?;
    let page = Page::new(query.limit, query.cursor, 50)?;
    let filter = ListFilter {
        category: query.category,
        status: query.status,
        kind: query.kind,
        key: query.key.map(|k| k.0),
        after: page.after_id(),
        limit: page.limit,
    };
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let memories = memories::list(&mut tx, &principal.tenant, user, &filter).await?;
    tx.commit().await?;
    let next_cursor = page.next(&memories, |m| m.id.to_string());
    let now = state.clock.now();
    let memories = memories.into_iter().map(|m| m.with_decay(&state.decay, now)).collect();
    Ok(MemoryPage { memories, next_cursor })
}

/// A memory with every change to it.
pub async fn detail(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    id: MemoryId,
) -> Result<MemoryDetail, Error> {
    scopes::reach(principal, user)?;
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let detail = read_detail(state, &mut tx, principal, user, id.0).await?;
    tx.commit().await?;
    Ok(detail)
}

async fn read_detail(
    state: &AppState,
    conn: &mut sqlx::PgConnection,
    principal: &Principal,
    user: &UserId,
    id: Uuid,
) -> Result<MemoryDetail, Error> {
    let memory = memories::get(conn, &principal.tenant, user, id)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no memory {id} for this user")))?
        .with_decay(&state.decay, state.clock.now());
    let history = memories::history(conn, &principal.tenant, id).await?;
    Ok(MemoryDetail { memory, history })
}

/// Brings an evicted or merged memory back.
pub async fn restore(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    id: MemoryId,
) -> Result<MemoryDetail, Error> {
    scopes::reach(principal, user)?;
    let id = id.0;
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    memories::restore(&mut tx, &principal.tenant, user, id, &actor(principal)).await.map_err(|err| match err {
        RestoreError::NotFound(_) => Error::NotFound(err.to_string()),
        RestoreError::NotRestorable { .. } => Error::Conflict(err.to_string()),
        RestoreError::Database(err) => err.into(),
    })?;
    let detail = read_detail(state, &mut tx, principal, user, id).await?;
    tx.commit().await?;
    tracing::info!(tenant = %principal.tenant, "memory restored");
    Ok(detail)
}

fn content_of(state: &AppState, field: &str, content: &str) -> Result<String, ValidationError> {
    let content = content.trim();
    if content.is_empty() {
        return Err(ValidationError::new(field, "must not be empty"));
    }
    if content.len() > state.settings.ingest.max_content_bytes {
        return Err(ValidationError::new(
            field,
            format!("is longer than {} bytes", state.settings.ingest.max_content_bytes),
        ));
    }
    Ok(crate::ingest::secrets::redact(content, &state.settings.ingest.redact))
}

fn importance_of(importance: f32) -> Result<f32, ValidationError> {
    if (0.0..=1.0).contains(&importance) {
        Ok(importance)
    } else {
        Err(ValidationError::new("importance", "must be between 0 and 1"))
    }
}

/// Adds an explicit memory, searchable at once: a same-key memory is superseded, a
/// near-duplicate of an active memory is refreshed instead.
pub async fn add(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    request: NewMemoryRequest,
) -> Result<AddedMemory, Error> {
    scopes::reach(principal, user)?;
    let user = user.clone();
    let content = content_of(state, "content", &request.content)?;
    let category = request.category.unwrap_or(Category::Statement);
    let key = request.key.map(|k| k.0);
    let importance = request.importance.map(importance_of).transpose()?.unwrap_or(0.7);
    let valid_from = request
        .valid_from
        .as_deref()
        .map(|v| {
            DateTime::parse_from_rfc3339(v)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| ValidationError::new("valid_from", "must be an RFC 3339 time"))
        })
        .transpose()?
        .unwrap_or_else(|| state.clock.now());
    let embedding = state.embedder.embed_one(&memories::match_text(&content, key.as_deref(), None)).await?;
    let change = Change::by(actor(principal), None, "added by the user");
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    crate::users::hold(&mut tx, &principal.tenant, &[user.as_str()]).await?;
    if let Some(existing) = edit::duplicate_of(
        &mut tx,
        &principal.tenant,
        &user,
        (&content, key.as_deref()),
        &embedding,
        DUPLICATE_SIMILARITY,
    )
    .await?
    {
        edit::restate(&mut tx, &principal.tenant, &user, existing, &change).await?;
        let memory = read_detail(state, &mut tx, principal, &user, existing).await?.memory;
        tx.commit().await?;
        return Ok(AddedMemory { memory, outcome: Outcome::Duplicate, superseded: Vec::new() });
    }
    let new = NewMemory {
        user_id: user.clone(),
        kind: Kind::Fact,
        category,
        key: key.clone(),
        value: None,
        content,
        importance,
        source_event_ids: Vec::new(),
        source_quote: None,
        derived_from: Vec::new(),
        valid_from,
        pinned: request.pinned.unwrap_or(false),
    };
    let id = memories::insert(&mut tx, &principal.tenant, &new, &embedding, state.embedder.model(), &change).await?;
    let mut superseded = Vec::new();
    if let Some(key) = &key {
        for old in edit::active_with_key(&mut tx, &principal.tenant, &user, key).await? {
            let replaced = Change::by(actor(principal), None, "replaced by a memory with the same key");
            if old != id
                && memories::lifecycle::supersede(&mut tx, &principal.tenant, &user, old, id, valid_from, &replaced)
                    .await?
            {
                superseded.push(old);
            }
        }
    }
    let memory = read_detail(state, &mut tx, principal, &user, id).await?.memory;
    tx.commit().await?;
    Ok(AddedMemory { memory, outcome: Outcome::Created, superseded })
}

/// Changes a memory's content, category, importance or pin; a new content is embedded.
pub async fn update(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    id: MemoryId,
    request: MemoryEdit,
) -> Result<MemoryDetail, Error> {
    scopes::reach(principal, user)?;
    let (user, id) = (user.clone(), id.0);
    let edit = Edit {
        content: request.content.as_deref().map(|c| content_of(state, "content", c)).transpose()?,
        category: request.category,
        importance: request.importance.map(importance_of).transpose()?,
        pinned: request.pinned,
    };
    if edit.content.is_none() && edit.category.is_none() && edit.importance.is_none() && edit.pinned.is_none() {
        return Err(
            ValidationError::new("body", "must change at least one of content, category, importance, pinned").into()
        );
    }
    let vector = match &edit.content {
        Some(content) => Some(state.embedder.embed_one(content).await?),
        None => None,
    };
    let change = Change::by(actor(principal), None, "edited by the user");
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    crate::users::hold(&mut tx, &principal.tenant, &[user.as_str()]).await?;
    let model = state.embedder.model().to_owned();
    let vector = vector.as_ref().map(|v| (v, model.as_str()));
    if !edit::update(&mut tx, Owner::new(&principal.tenant, &user), id, &edit, vector, &change).await? {
        return Err(Error::NotFound(format!("no memory {id} for this user")));
    }
    let detail = read_detail(state, &mut tx, principal, &user, id).await?;
    tx.commit().await?;
    Ok(detail)
}

/// Deletes a memory for good (and, with `sources`, the text of the turns it came from);
/// audited without its content.
pub async fn delete(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    id: MemoryId,
    with_sources: bool,
) -> Result<MemoryDeleted, Error> {
    scopes::reach(principal, user)?;
    let (user, id) = (user.clone(), id.0);
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    // Units of the jobs in flight for this user finish first; none starts meanwhile.
    crate::users::hold_exclusively(&mut tx, &principal.tenant, &user).await?;
    let erasure = Erasure { memories: vec![id], with_sources, ..Default::default() };
    let change = Change::by(actor(principal), None, "deleted by the user");
    let erased =
        privacy::erase(&mut tx, &principal.tenant, &user, &erasure, &change, state.graph.settings.scan_limit).await?;
    if erased.counts.get("memories").copied().unwrap_or(0) == 0 {
        return Err(Error::NotFound(format!("no memory {id} for this user")));
    }
    let deleted: BTreeMap<String, u64> = erased.counts.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
    let details = serde_json::json!({"deleted": deleted, "sources": with_sources});
    crate::users::audit(&mut tx, &principal.tenant, &actor(principal), "delete_memory", &id.to_string(), details)
        .await?;
    tx.commit().await?;
    state.vectors.submit(&principal.tenant, &erased.to_embed);
    tracing::info!(tenant = %principal.tenant, "memory deleted");
    Ok(MemoryDeleted { memory_id: id, deleted })
}
