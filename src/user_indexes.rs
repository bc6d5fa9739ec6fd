//! `user_vector_indexes`: the registry of HNSW indexes that large users have of their
//! own (built by the `index_large_users` job, used by search, dropped when the user is
//! forgotten). The row is written before an index is built, so a build a crash left
//! invalid is found and rebuilt; it goes after the index is dropped.

use sqlx::{PgConnection, PgExecutor, PgPool};

use crate::domain::{TenantId, UserId};

/// The name of the user's own index for vectors of `dims`, if it has a row, and whether
/// that index exists and is valid (a build cut short leaves it invalid, or missing).
pub async fn own_index(
    db: impl PgExecutor<'_>,
    tenant: &str,
    user: &str,
    dims: usize,
) -> sqlx::Result<Option<(String, bool)>> {
    sqlx::query_as(
        "SELECT u.index_name, coalesce(i.indisvalid, false)
           FROM user_vector_indexes u
           LEFT JOIN pg_class c ON c.relname = u.index_name AND c.relnamespace = current_schema()::regnamespace
           LEFT JOIN pg_index i ON i.indexrelid = c.oid
          WHERE u.tenant_id = $1 AND u.user_id = $2 AND u.dims = $3",
    )
    .bind(tenant)
    .bind(user)
    .bind(dims as i32)
    .fetch_optional(db)
    .await
}

/// The user's indexes for another dimension than `dims`: they serve no lookup any more.
pub async fn stale(db: impl PgExecutor<'_>, tenant: &str, user: &str, dims: usize) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT index_name FROM user_vector_indexes WHERE tenant_id = $1 AND user_id = $2 AND dims <> $3",
    )
    .bind(tenant)
    .bind(user)
    .bind(dims as i32)
    .fetch_all(db)
    .await
}

/// Every index of the user, whatever its dimension.
pub async fn names_of(conn: &mut PgConnection, tenant: &TenantId, user: &UserId) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT index_name FROM user_vector_indexes WHERE tenant_id = $1 AND user_id = $2")
        .bind(tenant.as_str())
        .bind(user.as_str())
        .fetch_all(conn)
        .await
}

/// How many indexes exist across all tenants (they share one cap).
pub async fn count(db: impl PgExecutor<'_>) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM user_vector_indexes").fetch_one(db).await
}

/// Writes the row of an index about to be built over `memories` active memories.
pub async fn register(
    conn: &mut PgConnection,
    tenant: &str,
    user: &str,
    dims: usize,
    name: &str,
    memories: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO user_vector_indexes (tenant_id, user_id, dims, index_name, memories) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (tenant_id, user_id, dims) DO UPDATE SET index_name = $4, memories = $5",
    )
    .bind(tenant)
    .bind(user)
    .bind(dims as i32)
    .bind(name)
    .bind(memories)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn mark_built(conn: &mut PgConnection, name: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE user_vector_indexes SET built_at = now() WHERE index_name = $1")
        .bind(name)
        .execute(conn)
        .await?;
    Ok(())
}

/// Drops the index and its row (the row last: it is how a later run finds the index).
/// `CONCURRENTLY`, so it waits for transactions using `memories` but blocks none.
pub async fn drop(conn: &mut PgConnection, name: &str) -> sqlx::Result<()> {
    let ddl: String = sqlx::query_scalar("SELECT format('DROP INDEX CONCURRENTLY IF EXISTS %I', $1::text)")
        .bind(name)
        .fetch_one(&mut *conn)
        .await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(ddl)).execute(&mut *conn).await?;
    sqlx::query("DELETE FROM user_vector_indexes WHERE index_name = $1").bind(name).execute(&mut *conn).await?;
    Ok(())
}

/// Drops the named indexes, as after their user was forgotten.
pub async fn drop_all(pool: &PgPool, names: &[String]) -> sqlx::Result<()> {
    let mut conn = pool.acquire().await?;
    for name in names {
        drop(&mut conn, name).await?;
    }
    Ok(())
}
