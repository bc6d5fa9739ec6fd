//! "Now", injectable: the system clock in production; a settable one for replays and
//! evaluations that run weeks of conversations in seconds. Jobs take their time from
//! the run (`--now`), lookups and ingestion from the application's clock.

use std::sync::{Arc, RwLock};

use chrono::{DateTime, Utc};

#[derive(Debug, Clone, Default)]
pub struct Clock(Option<Arc<RwLock<DateTime<Utc>>>>);

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self(None)
    }

    /// A clock that stays at `at` until [`Clock::set`] moves it.
    pub fn fixed(at: DateTime<Utc>) -> Self {
        Self(Some(Arc::new(RwLock::new(at))))
    }

    pub fn now(&self) -> DateTime<Utc> {
        match &self.0 {
            None => Utc::now(),
            Some(at) => *at.read().expect("not poisoned"),
        }
    }

    /// Moves a fixed clock; the system clock cannot be moved.
    pub fn set(&self, at: DateTime<Utc>) {
        if let Some(current) = &self.0 {
            *current.write().expect("not poisoned") = at;
        }
    }
}
