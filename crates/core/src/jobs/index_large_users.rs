//! `index_large_users`: a user with at least `min_memories` active memories gets an
//! HNSW index of their own over them (a partial index, see migration 0007), and one with
//! at least `min_events` raw turns with a vector gets one over those (migration 0016);
//! their vector lookups then use it instead of the shared graph. A user who fell below
//! half of that loses it again, and so does an index for vectors of another dimension
//! than the embedder's. At most `max_indexes` exist, both kinds together, first come,
//! first served: every index adds a little to planning any statement on its table.
//!
//! Index DDL cannot run inside a transaction, so unlike other jobs a unit is not one
//! transaction and a dry run does no work, it only counts: a unit writes the index's
//! row, then builds the index `CONCURRENTLY` (reads and writes go on meanwhile). Every
//! step is idempotent, and an index a crash left invalid is dropped and built again by
//! the next run. The job works on one user at a time: PostgreSQL builds one index of a
//! table at a time anyway.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::{Connection, PgConnection, PgPool};

use super::job::{Candidate, Job, OutsideTransaction, Unit, Units};
use super::{Counts, Models, Scope};
use crate::user_indexes::{self, Indexed};
use crate::users;
use engram_base::domain::{TenantId, UserId};

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexParams {
    /// Users with at least this many active memories get an index of their own over them.
    pub min_memories: i64,
    /// Users with at least this many raw turns with a vector get an index of their own over them.
    pub min_events: i64,
    /// Users' own indexes at most, both kinds together, across all tenants.
    pub max_indexes: i64,
    /// `maintenance_work_mem` for a build, in MB: a graph that fits builds much faster.
    pub build_memory_mb: u32,
}

impl Default for IndexParams {
    fn default() -> Self {
        Self { min_memories: 10_000, min_events: 10_000, max_indexes: 50, build_memory_mb: 512 }
    }
}

impl IndexParams {
    /// The rows a user needs for an index of their own over `table`.
    fn min_rows(&self, table: Indexed) -> i64 {
        match table {
            Indexed::Memories => self.min_memories,
            Indexed::Events => self.min_events,
        }
    }

    pub fn check(&self) -> Result<(), String> {
        if self.min_memories < 1 {
            return Err("params.min_memories: must be at least 1".into());
        }
        if self.min_events < 1 {
            return Err("params.min_events: must be at least 1".into());
        }
        if self.max_indexes < 0 {
            return Err("params.max_indexes: must not be negative".into());
        }
        if !(64..=16_384).contains(&self.build_memory_mb) {
            return Err("params.build_memory_mb: must be between 64 and 16384".into());
        }
        Ok(())
    }
}

/// Users large enough for an index, and users who have one.
pub async fn candidates(pool: &PgPool, params: &IndexParams, scope: &Scope) -> sqlx::Result<Vec<Candidate>> {
    let (tenant, user) = scope.columns();
    let mut users: Vec<Candidate> = sqlx::query!(
        r#"SELECT tenant_id AS "tenant_id!: TenantId", user_id AS "user_id!: UserId" FROM memories
          WHERE status = 'active' AND ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)
          GROUP BY tenant_id, user_id HAVING count(*) >= $3
         UNION
         SELECT tenant_id, user_id FROM events
          WHERE embedding_dims IS NOT NULL AND ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)
          GROUP BY tenant_id, user_id HAVING count(*) >= $4"#,
        tenant,
        user,
        params.min_memories,
        params.min_events
    )
    .map(|r| (r.tenant_id, r.user_id))
    .fetch_all(pool)
    .await?;
    users.extend(user_indexes::owners(pool, tenant, user).await?);
    users.sort();
    users.dedup();
    Ok(users)
}

/// The name of a user's index: a hash, as ids need not make a valid or short identifier.
fn index_name(unit: &Unit<'_>, table: Indexed, dims: usize) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{}/{}", unit.tenant.as_str(), unit.user.as_str()));
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("{}_user_vec_{dims}_{hex}", table.table())
}

/// Builds, keeps, rebuilds or drops one user's indexes for vectors of `dims`.
pub async fn run_unit(
    pool: &PgPool,
    params: &IndexParams,
    unit: &Unit<'_>,
    dims: usize,
    dry_run: bool,
) -> anyhow::Result<Counts> {
    let (tenant, user) = (unit.tenant.as_str(), unit.user.as_str());
    let mut counts = Counts::default();
    // Its own connection: session settings for the build must not reach the pool.
    let mut conn = pool.acquire().await?.detach();
    for name in user_indexes::stale(&mut conn, tenant, user, dims).await? {
        counts.add("dropped", 1);
        if !dry_run {
            user_indexes::drop(&mut conn, &name).await?;
        }
    }
    for table in Indexed::ALL {
        if !one_table(&mut conn, params, unit, table, dims, dry_run, &mut counts).await? {
            break;
        }
    }
    conn.close().await?;
    Ok(counts)
}

