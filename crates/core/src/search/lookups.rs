//! The lookup connections, preset with pgvector's iterative index scan so a per-user
//! filter still yields enough neighbours from the HNSW index, and the way each lookup takes.
//!
//! Two ways to find a user's candidates, because the right one depends on how many
//! memories the user has:
//! - **Scan** (most users): read the user's rows once, at most `search.scan_limit`,
//!   computing similarity and keyword match on each, on connections that cache one
//!   generic plan per statement (it has one sensible shape): no planning per lookup.
//! - **Index** (users with more): the HNSW index for the nearest and the text indexes
//!   for keyword matches, on connections that plan each lookup with its parameters, as
//!   whether an index or the user's rows are cheaper is a per-user matter.
//!
//! A scan that finds more rows than that hands over to the index way, and the
//! user is remembered as large for [`LARGE_USER_TTL`], together with whether they have
//! an HNSW index of their own over that table (`index_large_users`, a partial index on
//! their ids). Those who have one are looked up on connections whose `ef_search` is the
//! shorter `search.user_index_ef_search`: every node of that graph is theirs.
//!
//! Their whole lookup is planned with its parameters: whether the text indexes or the
//! user's own rows find their keyword matches cheaper depends on how common the words
//! are (a word in many memories of every tenant makes the text index yield all of
//! them, where reading the user's rows finds their few matches at once), and within a
//! time window whether to walk the index or sort the window's rows depends on the window.
//!
//! Unlike other tenant work, lookups do not run under the row-level-security role:
//! the text-search operators are not leakproof, so under a policy PostgreSQL must
//! check the policy before them and cannot use the text indexes, which turns a
//! keyword lookup for a large user into a scan of all their memories. Every statement
//! here filters by the tenant itself (`tenant_id = $1`), and
//! `read_api::no_route_shows_one_tenant_or_user_anything_of_another` checks every route.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqlx::PgConnection;
use sqlx::postgres::PgConnectOptions;

use super::SearchResult;
use crate::user_indexes::Indexed;
use engram_base::configuration::SearchSettings;
use engram_base::db::lend::{Held, LendingPool};
use engram_base::domain::TenantId;
use engram_language::terms::Terms;

/// How long a user found large stays on the index way before a scan looks again.
pub const LARGE_USER_TTL: Duration = Duration::from_secs(600);
/// Large users remembered at most; past it the memory starts afresh.
const LARGE_USERS_KEPT: usize = 100_000;

/// The lookup connections, and the users they found too large to scan.
pub struct Lookups {
    /// For scans and summaries: plans cached per connection (`force_generic_plan`).
    scans: LendingPool,
    /// For the index way through the shared graph: planned for each lookup
    /// (`force_custom_plan`), `search.ef_search`.
    pub(super) shared_graph: LendingPool,
    /// For users with an HNSW index of their own: planned for each lookup,
    /// `search.user_index_ef_search`.
    own_graphs: LendingPool,
    /// Users found with more memories than a scan reads.
    large_users: Remembered,
    /// Users found with more raw turns than a scan reads.
    large_event_users: Remembered,
    /// The names that tell nothing about which of a user's memories answers.
    pub(super) names: super::names::KnownNames,
}

/// A lookup of a user's rows of one table, which either way can answer.
pub(super) trait TableLookup {
    const TABLE: Indexed;

    fn user(&self) -> (&TenantId, &str);

    /// The query vector's dimension.
    fn dims(&self) -> usize;

    /// The user's rows read once; `None` when there are more than `search.scan_limit`.
    async fn scan(&self, conn: &mut PgConnection) -> sqlx::Result<Option<Scanned>>;

    /// Through an HNSW index and the text indexes, planned for the lookup.
    async fn indexed(&self, conn: &mut PgConnection) -> sqlx::Result<Scanned>;
}

/// What a lookup found, and the query terms' weights when it weighed them itself.
pub(super) struct Scanned {
    pub results: Vec<SearchResult>,
    pub weights: Option<Vec<f64>>,
}

/// Users remembered as too large to scan, for [`LARGE_USER_TTL`].
#[derive(Default)]
struct Remembered(Mutex<HashMap<(TenantId, String), LargeUser>>);

impl Remembered {
    fn get(&self, tenant: &TenantId, user: &str) -> Option<LargeUser> {
        let large = self.0.lock().expect("never poisoned: no panics under the lock");
        large.get(&(tenant.clone(), user.to_owned())).filter(|large| large.found.elapsed() < LARGE_USER_TTL).copied()
    }

    fn holds(&self, tenant: &TenantId, user: &str) -> bool {
        self.get(tenant, user).is_some()
    }

    fn remember(&self, tenant: &TenantId, user: &str, own_index: bool) {
        let mut large = self.0.lock().expect("never poisoned: no panics under the lock");
        if large.len() >= LARGE_USERS_KEPT {
            large.clear();
        }
        large.insert((tenant.clone(), user.to_owned()), LargeUser { found: Instant::now(), own_index });
    }

    fn forget(&self, tenant: &TenantId, user: &str) {
        self.0.lock().expect("never poisoned: no panics under the lock").remove(&(tenant.clone(), user.to_owned()));
    }
}

