//! Lookup connections lent and taken back without a round trip.
//!
//! sqlx tests every connection that comes back to its pool with a round trip (a Sync and
//! its ReadyForQuery), so that one left in the middle of a statement or a transaction is
//! not handed out as it is. For a lookup, which ends with its statements done and holds
//! no transaction, that round trip is pure cost, in PostgreSQL's CPU and the server's,
//! on every lookup.
//!
//! A [`LendingPool`] keeps the connections whose borrower gave them back
//! ([`Lent::give_back`], after its last statement) aside, the most recently used on top,
//! and lends them again as they are. A connection dropped instead (an error, or a lookup
//! cancelled mid-statement) goes back to sqlx, which waits for what is left of it. One
//! set aside for a second or more is pinged before it is lent again, as sqlx does with
//! its own ([`super::pool_options`]), and one set aside for a minute goes back to sqlx,
//! whose idle timeout closes it. Borrowers take a permit first, one per connection the
//! pool may open, so none waits inside sqlx for a connection set aside here.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres};
use tokio::sync::{Semaphore, SemaphorePermit};

use super::{ACQUIRE_TIMEOUT, PING_AFTER_IDLE};

/// A connection set aside this long goes back to sqlx.
const RETURN_AFTER_IDLE: Duration = Duration::from_secs(60);

type Spare = (PoolConnection<Postgres>, Instant);

/// A pool whose borrowers give their connections back without a round trip.
pub struct LendingPool {
    pool: PgPool,
    permits: Semaphore,
    spare: Mutex<Vec<Spare>>,
}

impl LendingPool {
    /// Lends `pool`'s connections, at most `size` at a time (the pool's own maximum).
    pub fn new(pool: PgPool, size: u32) -> Self {
        Self { pool, permits: Semaphore::new(size as usize), spare: Mutex::new(Vec::new()) }
    }

    /// A connection: the one given back last, or one of sqlx's.
    pub async fn acquire(&self) -> sqlx::Result<Lent<'_>> {
        let permit = tokio::time::timeout(ACQUIRE_TIMEOUT, self.permits.acquire())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
            .map_err(|_| sqlx::Error::PoolClosed)?;
        while let Some((mut conn, since)) = self.take_spare() {
            // A connection that fails its ping is dropped: sqlx's own test then closes it.
            if since.elapsed() < PING_AFTER_IDLE || sqlx::Connection::ping(&mut *conn).await.is_ok() {
                return Ok(Lent { conn: Some(conn), pool: self, _permit: permit });
            }
        }
        let conn = self.pool.acquire().await?;
        Ok(Lent { conn: Some(conn), pool: self, _permit: permit })
    }

    /// The connection set aside last (the lock released at once).
    fn take_spare(&self) -> Option<Spare> {
        self.spare().pop()
    }

    fn spare(&self) -> MutexGuard<'_, Vec<Spare>> {
        self.spare.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many connections are set aside now.
    pub fn idle(&self) -> usize {
        self.spare().len()
    }
}

/// A connection lent by a [`LendingPool`]; dropped, it goes back to sqlx.
pub struct Lent<'a> {
    conn: Option<PoolConnection<Postgres>>,
    pool: &'a LendingPool,
    _permit: SemaphorePermit<'a>,
}

impl Lent<'_> {
    /// Sets the connection aside for the next borrower: its statements ran to the end.
    /// The connection set aside longest goes back to sqlx if it has been for a minute.
    pub fn give_back(mut self) {
        let Some(conn) = self.conn.take() else { return };
        let mut spare = self.pool.spare();
        let stale = spare.first().is_some_and(|(_, since)| since.elapsed() >= RETURN_AFTER_IDLE);
        let stale = stale.then(|| spare.remove(0));
        spare.push((conn, Instant::now()));
        drop(spare);
        drop(stale);
    }
}

impl Deref for Lent<'_> {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        self.conn.as_ref().expect("a lent connection until it is given back")
    }
}

impl DerefMut for Lent<'_> {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.conn.as_mut().expect("a lent connection until it is given back")
    }
}

/// One connection of a pool, taken when first needed and kept for the statements after
/// (each time one goes back to sqlx it costs a round trip); given back with
/// [`Held::give_back`] once they are done.
pub struct Held<'a> {
    pool: &'a LendingPool,
    conn: Option<Lent<'a>>,
}

impl<'a> Held<'a> {
    pub fn new(pool: &'a LendingPool) -> Self {
        Self { pool, conn: None }
    }

    pub async fn get(&mut self) -> sqlx::Result<&mut PgConnection> {
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => self.pool.acquire().await?,
        };
        Ok(&mut **self.conn.insert(conn))
    }

    /// Gives the connection back, if one was taken: every statement on it is done.
    pub fn give_back(self) {
        if let Some(conn) = self.conn {
            conn.give_back();
        }
    }
}
