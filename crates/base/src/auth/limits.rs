//! Per-key request rates: a token bucket per key (governor's GCRA), held by this
//! process — with N API replicas a key may send N times its rate in all. A key's own
//! limit wins over `server.rate_limit`; neither means unlimited.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use uuid::Uuid;

use super::Principal;
use crate::configuration::RateLimit;

pub struct RateLimits {
    default: Option<RateLimit>,
    clock: DefaultClock,
    buckets: Mutex<HashMap<Uuid, (RateLimit, Arc<DefaultDirectRateLimiter>)>>,
}

impl RateLimits {
    pub fn new(default: Option<RateLimit>) -> Self {
        Self { default, clock: DefaultClock::default(), buckets: Mutex::default() }
    }

    /// Takes one request from the key's bucket; `Err` says how long until the next
    /// request would be allowed.
    pub fn check(&self, principal: &Principal) -> Result<(), Duration> {
        let Some(limit) = principal.rate_limit.or(self.default) else { return Ok(()) };
        let bucket = {
            let mut buckets = self.buckets.lock().expect("never poisoned: no panics under the lock");
            let entry = buckets.entry(principal.key_id).or_insert_with(|| (limit, Arc::new(bucket(limit))));
            if entry.0 != limit {
                *entry = (limit, Arc::new(bucket(limit)));
            }
            entry.1.clone()
        };
        bucket.check().map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }
}

/// A bucket holding one period's requests, refilled evenly over the period.
fn bucket(limit: RateLimit) -> DefaultDirectRateLimiter {
    let every = (limit.per / limit.requests.get()).max(Duration::from_nanos(1));
    let quota = Quota::with_period(every).expect("a positive period").allow_burst(limit.requests);
    RateLimiter::direct(quota)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::TenantId;

    fn key(rate_limit: Option<&str>) -> Principal {
        Principal {
            key_id: Uuid::now_v7(),
            tenant: TenantId::parse("acme").unwrap(),
            scopes: vec![],
            rate_limit: rate_limit.map(|r| RateLimit::parse(r).unwrap()),
            user: None,
        }
    }

    #[test]
    fn a_key_gets_its_rate_and_then_waits() {
        let limits = RateLimits::new(Some(RateLimit::parse("1000/s").unwrap()));
        let slow = key(Some("3/m"));
        for _ in 0..3 {
            assert!(limits.check(&slow).is_ok());
        }
        let wait = limits.check(&slow).unwrap_err();
        assert!(wait > Duration::from_secs(15) && wait <= Duration::from_secs(20), "{wait:?}");
        let other = key(None);
        assert!((0..100).all(|_| limits.check(&other).is_ok()), "the default limit is per key");
        assert!((0..10_000).all(|_| RateLimits::new(None).check(&other).is_ok()), "no limit: unlimited");
    }
}
