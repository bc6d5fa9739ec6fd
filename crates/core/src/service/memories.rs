//! One user's memories: listing and detail, and the person's own changes — an explicit
//! memory, an edit, a pin, a deletion for good, an operator's restore. Each change is
//! one transaction under the user's lock, with its history row and actor `key:<id>`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::input::Params;
use super::users::MAX_PAGE;
use super::{AppState, Error, scopes};
use crate::memories::edit::{self, Edit};
use crate::memories::{self, CATEGORIES, Change, HistoryEntry, ListFilter, Memory, NewMemory, RestoreError, Status};
use crate::privacy::{self, Erasure};
use engram_base::auth::Principal;
use engram_base::db::begin_tenant_tx;
use engram_base::domain::{Kind, UserId, ValidationError};

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
    pub category: Option<String>,
    /// A stable name for what this states (`employer`, `home_city`): a later memory with
    /// the same key supersedes this one.
    pub key: Option<String>,
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
    /// `created`, or `duplicate` when an active memory already said the same.
    pub outcome: &'static str,
    /// Same-key memories this one replaced.
    pub superseded: Vec<Uuid>,
}

/// An edit (`PATCH /v1/users/{user_id}/memories/{memory_id}`): at least one field.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryEdit {
    pub content: Option<String>,
    pub category: Option<String>,
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

/// The parameters of a memory listing.
pub const LIST_PARAMS: &[&str] = &["category", "status", "kind", "key", "limit", "cursor"];

fn memory_id(id: &str) -> Result<Uuid, ValidationError> {
    id.parse().map_err(|_| ValidationError::new("memory_id", "must be a UUID"))
}

fn actor(principal: &Principal) -> String {
    format!("key:{}", principal.key_id)
}

/// One page of a user's memories, newest first.
pub async fn page(state: &AppState, principal: &Principal, user: String, params: &Params) -> Result<MemoryPage, Error> {
    let user = scopes::user(principal, user)?;
    let checked = |name: &str, allowed: &[&str]| -> Result<Option<String>, ValidationError> {
        params.text(name).map(|v| memories::check_one_of(name, v, allowed).map(|()| v.to_owned())).transpose()
    };
    let filter = ListFilter {
        category: checked("category", CATEGORIES)?,
        status: params
            .text("status")
            .map(|v| memories::parse_one_of("status", v, &Status::ALL, Status::as_str))
            .transpose()?,
        kind: params.text("kind").map(|v| memories::parse_one_of("kind", v, &Kind::ALL, Kind::as_str)).transpose()?,
        key: params.text("key").map(|key| key_of("key", key)).transpose()?,
        after: params
            .text("cursor")
            .map(|c| c.parse::<Uuid>().map_err(|_| ValidationError::new("cursor", "is not a cursor this API returned")))
            .transpose()?,
        limit: params.int("limit", 50, 1..=MAX_PAGE)?,
    };
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let page = memories::list(&mut tx, &principal.tenant, &user, &filter).await?;
    tx.commit().await?;
    let next_cursor = (page.len() as i64 == filter.limit).then(|| page.last().map(|m| m.id.to_string())).flatten();
    let now = state.clock.now();
    let page = page.into_iter().map(|m| m.with_decay(&state.decay, now)).collect();
    Ok(MemoryPage { memories: page, next_cursor })
}

/// A memory with every change to it.
pub async fn detail(state: &AppState, principal: &Principal, user: String, id: &str) -> Result<MemoryDetail, Error> {
    let (user, id) = (scopes::user(principal, user)?, memory_id(id)?);
    let mut tx = begin_tenant_tx(&state.db.read_pool, &principal.tenant).await?;
    let detail = read_detail(state, &mut tx, principal, &user, id).await?;
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
pub async fn restore(state: &AppState, principal: &Principal, user: String, id: &str) -> Result<MemoryDetail, Error> {
    let (user, id) = (scopes::user(principal, user)?, memory_id(id)?);
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    memories::restore(&mut tx, &principal.tenant, &user, id, &actor(principal)).await.map_err(|err| match err {
        RestoreError::NotFound(_) => Error::NotFound(err.to_string()),
        RestoreError::NotRestorable { .. } => Error::Conflict(err.to_string()),
        RestoreError::Database(err) => err.into(),
    })?;
    let detail = read_detail(state, &mut tx, principal, &user, id).await?;
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

fn category_of(category: &str) -> Result<String, ValidationError> {
    memories::check_one_of("category", category, CATEGORIES).map(|()| category.to_owned())
}

fn importance_of(importance: f32) -> Result<f32, ValidationError> {
    if (0.0..=1.0).contains(&importance) {
        Ok(importance)
    } else {
        Err(ValidationError::new("importance", "must be between 0 and 1"))
    }
}

/// A key is a name, not a sentence: `employer`, or a client's own id for a slot (a
/// LangGraph store's keys are often UUIDs).
fn key_of(field: &str, key: &str) -> Result<String, ValidationError> {
    let ok = !key.is_empty()
        && key.len() <= 128
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if ok {
        Ok(key.to_owned())
    } else {
        Err(ValidationError::new(field, "must be 1–128 characters of A-Z, a-z, 0-9, _, -, . and :"))
    }
}

/// Adds an explicit memory, searchable at once: a same-key memory is superseded, a
/// near-duplicate of an active memory is refreshed instead.
pub async fn add(
    state: &AppState,
    principal: &Principal,
    user: String,
    request: NewMemoryRequest,
) -> Result<AddedMemory, Error> {
    let user = scopes::user(principal, user)?;
    let content = content_of(state, "content", &request.content)?;
    let category = request.category.as_deref().map(category_of).transpose()?.unwrap_or_else(|| "statement".into());
    let key = request.key.as_deref().map(|key| key_of("key", key)).transpose()?;
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
        return Ok(AddedMemory { memory, outcome: "duplicate", superseded: Vec::new() });
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
    Ok(AddedMemory { memory, outcome: "created", superseded })
}

/// Changes a memory's content, category, importance or pin; a new content is embedded.
pub async fn update(
    state: &AppState,
    principal: &Principal,
    user: String,
    id: &str,
    request: MemoryEdit,
) -> Result<MemoryDetail, Error> {
    let (user, id) = (scopes::user(principal, user)?, memory_id(id)?);
    let edit = Edit {
        content: request.content.as_deref().map(|c| content_of(state, "content", c)).transpose()?,
        category: request.category.as_deref().map(category_of).transpose()?,
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
    if !edit::update(&mut tx, &principal.tenant, &user, id, &edit, vector, &change).await? {
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
    user: String,
    id: &str,
    params: &Params,
) -> Result<MemoryDeleted, Error> {
    let (user, id) = (scopes::user(principal, user)?, memory_id(id)?);
    let with_sources = match params.text("sources") {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ValidationError::new("sources", "must be true or false").into()),
    };
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
