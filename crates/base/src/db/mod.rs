//! Connections to PostgreSQL: the configured server or the embedded one, the
//! migrations, and tenant-scoped transactions.
//!
//! Every query filters by tenant anyway; [`Database::tenant_tx`] adds row-level
//! security as a second wall by running the transaction as role `engram_tenant`
//! with `engram.tenant_id` set, so a query that forgot its filter sees one tenant only.

pub mod embedded;
pub mod lend;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres, Transaction};

use crate::configuration::DatabaseSettings;
use crate::domain::TenantId;
use embedded::EmbeddedPostgres;

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// The name of the database engram creates inside its embedded server.
const EMBEDDED_DATABASE: &str = "engram";

#[derive(Clone)]
pub struct Database {
    /// Writes and anything that must see its own writes.
    pub pool: PgPool,
    /// Lookups; the read replica when `database.read_url` is set.
    pub read_pool: PgPool,
    /// Kept alive while any clone exists; the last one stops a server this process started.
    embedded: Option<Arc<EmbeddedPostgres>>,
}

impl Database {
    /// Connects to `database.url`, or starts (or attaches to) the embedded server in `home`.
    pub async fn open(settings: &DatabaseSettings, home: &Path) -> anyhow::Result<Self> {
        Self::open_named(settings, home, None).await
    }

    /// Like [`Database::open`], but on the database `name` of the same server, created
    /// if missing (the benchmark's own database).
    pub async fn open_named(settings: &DatabaseSettings, home: &Path, name: Option<&str>) -> anyhow::Result<Self> {
        let Some(url) = &settings.url else {
            let name = name.unwrap_or(EMBEDDED_DATABASE);
            let server =
                EmbeddedPostgres::start(home, settings.pg_bin_dir.as_deref(), &settings.shared_buffers()).await?;
            server.create_database(name).await?;
            let options = server.connect_options(name);
            let pool = connect_pool(settings, options).await.context("cannot connect to the embedded PostgreSQL")?;
            advise_on_huge_pages(&pool).await;
            return Ok(Self { read_pool: pool.clone(), pool, embedded: Some(Arc::new(server)) });
        };
        let mut options = remote_options("database.url", url, settings)?;
        if let Some(name) = name {
            create_database(&options, name).await?;
            options = options.database(name);
        }
        let pool = connect_remote(settings, "database.url", options).await?;
        require_pgvector(&pool).await?;
        advise_on_huge_pages(&pool).await;
        let read_pool = match &settings.read_url {
            None => pool.clone(),
            Some(url) => {
                let options = remote_options("database.read_url", url, settings)?;
                connect_remote(settings, "database.read_url", options).await?
            }
        };
        Ok(Self { pool, read_pool, embedded: None })
    }

    /// One round trip to the primary: whether it answers.
    pub async fn ping(&self) -> sqlx::Result<()> {
        sqlx::query!("SELECT 1 AS one").fetch_one(&self.pool).await.map(drop)
    }

    /// A database on an existing pool (tests, benchmarks).
    pub fn from_pool(pool: PgPool) -> Self {
        Self { read_pool: pool.clone(), pool, embedded: None }
    }

    pub async fn migrate(&self) -> anyhow::Result<()> {
        MIGRATOR.run(&self.pool).await.context("cannot apply migrations")
    }

    /// A transaction that sees and writes only `tenant`'s rows.
    pub async fn tenant_tx(&self, tenant: &TenantId) -> sqlx::Result<Transaction<'static, Postgres>> {
        begin_tenant_tx(&self.pool, tenant).await
    }

    /// Closes the pools and stops the embedded server if this process started it.
    pub async fn close(self) {
        self.pool.close().await;
        self.read_pool.close().await;
        if let Some(server) = self.embedded.and_then(Arc::into_inner) {
            server.stop().await;
        }
    }
}

/// See [`Database::tenant_tx`]; usable on the read pool too.
pub async fn begin_tenant_tx(pool: &PgPool, tenant: &TenantId) -> sqlx::Result<Transaction<'static, Postgres>> {
    begin_tenant_tx_with(pool, tenant, "").await
}

