//! A user as a whole: sessions and period summaries, export, deletion and its record.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::input::Params;
use super::{AppState, Error, scopes};
use crate::{sessions, users};
use engram_base::auth::Principal;
use engram_base::domain::{UserId, ValidationError};

/// The longest page a listing serves.
pub const MAX_PAGE: i64 = 200;

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
    pub user_id: String,
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

/// The parameters of a user listing.
pub const USER_LIST_PARAMS: &[&str] = &["limit", "cursor"];

/// The tenant's users in id order, a page at a time; `limit` 1–200, 50 when absent.
/// Tenant-wide: a key bound to a user lacks the scope it needs.
pub async fn list(state: &AppState, principal: &Principal, params: &Params) -> Result<UserPage, Error> {
    let limit = params.int("limit", 50, 1..=MAX_PAGE)?;
    let after = params.text("cursor").map(|c| scopes::user(principal, c)).transpose()?;
    let users = users::list(&state.db, &principal.tenant, after.as_ref().map(UserId::as_str), limit).await?;
    let next_cursor = (users.len() as i64 == limit).then(|| users.last().map(|u| u.user_id.clone())).flatten();
    Ok(UserPage { users, next_cursor })
}

/// One user's counts; [`Error::NotFound`] when engram holds nothing of them.
pub async fn summary(state: &AppState, principal: &Principal, user: String) -> Result<users::UserSummary, Error> {
    let user = scopes::user(principal, user)?;
    users::summary(&state.db, &principal.tenant, &user)
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

/// The parameters of a turn listing.
pub const TURN_PARAMS: &[&str] = &["session_id", "limit", "cursor"];

/// The user's raw turns newest first, of one session when `session_id` is given;
/// `limit` 1–200, 50 when absent.
pub async fn turns(state: &AppState, principal: &Principal, user: String, params: &Params) -> Result<TurnPage, Error> {
    let (user, limit) = (scopes::user(principal, user)?, params.int("limit", 50, 1..=MAX_PAGE)?);
    let before = params
        .text("cursor")
        .map(|c| {
            c.parse::<uuid::Uuid>().map_err(|_| ValidationError::new("cursor", "is not a cursor this API returned"))
        })
        .transpose()?;
    let session = params.text("session_id");
    let events = sessions::turns(&state.db, &principal.tenant, &user, session, before, limit).await?;
    let next_cursor = (events.len() as i64 == limit).then(|| events.last().map(|e| e.id.to_string())).flatten();
    Ok(TurnPage { events, next_cursor })
}

/// Served by `GET /admin/v1/users/{user_id}/deletions`.
#[derive(Serialize, ToSchema)]
pub struct DeletionList {
    pub deletions: Vec<users::Deletion>,
}

/// The user's latest sessions with their summaries; `limit` 1–200, 20 when absent.
pub async fn sessions(
    state: &AppState,
    principal: &Principal,
    user: String,
    params: &Params,
) -> Result<SessionList, Error> {
    let (user, limit) = (scopes::user(principal, user)?, params.int("limit", 20, 1..=MAX_PAGE)?);
    let sessions = sessions::latest(&state.db, &principal.tenant, &user, limit).await?;
    Ok(SessionList { sessions })
}

/// The user's latest period summaries; `limit` 1–200, 20 when absent.
pub async fn summaries(
    state: &AppState,
    principal: &Principal,
    user: String,
    params: &Params,
) -> Result<SummaryList, Error> {
    let (user, limit) = (scopes::user(principal, user)?, params.int("limit", 20, 1..=MAX_PAGE)?);
    let summaries = sessions::latest_periods(&state.db, &principal.tenant, &user, limit).await?;
    Ok(SummaryList { summaries })
}

/// Everything stored for the user.
pub async fn export(state: &AppState, principal: &Principal, user: String) -> Result<Export, Error> {
    let user = scopes::user(principal, user)?;
    let tables = users::export(&state.db, &principal.tenant, &user).await?;
    Ok(Export { user_id: user.to_string(), tables })
}

/// Deletes everything stored for a user, and what this process holds of them.
pub async fn forget(state: &AppState, principal: &Principal, user: String) -> Result<Deleted, Error> {
    let user = scopes::user(principal, user)?;
    let deleted = users::forget(&state.db, &principal.tenant, &user, principal.key_id).await?;
    state.forget_user(&principal.tenant, &user);
    tracing::info!(tenant = %principal.tenant, "user deleted");
    Ok(Deleted { user_id: user.to_string(), deleted })
}

/// When the user was forgotten, by whom, how much.
pub async fn deletions(state: &AppState, principal: &Principal, user: String) -> Result<DeletionList, Error> {
    let user = scopes::user(principal, user)?;
    let deletions = users::deletions(&state.db, &principal.tenant, &user).await?;
    Ok(DeletionList { deletions })
}
