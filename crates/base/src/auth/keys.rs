//! Creating, listing, revoking and checking API keys.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::Scope;
use crate::configuration::RateLimit;
use crate::domain::{TenantId, UserId};

const KEY_PREFIX: &str = "egm_";

/// A key as `keys list` shows it: never the secret.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct ApiKey {
    pub id: Uuid,
    pub tenant_id: String,
    pub name: Option<String>,
    pub scopes: Vec<String>,
    pub prefix: String,
    /// The key's own rate limit; none: `server.rate_limit`.
    pub rate_limit: Option<String>,
    /// The one end user the key reaches; none: every user of its tenant.
    pub user_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// The result of creating a key: the only time the secret exists outside the client.
pub struct CreatedKey {
    pub id: Uuid,
    pub secret: String,
}

/// Who is calling: the key's tenant and scopes, after a successful lookup.
#[derive(Debug, Clone)]
pub struct Principal {
    pub key_id: Uuid,
    pub tenant: TenantId,
    pub scopes: Vec<Scope>,
    /// The key's own rate limit, if it has one.
    pub rate_limit: Option<RateLimit>,
    /// The one end user the key reaches, if it is bound to one.
    pub user: Option<UserId>,
}

impl Principal {
    /// The key, as the changes it makes record it.
    pub fn actor(&self) -> crate::domain::Actor {
        crate::domain::Actor::Key(self.key_id)
    }
}

/// What a new key is: its tenant and scopes, and optionally a name, a rate limit and
/// the one user it is bound to.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub tenant: TenantId,
    pub scopes: Vec<Scope>,
    pub name: Option<String>,
    pub rate_limit: Option<RateLimit>,
    pub user: Option<UserId>,
}

impl NewKey {
    pub fn new(tenant: TenantId, scopes: &[Scope]) -> Self {
        Self { tenant, scopes: scopes.to_vec(), name: None, rate_limit: None, user: None }
    }

    pub fn named(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// Refused unless a key bound to a user stays within that user: read and ingest
    /// only, since admin and operator act on the whole tenant or installation.
    pub fn check(&self) -> Result<(), String> {
        let wide = self.scopes.iter().find(|s| matches!(s, Scope::Admin | Scope::Operator));
        match (&self.user, wide) {
            (Some(_), Some(scope)) => {
                Err(format!("a key bound to a user may have only the read and ingest scopes, not `{scope}`"))
            }
            _ => Ok(()),
        }
    }
}

/// Registers a tenant (nothing happens when it exists): a key's tenant, or the tenant
/// `engram ingest` loads turns into.
pub async fn add_tenant(conn: &mut PgConnection, tenant: &TenantId) -> sqlx::Result<()> {
    sqlx::query!("INSERT INTO tenants (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING", tenant.as_str())
        .execute(conn)
        .await?;
    Ok(())
}

#[tracing::instrument(skip(pool))]
pub async fn create_key(pool: &PgPool, key: &NewKey) -> sqlx::Result<CreatedKey> {
    let secret = format!("{KEY_PREFIX}{}", random_hex(24));
    let id = Uuid::now_v7();
    let scopes: Vec<&str> = key.scopes.iter().map(|s| s.as_str()).collect();
    let mut tx = pool.begin().await?;
    add_tenant(&mut tx, &key.tenant).await?;
    sqlx::query!(
        "INSERT INTO api_keys (tenant_id, id, name, scopes, secret_hash, prefix, rate_limit, user_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        key.tenant.as_str(),
        id,
        key.name.as_deref(),
        &scopes as _,
        hash(&secret),
        &secret[..KEY_PREFIX.len() + 8],
        key.rate_limit.map(|r| r.to_string()),
        key.user.as_ref().map(UserId::as_str)
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(CreatedKey { id, secret })
}

pub async fn list_keys(pool: &PgPool) -> sqlx::Result<Vec<ApiKey>> {
    sqlx::query_as!(
        ApiKey,
        "SELECT id, tenant_id, name, scopes, prefix, rate_limit, user_id, created_at, revoked_at
         FROM api_keys ORDER BY tenant_id, created_at",
    )
    .fetch_all(pool)
    .await
}

/// Revokes a key; false when no active key has that id.
#[tracing::instrument(skip(pool))]
pub async fn revoke_key(pool: &PgPool, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query!("UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL", id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// The principal behind a presented secret, if it is a live key.
pub async fn authenticate(pool: &PgPool, secret: &str) -> sqlx::Result<Option<Principal>> {
    if !secret.starts_with(KEY_PREFIX) || secret.len() > 128 {
        return Ok(None);
    }
    let row = sqlx::query_as!(
        KeyRow,
        "SELECT id, tenant_id, scopes, rate_limit, user_id FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL",
        hash(secret),
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.and_then(|row| {
        Some(Principal {
            key_id: row.id,
            tenant: TenantId::parse(row.tenant_id).ok()?,
            scopes: row.scopes.iter().filter_map(|s| s.parse().ok()).collect(),
            rate_limit: row.rate_limit.and_then(|r| RateLimit::parse(&r).ok()),
            user: match row.user_id {
                Some(user) => Some(UserId::parse(user).ok()?),
                None => None,
            },
        })
    }))
}

/// What authentication reads of a live key.
struct KeyRow {
    id: Uuid,
    tenant_id: String,
    scopes: Vec<String>,
    rate_limit: Option<String>,
    user_id: Option<String>,
}

impl Principal {
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }
}

/// Keys are 192 random bits, so one unsalted SHA-256 is enough to make a leaked table useless.
pub fn hash(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

fn random_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}