/// A tenant transaction whose `BEGIN` also runs `settings` (more `SET LOCAL`s), all in
/// one round trip.
pub async fn begin_tenant_tx_with(
    pool: &PgPool,
    tenant: &TenantId,
    settings: &str,
) -> sqlx::Result<Transaction<'static, Postgres>> {
    // A TenantId holds only [a-z0-9_-], so it is safe inside quotes.
    let begin = format!("BEGIN; SET LOCAL ROLE engram_tenant; SET LOCAL engram.tenant_id = '{tenant}'; {settings}");
    pool.begin_with(sqlx::AssertSqlSafe(begin)).await
}

/// A configured server's options: its URL's (`sslmode`, `sslrootcert` as libpq reads
/// them), trusting `tls.ca_file` as well when the URL names no `sslrootcert`.
fn remote_options(key: &str, url: &str, settings: &DatabaseSettings) -> anyhow::Result<PgConnectOptions> {
    let options: PgConnectOptions = url.parse().with_context(|| format!("{key} is not a valid PostgreSQL URL"))?;
    Ok(match &settings.ca_file {
        Some(ca) if !url.contains("sslrootcert=") => options.ssl_root_cert(ca),
        _ => options,
    })
}

/// A pool on a configured server, or an error that says which server and why not:
/// TLS (unknown CA, name mismatch, …), refused, timed out, or what the server said.
async fn connect_remote(settings: &DatabaseSettings, key: &str, options: PgConnectOptions) -> anyhow::Result<PgPool> {
    let at = format!("{}:{}", options.get_host(), options.get_port());
    let err = match connect_pool(settings, options.clone()).await {
        Ok(pool) => return Ok(pool),
        // The pool retries a refused connection until its timeout and then names only
        // the timeout: one plain attempt names the cause.
        Err(sqlx::Error::PoolTimedOut) => match sqlx::ConnectOptions::connect(&options).await {
            Ok(_) => sqlx::Error::PoolTimedOut,
            Err(err) => err,
        },
        Err(err) => err,
    };
    let why = match crate::tls::ConnectFailure::diagnose(&err) {
        Some(cause) => cause.to_string(),
        None => crate::tls::chain_text(&err),
    };
    let hint = match why.contains("no encryption") {
        true => " (the server requires TLS: use sslmode=require or stronger)",
        false => "",
    };
    Err(anyhow::anyhow!("cannot connect to {key} at {at}: {why}{hint}"))
}

async fn connect_pool(settings: &DatabaseSettings, options: PgConnectOptions) -> sqlx::Result<PgPool> {
    pool_options(settings.max_connections).connect_with(options.application_name("engram")).await
}

/// A pooled connection idle this long is pinged before it is handed out.
const PING_AFTER_IDLE: Duration = Duration::from_secs(1);
/// How long a borrower waits for a connection before the pool gives up.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// What every engram pool shares. A connection that was in use moments ago is handed
/// out as it is (sqlx pings every connection when it comes back, and by default again
/// before it goes out: one round trip more, which a remote replica makes costly; lookups
/// avoid the first as well, see [`lend`]). One that sat idle is pinged first, so a
/// connection a restarted server dropped is replaced, not used.
pub fn pool_options(max_connections: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_AFTER_IDLE {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
}

/// Creates database `name` on the server of `server` unless it exists.
pub(crate) async fn create_database(server: &PgConnectOptions, name: &str) -> anyhow::Result<()> {
    use sqlx::{ConnectOptions, Connection};
    let mut conn = server.clone().database("postgres").connect().await.context("cannot connect to PostgreSQL")?;
    let exists: bool =
        sqlx::query_scalar!(r#"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS "exists!""#, name)
            .fetch_one(&mut conn)
            .await?;
    if !exists {
        // `name` is one of engram's constants, never user input; a concurrent creator is fine.
        let created =
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\""))).execute(&mut conn).await;
        match created {
            Err(sqlx::Error::Database(err)) if err.code().as_deref() == Some("42P04") => {}
            other => {
                other.with_context(|| format!("cannot create database {name}"))?;
            }
        }
    }
    conn.close().await?;
    Ok(())
}

