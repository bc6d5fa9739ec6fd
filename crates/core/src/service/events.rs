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
use engram_base::domain::{NewEvent, Owner, Role, UserId};

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
    let replies: Vec<usize> =
        events.iter().enumerate().filter(|(_, e)| e.role == Role::Assistant).map(|(i, _)| i).collect();
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
    let replies: Vec<Uuid> =
        replies.into_iter().filter(|i| done.fresh.contains(&done.ids[*i])).map(|i| done.ids[i]).collect();
    acknowledged(state, principal, &replies).await?;
    Ok(done)
}

/// Replies stored after the request they answer lose the values they name (see
/// [`forget::acknowledgments`]); one read for the whole batch, a write only for a user
/// with such a reply.
async fn acknowledged(state: &AppState, principal: &Principal, ids: &[Uuid]) -> Result<(), Error> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    let found = forget::acknowledging(&mut tx, &principal.tenant, ids).await?;
    if found.is_empty() {
        return Ok(());
    }
    let mut by_user: BTreeMap<UserId, Vec<(Uuid, String)>> = BTreeMap::new();
    for (user, id, kept) in found {
        by_user.entry(user).or_default().push((id, kept));
    }
    let users: Vec<&str> = by_user.keys().map(UserId::as_str).collect();
    crate::users::hold(&mut tx, &principal.tenant, &users).await?;
    let mut to_embed = Vec::new();
    for (user, rewrites) in &by_user {
        to_embed
            .extend(crate::ingest::rewrite::rewrite_turns(&mut tx, &principal.tenant, user, rewrites).await?.to_embed);
    }
    tx.commit().await?;
    state.vectors.submit(&principal.tenant, &to_embed);
    Ok(())
}

/// Honours the requests to forget in `ids`, the user's turns just stored.
async fn honour(state: &AppState, principal: &Principal, user: &UserId, ids: &[Uuid]) -> Result<(), Error> {
    let mut tx = begin_tenant_tx(&state.db.pool, &principal.tenant).await?;
    crate::users::hold_exclusively(&mut tx, &principal.tenant, user).await?;
    let change = Change::by(principal.actor(), None, "the user asked to forget it");
    let limit = state.graph.settings.scan_limit;
    let honoured = forget::honour(&mut tx, &state.embedder, Owner::new(&principal.tenant, user), ids, &change, limit)
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
