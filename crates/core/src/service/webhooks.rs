//! A tenant's webhook subscriptions: subscribe a URL, list, delete, and read recent
//! attempts. A subscription sees every user of its tenant, so a key bound to one user
//! cannot manage them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::input::Int;
use super::{AppState, Error};
use crate::webhooks::{self, CreatedWebhook, Delivery, Event, Webhook};
use engram_base::auth::Principal;
use engram_base::domain::ValidationError;

/// `POST /admin/v1/webhooks`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWebhook {
    /// Where deliveries are posted: `https://…` (or `http://…`), a host that
    /// `webhooks.allowed_hosts` allows.
    pub url: String,
    /// At least one.
    pub events: Vec<Event>,
    /// What it is for, up to 200 characters.
    pub description: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<Webhook>,
}

#[derive(Serialize, ToSchema)]
pub struct WebhookDeleted {
    pub id: Uuid,
    pub deleted: bool,
}

#[derive(Serialize, ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<Delivery>,
}

/// Which attempts `GET /admin/v1/webhooks/{id}/deliveries` shows.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryQuery {
    pub limit: Option<Int>,
}

fn tenant_wide(principal: &Principal) -> Result<(), Error> {
    match &principal.user {
        Some(bound) => Err(Error::OtherUser(bound.clone())),
        None => Ok(()),
    }
}

/// Subscribes a URL; the answer holds the signing secret, shown only here.
pub async fn create(state: &AppState, principal: &Principal, request: NewWebhook) -> Result<CreatedWebhook, Error> {
    tenant_wide(principal)?;
    let url = reqwest::Url::parse(request.url.trim())
        .map_err(|e| ValidationError::new("url", format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ValidationError::new("url", "must be an http:// or https:// URL").into());
    }
    let Some(host) = url.host_str() else { return Err(ValidationError::new("url", "names no host").into()) };
    if !state.settings.webhooks.allows(host) {
        return Err(
            ValidationError::new("url", format!("names {host}, which webhooks.allowed_hosts does not allow")).into()
        );
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ValidationError::new("url", "must not carry a user name or password").into());
    }
    if request.events.is_empty() {
        return Err(ValidationError::new("events", "must name at least one event").into());
    }
    let mut events = request.events;
    events.sort_by_key(|e| Event::ALL.iter().position(|a| a == e));
    events.dedup();
    let description = request.description.as_deref().map(str::trim).filter(|d| !d.is_empty());
    if description.is_some_and(|d| d.chars().count() > 200) {
        return Err(ValidationError::new("description", "must be at most 200 characters").into());
    }
    let mut tx = state.db.tenant_tx(&principal.tenant).await?;
    let created = webhooks::create(&mut tx, &principal.tenant, url.as_str(), &events, description).await?;
    tx.commit().await?;
    tracing::info!(tenant = %principal.tenant, webhook = %created.id, "webhook subscribed");
    Ok(created)
}

/// The tenant's subscriptions, with what waits for each.
pub async fn list(state: &AppState, principal: &Principal) -> Result<WebhookList, Error> {
    tenant_wide(principal)?;
    let mut tx = state.db.tenant_tx(&principal.tenant).await?;
    let webhooks = webhooks::list(&mut tx, &principal.tenant).await?;
    tx.commit().await?;
    Ok(WebhookList { webhooks })
}

/// Deletes a subscription and what waits for it; [`Error::NotFound`] if the tenant has none by that id.
pub async fn delete(state: &AppState, principal: &Principal, id: Uuid) -> Result<WebhookDeleted, Error> {
    tenant_wide(principal)?;
    let mut tx = state.db.tenant_tx(&principal.tenant).await?;
    let deleted = webhooks::delete(&mut tx, &principal.tenant, id).await?;
    tx.commit().await?;
    match deleted {
        true => Ok(WebhookDeleted { id, deleted }),
        false => Err(Error::NotFound(format!("no webhook {id} in this tenant"))),
    }
}

/// A subscription's latest attempts, newest first; `limit` 1–200, 50 when absent.
pub async fn deliveries(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
    query: DeliveryQuery,
) -> Result<DeliveryList, Error> {
    tenant_wide(principal)?;
    let limit = Int::within(query.limit, "limit", 50, 1..=super::input::MAX_PAGE)?;
    let mut tx = state.db.tenant_tx(&principal.tenant).await?;
    let found = webhooks::deliveries(&mut tx, &principal.tenant, id, limit).await?;
    tx.commit().await?;
    match found {
        Some(deliveries) => Ok(DeliveryList { deliveries }),
        None => Err(Error::NotFound(format!("no webhook {id} in this tenant"))),
    }
}