async fn require_pgvector(pool: &PgPool) -> anyhow::Result<()> {
    let available: bool = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS "exists!""#
    )
    .fetch_one(pool)
    .await
    .context("cannot query the database's extensions")?;
    anyhow::ensure!(
        available,
        "the database at database.url lacks the pgvector extension (`vector`); install pgvector 0.8 or newer on that server"
    );
    Ok(())
}

/// `shared_buffers` from which huge pages are worth their reservation.
const HUGE_PAGES_FROM: i64 = 2 << 30;

/// Says so at startup when the server's shared buffers are large and in 4 kB pages:
/// every buffer a lookup touches then risks a TLB miss, which slows every lookup.
/// Logged as information, once a
/// process, since only the server's host can change it.
async fn advise_on_huge_pages(pool: &PgPool) {
    let settings = sqlx::query!(
        r#"SELECT current_setting('huge_pages_status', true) AS status,
                  pg_size_bytes(current_setting('shared_buffers')) AS "shared_buffers!",
                  current_setting('shared_memory_size_in_huge_pages', true) AS pages"#,
    )
    .map(|row| (row.status, row.shared_buffers, row.pages))
    .fetch_one(pool)
    .await;
    if let Ok((status, shared_buffers, pages)) = settings
        && let Some(advice) = huge_pages_advice(status.as_deref(), shared_buffers, pages.as_deref())
    {
        tracing::info!("{advice}");
    }
}

/// What to tell an operator whose server has `shared_buffers` bytes of buffers, huge
/// pages `status` (PostgreSQL 17+) and needs `pages` of them; nothing when all is well.
fn huge_pages_advice(status: Option<&str>, shared_buffers: i64, pages: Option<&str>) -> Option<String> {
    if status != Some("off") || shared_buffers < HUGE_PAGES_FROM {
        return None;
    }
    let gib = shared_buffers as f64 / f64::from(1 << 30);
    let reserve = match pages.filter(|p| *p != "-1") {
        Some(pages) => format!("as root: sysctl vm.nr_hugepages={pages}"),
        None => "vm.nr_hugepages as `postgres -C shared_memory_size_in_huge_pages` says".to_owned(),
    };
    Some(format!(
        "PostgreSQL keeps its {gib:.1} GiB of shared buffers in 4 kB pages: reserve huge pages \
         ({reserve}) and restart it; lookups are faster with them"
    ))
}

/// Deletes every row of `user` from `tables` (trusted names, children first); returns
/// the rows removed from each.
pub async fn delete_user_rows<const N: usize>(
    conn: &mut sqlx::PgConnection,
    tenant: &crate::domain::TenantId,
    user: &crate::domain::UserId,
    tables: [&'static str; N],
) -> sqlx::Result<[(&'static str, u64); N]> {
    let mut removed = tables.map(|table| (table, 0));
    for (table, n) in &mut removed {
        let sql = format!("DELETE FROM {table} WHERE tenant_id = $1 AND user_id = $2");
        *n = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(user.as_str())
            .execute(&mut *conn)
            .await?
            .rows_affected();
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::huge_pages_advice;

    #[test]
    fn large_shared_buffers_in_small_pages_get_advice_and_nothing_else_does() {
        let advice = huge_pages_advice(Some("off"), 15 << 30, Some("7893")).unwrap();
        assert!(advice.contains("15.0 GiB") && advice.contains("vm.nr_hugepages=7893"), "{advice}");
        assert!(huge_pages_advice(Some("on"), 15 << 30, Some("7893")).is_none(), "huge pages in use");
        assert!(huge_pages_advice(Some("off"), 128 << 20, Some("70")).is_none(), "small buffers");
        assert!(huge_pages_advice(None, 15 << 30, None).is_none(), "a server that does not say");
    }
}
