//! A user as a whole: sessions and period summaries, export, deletion and its record.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::input::{Int, MAX_PAGE, Page};
use super::{AppState, Error, scopes};
use crate::imports::{self, Imported};
use crate::{sessions, users};
use engram_base::auth::Principal;
use engram_base::domain::{Cursor, SessionId, UserId};

#[derive(Serialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<sessions::Session>,
}

#[derive(Serialize, ToSchema)]
pub struct SummaryList {
    pub summaries: Vec<sessions::PeriodSummary>,
}

/// Every table's rows for the user, embeddings left out: `events`, `sessions`,
/// `period_summaries`, `memories`, `memory_history`, `memory_access`, `feedback`,
/// `job_runs`, `job_checkpoints`, each an array.
#[derive(Serialize, ToSchema)]
pub struct Export {
    /// `engram.export`.
    pub format: &'static str,
    /// The layout of the tables; `POST /v1/users/{user_id}/import` refuses a version it
    /// does not know.
    pub format_version: u64,
    pub user_id: String,
    pub exported_at: chrono::DateTime<chrono::Utc>,
    /// The model this installation's vectors are made by. The export carries no vector:
    /// an import makes them with its own model.
    pub embedding_model: String,
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub tables: serde_json::Map<String, Value>,
}

#[derive(Serialize, ToSchema)]
pub struct Deleted {
    pub user_id: String,
    /// Rows removed per table.
    #[schema(value_type = Object)]
    pub deleted: Value,
}

/// A page of the tenant's users; `next_cursor` is absent on the last.
#[derive(Serialize, ToSchema)]
pub struct UserPage {
    pub users: Vec<users::UserSummary>,
    pub next_cursor: Option<String>,
}

/// A page of a listing (`limit`, `cursor`), as a query string or a tool gives it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery<C = Cursor> {
    pub limit: Option<Int>,
    pub cursor: Option<C>,
}

/// The tenant's users in id order, a page at a time; `limit` 1–200, 50 when absent.
/// Tenant-wide: a key bound to a user lacks the scope it needs.
pub async fn list(state: &AppState, principal: &Principal, query: PageQuery<UserId>) -> Result<UserPage, Error> {
    let page = Page::new(query.limit, query.cursor, 50)?;
    if let Some(after) = &page.after {
        scopes::reach(principal, after)?;
    }
    let users = users::list(&state.db, &principal.tenant, page.after.as_ref().map(UserId::as_str), page.limit).await?;
    let next_cursor = page.next(&users, |u| u.user_id.clone());
    Ok(UserPage { users, next_cursor })
}

/// One user's counts; [`Error::NotFound`] when engram holds nothing of them.
pub async fn summary(state: &AppState, principal: &Principal, user: &UserId) -> Result<users::UserSummary, Error> {
    scopes::reach(principal, user)?;
    users::summary(&state.db, &principal.tenant, user)
        .await?
        .ok_or_else(|| Error::NotFound(format!("engram holds nothing of user `{user}`")))
}

/// A page of raw turns, newest first.
#[derive(Serialize, ToSchema)]
pub struct TurnPage {
    pub events: Vec<sessions::Turn>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// Which turns a listing shows (`GET /v1/users/{user_id}/events`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnQuery {
    pub session_id: Option<SessionId>,
    pub limit: Option<Int>,
    pub cursor: Option<Cursor>,
}

/// The user's raw turns newest first, of one session when `session_id` is given;
/// `limit` 1–200, 50 when absent.
pub async fn turns(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    query: TurnQuery,
) -> Result<TurnPage, Error> {
    scopes::reach(principal, user)?;
    let page = Page::new(query.limit, query.cursor, 50)?;
    let session = query.session_id.as_ref().map(SessionId::as_str);
    let events = sessions::turns(&state.db, &principal.tenant, user, session, page.after_id(), page.limit).await?;
    let next_cursor = page.next(&events, |e| e.id.to_string());
    Ok(TurnPage { events, next_cursor })
}

/// Served by `GET /admin/v1/users/{user_id}/deletions`.
#[derive(Serialize, ToSchema)]
pub struct DeletionList {
    pub deletions: Vec<users::Deletion>,
}

/// How many of the latest to list (`limit`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatestQuery {
    pub limit: Option<Int>,
}

/// The user's latest sessions with their summaries; `limit` 1–200, 20 when absent.
pub async fn sessions(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    query: LatestQuery,
) -> Result<SessionList, Error> {
    scopes::reach(principal, user)?;
    let limit = Int::within(query.limit, "limit", 20, 1..=MAX_PAGE)?;
    let sessions = sessions::latest(&state.db, &principal.tenant, user, limit).await?;
    Ok(SessionList { sessions })
}

/// The user's latest period summaries; `limit` 1–200, 20 when absent.
pub async fn summaries(
    state: &AppState,
    principal: &Principal,
    user: &UserId,
    query: LatestQuery,
) -> Result<SummaryList, Error> {
    scopes::reach(principal, user)?;
    let limit = Int::within(query.limit, "limit", 20, 1..=MAX_PAGE)?;
    let summaries = sessions::latest_periods(&state.db, &principal.tenant, user, limit).await?;
    Ok(SummaryList { summaries })
}

/// Everything stored for the user.
pub async fn export(state: &AppState, principal: &Principal, user: &UserId) -> Result<Export, Error> {
    scopes::reach(principal, user)?;
    let tables = users::export(&state.db, &principal.tenant, user).await?;
    Ok(Export {
        format: imports::FORMAT,
        format_version: imports::FORMAT_VERSION,
        user_id: user.to_string(),
        exported_at: state.clock.now(),
        embedding_model: state.embedder.model().to_owned(),
        tables,
    })
}

/// Reads an export of engram's, or Mem0's `get_all`, into the user; see [`imports`].
pub async fn import(state: &AppState, principal: &Principal, user: &UserId, doc: Value) -> Result<Imported, Error> {
    scopes::reach(principal, user)?;
    let importer = imports::Importer {
        db: &state.db,
        embedder: &state.embedder,
        secret_kinds: &state.settings.ingest.redact,
        actor: principal.actor().to_string(),
        graph_scan_limit: state.graph.settings.scan_limit,
    };
    let imported = importer.import(&principal.tenant, Some(user), doc).await.map_err(|err| match err {
        imports::ImportError::Invalid(invalid) => Error::Invalid(invalid),
        imports::ImportError::Failed(err) => Error::Internal(err),
    })?;
    tracing::info!(tenant = %principal.tenant, added = ?imported.added, "user imported");
    Ok(imported)
}

/// Deletes everything stored for a user, and what this process holds of them.
pub async fn forget(state: &AppState, principal: &Principal, user: &UserId) -> Result<Deleted, Error> {
    scopes::reach(principal, user)?;
    let deleted = users::forget(&state.db, &principal.tenant, user, principal.key_id).await?;
    state.forget_user(&principal.tenant, user);
    tracing::info!(tenant = %principal.tenant, "user deleted");
    Ok(Deleted { user_id: user.to_string(), deleted })
}

/// When the user was forgotten, by whom, how much.
pub async fn deletions(state: &AppState, principal: &Principal, user: &UserId) -> Result<DeletionList, Error> {
    scopes::reach(principal, user)?;
    let deletions = users::deletions(&state.db, &principal.tenant, user).await?;
    Ok(DeletionList { deletions })
}
