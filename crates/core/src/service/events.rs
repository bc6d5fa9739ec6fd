//! Appending conversation events (`POST /v1/events`, MCP `remember`, `engram ingest`
//! goes through [`crate::ingest`] directly).

use std::collections::BTreeMap;

use uuid::Uuid;

use super::{AppState, Error, scopes};
use crate::ingest::{self, Ingested};
use crate::memories::Change;
use crate::privacy::forget;
use crate::privacy::referents::ResolveError;
use engram_base::auth::Principal;
use engram_base::db::begin_tenant_tx;
use engram_base::domain::{NewEvent, Role, UserId};

/// Stores validated events: handed to the embedder, corrections counted, and a request
/// to forget honoured at once.
pub async fn append(state: &AppState, principal: &Principal, events: Vec<NewEvent>) -> Result<Ingested, Error> {
    for event in &events {
        scopes::reach(principal, &event.user_id)?;
    }
    let asks: Vec<(usize, UserId)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.role == Role::User && forget::asks_to_forget(&e.content))
        .map(|(i, e)| (i, e.user_id.clone()))
        .collect();
    let roles: Vec<(usize, UserId)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.role == Role::Assistant)
        .map(|(i, e)| (i, e.user_id.clone()))
        .collect();
    let done =
        ingest::ingest(&state.db, &principal.tenant, events, &state.settings.ingest, Some(&state.detector)).await?;
    state.vectors.submit(&principal.tenant, &done.fresh);
    if done.corrections > 0 {
        state.metrics.corrections.with_label_values(&["detected"]).inc_by(done.corrections as u64);
    }
    let mut by_user: BTreeMap<UserId, Vec<Uuid>> = BTreeMap::new();
    for (i, user) in asks {
        if done.fresh.contains(&done.ids[i]) {
            by_user.entry(user).or_default().push(done.ids[i]);
        }
    }
    for (user, ids) in by_user {
        honour(state, principal, &user, &ids).await?;
    }
    let mut replies: BTreeMap<UserId, Vec<Uuid>> = BTreeMap::new();
    for (i, user) in roles {
        if done.fresh.contains(&done.ids[i]) {
            replies.entry(user).or_default().push(done.ids[i]);
        }
    }
    for (user, ids) in replies {
        acknowledged(state, principal, &user, &ids).await?;
    }
    Ok(done)
}

/// A reply stored after the request it answers loses the values it names (see
/// [`forget::acknowledgments`]).
async fn acknowledged(state: &AppState, principal: &Principal, user: &UserId, ids: &[Uuid]) -> Result<(), Error> {
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    // Most replies answer no such request: read first, lock and write only when one does.
    if forget::acknowledging(&mut tx, &principal.tenant, user, ids).await?.is_empty() {
        return Ok(());
    }
    crate::users::hold(&mut tx, &principal.tenant, &[user.as_str()]).await?;
    let rewritten = forget::acknowledgments(&mut tx, &principal.tenant, user, ids).await?;
    tx.commit().await?;
    state.vectors.submit(&principal.tenant, &rewritten.to_embed);
    Ok(())
}

/// Honours the requests to forget in `ids`, the user's turns just stored.
async fn honour(state: &AppState, principal: &Principal, user: &UserId, ids: &[Uuid]) -> Result<(), Error> {
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    crate::users::hold_exclusively(&mut tx, &principal.tenant, user).await?;
    let change = Change::by(format!("key:{}", principal.key_id), None, "the user asked to forget it");
    let limit = state.graph.settings.scan_limit;
    let honoured = forget::honour(&mut tx, &state.embedder, &principal.tenant, user, ids, &change, limit)
        .await
        .map_err(|err| match err {
            ResolveError::Database(err) => Error::from(err),
            ResolveError::Model(err) => Error::from(err),
        })?;
    tx.commit().await?;
    state.vectors.submit(&principal.tenant, &honoured.to_embed);
    tracing::info!(tenant = %principal.tenant, requests = honoured.requests, "forget requests honoured");
    Ok(())
}
