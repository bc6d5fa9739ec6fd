//! Recently checked keys, so a lookup does not cost a database round trip per
//! request. Entries live `server.key_cache_secs`; only the secret's hash is kept.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqlx::PgPool;

use super::keys::{Principal, authenticate, hash};

const MAX_ENTRIES: usize = 10_000;

pub struct KeyCache {
    ttl: Duration,
    entries: Mutex<HashMap<Vec<u8>, (Principal, Instant)>>,
}

impl KeyCache {
    pub fn new(ttl: Duration) -> Self {
        Self { ttl, entries: Mutex::new(HashMap::new()) }
    }

    /// The principal behind `secret`, from the cache or the database; unknown and
    /// revoked keys are never cached.
    pub async fn authenticate(&self, pool: &PgPool, secret: &str) -> sqlx::Result<Option<Principal>> {
        if self.ttl.is_zero() {
            return authenticate(pool, secret).await;
        }
        let fingerprint = hash(secret);
        if let Some((principal, at)) = self.entries.lock().expect("key cache").get(&fingerprint)
            && at.elapsed() < self.ttl
        {
            return Ok(Some(principal.clone()));
        }
        let principal = authenticate(pool, secret).await?;
        let mut entries = self.entries.lock().expect("key cache");
        match &principal {
            Some(p) => {
                if entries.len() >= MAX_ENTRIES {
                    entries.retain(|_, (_, at)| at.elapsed() < self.ttl);
                }
                entries.insert(fingerprint, (p.clone(), Instant::now()));
            }
            None => {
                entries.remove(&fingerprint);
            }
        }
        Ok(principal)
    }
}
