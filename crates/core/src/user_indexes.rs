//! `user_vector_indexes`: the registry of HNSW indexes that large users have of their
//! own, over their memories or their raw turns (built by the `index_large_users` job,
//! used by search, dropped when the user is forgotten). The row is written before an
//! index is built, so a build a crash left invalid is found and rebuilt; it goes after
//! the index is dropped.

use sqlx::{PgConnection, PgExecutor, PgPool};

use engram_base::domain::{TenantId, UserId};

/// A table whose rows a user may have an HNSW index of their own over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indexed {
    /// Active memories (facts and insights), `vector` embeddings.
    Memories,
    /// Raw turns with a vector, `halfvec` embeddings.
    Events,
}

impl Indexed {
    pub const ALL: [Indexed; 2] = [Indexed::Memories, Indexed::Events];

    pub fn table(self) -> &'static str {
        match self {
            Indexed::Memories => "memories",
            Indexed::Events => "events",
        }
    }

    /// The user's rows of this table with vectors of `dims` dimensions (active memories).
    pub async fn count_rows(self, conn: &mut PgConnection, tenant: &str, user: &str, dims: i32) -> sqlx::Result<i64> {
        match self {
            Indexed::Memories => {
                sqlx::query_scalar!(
                    r#"SELECT count(*) AS "rows!" FROM memories
                        WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND embedding_dims = $3"#,
                    tenant,
                    user,
                    dims,
                )
                .fetch_one(conn)
                .await
            }
            Indexed::Events => {
                sqlx::query_scalar!(
                    r#"SELECT count(*) AS "rows!" FROM events WHERE tenant_id = $1 AND user_id = $2 AND embedding_dims = $3"#,
                    tenant,
                    user,
                    dims as _,
                )
                .fetch_one(conn)
                .await
            }
        }
    }

    /// The `CREATE INDEX` statement of index `name` for vectors of `dims` dimensions over
    /// the rows of `tenant`'s `user`, quoted by the server (ids are data, not SQL).
    /// Its expression and predicate are the table's shared index's with the user's ids
    /// added, so the planner takes it for a lookup that names the user.
    pub async fn ddl(
        self,
        conn: &mut PgConnection,
        name: &str,
        dims: i32,
        tenant: &str,
        user: &str,
    ) -> sqlx::Result<String> {
        match self {
            Indexed::Memories => {
                sqlx::query_scalar!(
                    r#"SELECT format('CREATE INDEX CONCURRENTLY IF NOT EXISTS %I ON memories
                                      USING hnsw ((embedding::vector(%s)) vector_cosine_ops)
                                      WHERE tenant_id = %L AND user_id = %L AND embedding_dims = %s AND status = ''active''',
                                   $1::text, $2::int, $3::text, $4::text, $2::int) AS "ddl!""#,
                    name,
                    dims,
                    tenant,
                    user,
                )
                .fetch_one(conn)
                .await
            }
            Indexed::Events => {
                sqlx::query_scalar!(
                    r#"SELECT format('CREATE INDEX CONCURRENTLY IF NOT EXISTS %I ON events
                                      USING hnsw ((embedding::halfvec(%s)) halfvec_cosine_ops)
                                      WHERE tenant_id = %L AND user_id = %L AND embedding_dims = %s',
                                   $1::text, $2::int, $3::text, $4::text, $2::int) AS "ddl!""#,
                    name,
                    dims,
                    tenant,
                    user,
                )
                .fetch_one(conn)
                .await
            }
        }
    }
}

/// The name of the user's own index over `table` for vectors of `dims`, if it has a
/// row, and whether that index exists and is valid (a build cut short leaves it
/// invalid, or missing).
pub async fn own_index(
    db: impl PgExecutor<'_>,
    table: Indexed,
    tenant: &str,
    user: &str,
    dims: usize,
) -> sqlx::Result<Option<(String, bool)>> {
    sqlx::query!(
        r#"SELECT u.index_name, coalesce(i.indisvalid, false) AS "valid!"
           FROM user_vector_indexes u
           LEFT JOIN pg_class c ON c.relname = u.index_name AND c.relnamespace = current_schema()::regnamespace
           LEFT JOIN pg_index i ON i.indexrelid = c.oid
          WHERE u.tenant_id = $1 AND u.user_id = $2 AND u.table_name = $3 AND u.dims = $4"#,
        tenant,
        user,
        table.table(),
        dims as i32
    )
    .map(|r| (r.index_name, r.valid))
    .fetch_optional(db)
    .await
}

/// The users (of `tenant`, or `user` only, when given) who have an index of their own.
pub async fn owners(pool: &PgPool, tenant: Option<&str>, user: Option<&str>) -> sqlx::Result<Vec<(TenantId, UserId)>> {
    sqlx::query!(
        r#"SELECT DISTINCT tenant_id AS "tenant_id!: TenantId", user_id AS "user_id!: UserId" FROM user_vector_indexes
          WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)"#,
        tenant,
        user
    )
    .map(|r| (r.tenant_id, r.user_id))
    .fetch_all(pool)
    .await
}

/// The user's indexes for another dimension than `dims`: they serve no lookup any more.
pub async fn stale(db: impl PgExecutor<'_>, tenant: &str, user: &str, dims: usize) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        "SELECT index_name FROM user_vector_indexes WHERE tenant_id = $1 AND user_id = $2 AND dims <> $3",
        tenant,
        user,
        dims as i32
    )
    .fetch_all(db)
    .await
}

/// Every index of the user, whatever its dimension.
pub async fn names_of(conn: &mut PgConnection, tenant: &TenantId, user: &UserId) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        "SELECT index_name FROM user_vector_indexes WHERE tenant_id = $1 AND user_id = $2",
        tenant.as_str(),
        user.as_str()
    )
    .fetch_all(conn)
    .await
}

/// How many indexes exist across all tenants (they share one cap).
pub async fn count(db: impl PgExecutor<'_>) -> sqlx::Result<i64> {
    sqlx::query_scalar!(r#"SELECT count(*) AS "count!" FROM user_vector_indexes"#).fetch_one(db).await
}

/// Writes the row of an index about to be built over `rows` of the user's rows in `table`.
pub async fn register(
    conn: &mut PgConnection,
    table: Indexed,
    tenant: &str,
    user: &str,
    dims: usize,
    name: &str,
    rows: i64,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO user_vector_indexes (tenant_id, user_id, table_name, dims, index_name, row_count)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (tenant_id, user_id, table_name, dims) DO UPDATE SET index_name = $5, row_count = $6",
        tenant,
        user,
        table.table(),
        dims as i32,
        name,
        rows
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn mark_built(conn: &mut PgConnection, name: &str) -> sqlx::Result<()> {
    sqlx::query!("UPDATE user_vector_indexes SET built_at = now() WHERE index_name = $1", name).execute(conn).await?;
    Ok(())
}

/// Drops the index and its row (the row last: it is how a later run finds the index).
/// `CONCURRENTLY`, so it waits for transactions using its table but blocks none.
pub async fn drop(conn: &mut PgConnection, name: &str) -> sqlx::Result<()> {
    let ddl: String =
        sqlx::query_scalar!(r#"SELECT format('DROP INDEX CONCURRENTLY IF EXISTS %I', $1::text) AS "ddl!""#, name)
            .fetch_one(&mut *conn)
            .await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(ddl)).execute(&mut *conn).await?;
    sqlx::query!("DELETE FROM user_vector_indexes WHERE index_name = $1", name).execute(&mut *conn).await?;
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