#[derive(Clone, Copy)]
struct LargeUser {
    found: Instant,
    /// Whether they have an HNSW index of their own over the table.
    own_index: bool,
}

impl Lookups {
    /// Connections to the read database, with pgvector's iterative index scan and
    /// `ef_search` set once per connection, so a lookup is one statement and one round
    /// trip. The index way gets a quarter of `max_connections` (at least 2) for each graph.
    pub fn new(read: &PgConnectOptions, settings: &SearchSettings, max_connections: u32) -> Self {
        let pool = |plans: &str, ef_search: u32, size: u32| {
            let options = read.clone().options([
                ("hnsw.iterative_scan", "relaxed_order".to_owned()),
                ("hnsw.ef_search", ef_search.to_string()),
                ("plan_cache_mode", plans.to_owned()),
            ]);
            LendingPool::new(engram_base::db::pool_options(size).connect_lazy_with(options), size)
        };
        Self {
            scans: pool("force_generic_plan", settings.ef_search, max_connections),
            shared_graph: pool("force_custom_plan", settings.ef_search, (max_connections / 4).max(2)),
            own_graphs: pool("force_custom_plan", settings.user_index_ef_search, (max_connections / 4).max(2)),
            large_users: Remembered::default(),
            large_event_users: Remembered::default(),
            names: super::names::KnownNames::default(),
        }
    }

    /// The connection of the scans' pool a search takes once for all its scans.
    pub fn scan_connection(&self) -> Held<'_> {
        Held::new(&self.scans)
    }

    /// A scan of the user's rows on `scans` ([`Self::scan_connection`]); `None` for a user
    /// with too many, who is remembered as large (with whether they have an HNSW index of
    /// their own) and not scanned again.
    pub(super) async fn scan<L: TableLookup>(&self, scans: &mut Held<'_>, lookup: &L) -> sqlx::Result<Option<Scanned>> {
        let (tenant, user) = lookup.user();
        let remembered = self.remembered(L::TABLE);
        if remembered.holds(tenant, user) {
            return Ok(None);
        }
        if let Some(found) = lookup.scan(scans.get().await?).await? {
            return Ok(Some(found));
        }
        let mut conn = self.shared_graph.acquire().await?;
        let own_index = has_own_index(&mut *conn, L::TABLE, tenant, user, lookup.dims()).await?;
        conn.give_back();
        remembered.remember(tenant, user, own_index);
        Ok(None)
    }

    /// The index way, by one statement planned for the lookup: through the user's own
    /// HNSW graph when they have one, else through the shared graph.
    pub(super) async fn indexed<L: TableLookup>(&self, lookup: &L) -> sqlx::Result<Scanned> {
        let (tenant, user) = lookup.user();
        let own_index = self.remembered(L::TABLE).get(tenant, user).is_some_and(|large| large.own_index);
        let pool = if own_index { &self.own_graphs } else { &self.shared_graph };
        let mut conn = pool.acquire().await?;
        let found = lookup.indexed(&mut conn).await?;
        conn.give_back();
        Ok(found)
    }

    fn remembered(&self, table: Indexed) -> &Remembered {
        match table {
            Indexed::Memories => &self.large_users,
            Indexed::Events => &self.large_event_users,
        }
    }

    /// Weighs the query's terms by their rarity among the user's latest turns, unless
    /// they are weighed already (on `scans`).
    pub(super) async fn weigh(
        &self,
        scans: &mut Held<'_>,
        tenant: &TenantId,
        user: &str,
        terms: &mut Terms,
    ) -> sqlx::Result<()> {
        if !terms.unweighed() {
            return Ok(());
        }
        let escaped = terms.escaped();
        let sql = format!(
            "WITH {} SELECT coalesce(array_agg(w ORDER BY n), '{{}}') FROM weights",
            super::terms::recent_weights_sql("$3")
        );
        let weights: Vec<f64> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(user)
            .bind(&escaped)
            .fetch_one(scans.get().await?)
            .await?;
        terms.weigh(weights);
        Ok(())
    }

    /// Forgets what was learnt about a user who was just forgotten.
    pub fn forget_user(&self, tenant: &TenantId, user: &str) {
        self.large_users.forget(tenant, user);
        self.large_event_users.forget(tenant, user);
        self.names.forget(tenant, user);
    }
}

/// Whether the user has a valid HNSW index of their own over `table` for vectors of `dims`.
pub async fn has_own_index(
    db: impl sqlx::PgExecutor<'_>,
    table: Indexed,
    tenant: &TenantId,
    user: &str,
    dims: usize,
) -> sqlx::Result<bool> {
    let index = crate::user_indexes::own_index(db, table, tenant.as_str(), user, dims).await?;
    Ok(index.is_some_and(|(_, valid)| valid))
}

/// Candidates per source: enough for re-ranking to matter, few enough that a user
/// with 100,000 memories does not make the HNSW scan go far.
pub fn candidates(limit: usize, settings: &SearchSettings) -> usize {
    (2 * limit).max(10).min(settings.candidates.max(limit))
}