/// Builds, keeps, rebuilds or drops the user's index over `table`; false when the user
/// was forgotten meanwhile.
async fn one_table(
    conn: &mut PgConnection,
    params: &IndexParams,
    unit: &Unit<'_>,
    table: Indexed,
    dims: usize,
    dry_run: bool,
    counts: &mut Counts,
) -> anyhow::Result<bool> {
    let (tenant, user) = (unit.tenant.as_str(), unit.user.as_str());
    let rows = table.count_rows(&mut *conn, tenant, user, dims as i32).await?;
    let min_rows = params.min_rows(table);
    let build = match user_indexes::own_index(&mut *conn, table, tenant, user, dims).await? {
        Some((name, _)) if rows < min_rows / 2 => {
            counts.add("dropped", 1);
            if !dry_run {
                user_indexes::drop(conn, &name).await?;
            }
            false
        }
        Some((_, true)) => {
            counts.add("kept", 1);
            false
        }
        Some((name, false)) => {
            counts.add("rebuilt", 1);
            if !dry_run {
                user_indexes::drop(conn, &name).await?;
            }
            true
        }
        None if rows >= min_rows => {
            // A dry run writes no rows: it counts the builds it would have made so far.
            let planned = if dry_run { unit.earlier.get("built") + counts.get("built") } else { 0 };
            let fits = user_indexes::count(&mut *conn).await? + planned < params.max_indexes;
            counts.add(if fits { "built" } else { "at_capacity" }, 1);
            fits
        }
        None => false,
    };
    if !build || dry_run {
        return Ok(true);
    }
    let name = index_name(unit, table, dims);
    // The row first: it is how a later run finds an index this build leaves invalid.
    // Written under the user's life lock, so a user forgotten meanwhile gets none.
    let mut tx = conn.begin().await?;
    users::hold(&mut tx, unit.tenant, &[user]).await?;
    if !users::exists(&mut tx, unit.tenant, user).await? {
        tx.rollback().await?;
        return Ok(false);
    }
    user_indexes::register(&mut tx, table, tenant, user, dims, &name, rows).await?;
    tx.commit().await?;
    let memory = format!("{}MB", params.build_memory_mb);
    sqlx::query!("SELECT FROM set_config('maintenance_work_mem', $1, false)", memory).execute(&mut *conn).await?;
    let ddl = table.ddl(&mut *conn, &name, dims as i32, tenant, user).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(ddl)).execute(&mut *conn).await?;
    // The build cannot hold the life lock (it waits for older transactions, and a
    // deletion waiting for that lock would be one): a user forgotten during the
    // build, whose row went with them, loses the index here.
    let mut tx = conn.begin().await?;
    users::hold(&mut tx, unit.tenant, &[user]).await?;
    let alive = users::exists(&mut tx, unit.tenant, user).await?;
    tx.commit().await?;
    if alive {
        user_indexes::mark_built(conn, &name).await?;
    } else {
        user_indexes::drop(conn, &name).await?;
    }
    Ok(alive)
}

impl Job for IndexParams {
    fn check(&self, concurrency: usize) -> Result<(), String> {
        IndexParams::check(self)?;
        // PostgreSQL builds one index of a table at a time, and the cap is counted per unit.
        if concurrency != 1 {
            return Err("concurrency: index_large_users works on one user at a time (1)".into());
        }
        Ok(())
    }

    async fn candidates(
        &self,
        pool: &PgPool,
        scope: &Scope,
        _now: DateTime<Utc>,
        _models: &Models,
    ) -> sqlx::Result<Vec<Candidate>> {
        candidates(pool, self, scope).await
    }

    fn units(&self) -> Units<'_> {
        Units::OutsideTransaction(self)
    }
}

impl OutsideTransaction for IndexParams {
    async fn run_outside(
        &self,
        pool: &PgPool,
        unit: &Unit<'_>,
        models: &Models,
        dry_run: bool,
    ) -> anyhow::Result<Counts> {
        run_unit(pool, self, unit, models.embedder.dims(), dry_run).await
    }
}
