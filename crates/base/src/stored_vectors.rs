//! The vectors engram keeps, for moving them to another model (the `reembed` job): which
//! table, which row key, the text each vector was made from. Each table's owner declares
//! its [`VectorColumn`] beside the code that writes the rows (`memories::VECTORS`,
//! `ingest::vectors::VECTORS`, and the summary jobs' `VECTORS`);
//! the statements here change only the vector columns, and only of rows made by
//! another model, so a row re-embedded meanwhile (or deleted) is left as it is. The SQL
//! is put together only from these constants; every value is a bind parameter.

use sqlx::{PgConnection, PgPool};

use crate::domain::TenantId;
use crate::models::Embedding;

/// A table's vector: `embedding`, `embedding_model`, `embedding_dims` beside its text.
pub struct VectorColumn {
    /// The name counts and progress use (`memories`, `events`, …).
    pub name: &'static str,
    pub table: &'static str,
    /// The row's key within a user, and its SQL type (`uuid` or `text`).
    pub key: &'static str,
    pub key_type: &'static str,
    /// The SQL expression of the text the vector is made from.
    pub text: fn() -> &'static str,
    /// `vector`, or `halfvec` for raw turns.
    pub storage: &'static str,
    /// Which rows carry a vector at all.
    pub filter: &'static str,
}

impl VectorColumn {
    /// Up to `limit` of the user's rows whose vector is not `model`'s: key and text.
    pub async fn stale(
        &self,
        conn: &mut PgConnection,
        tenant: &TenantId,
        user: &str,
        model: &str,
        limit: i64,
    ) -> sqlx::Result<Vec<(String, String)>> {
        let sql = format!(
            "SELECT {key}::text, {text} FROM {table}
              WHERE tenant_id = $1 AND user_id = $2 AND {filter} AND embedding_model IS DISTINCT FROM $3
              ORDER BY {key} LIMIT $4",
            key = self.key,
            text = (self.text)(),
            table = self.table,
            filter = self.filter
        );
        sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(user)
            .bind(model)
            .bind(limit)
            .fetch_all(conn)
            .await
    }

    /// Writes `model`'s vectors for the rows `keys`; returns how many rows took one.
    pub async fn replace(
        &self,
        conn: &mut PgConnection,
        tenant: &TenantId,
        user: &str,
        keys: &[String],
        vectors: &[Embedding],
        model: &str,
    ) -> sqlx::Result<u64> {
        let sql = format!(
            "UPDATE {table} t SET embedding = v.embedding::{storage}, embedding_model = $5, embedding_dims = $6
               FROM unnest($3::text[], $4::vector[]) AS v(key, embedding)
              WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.{key} = v.key::{key_type}
                AND t.embedding_model IS DISTINCT FROM $5",
            table = self.table,
            storage = self.storage,
            key = self.key,
            key_type = self.key_type
        );
        let dims = vectors.first().map_or(0, |v| v.dims() as i32);
        let vectors: Vec<pgvector::Vector> = vectors.iter().map(Embedding::to_pgvector).collect();
        let done = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(user)
            .bind(keys)
            .bind(&vectors)
            .bind(model)
            .bind(dims)
            .execute(conn)
            .await?;
        Ok(done.rows_affected())
    }

    /// The users of the scope with rows whose vector is not `model`'s.
    pub async fn users(
        &self,
        pool: &PgPool,
        tenant: Option<&str>,
        user: Option<&str>,
        model: &str,
    ) -> sqlx::Result<Vec<(crate::domain::TenantId, crate::domain::UserId)>> {
        let sql = format!(
            "SELECT DISTINCT tenant_id, user_id FROM {table} WHERE {filter} AND embedding_model IS DISTINCT FROM $3
                AND ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)",
            table = self.table,
            filter = self.filter
        );
        sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(tenant).bind(user).bind(model).fetch_all(pool).await
    }

    /// Makes the vectors of the user's rows `keys` again with `embedder`, from their
    /// text as it is now (after the text changed); returns how many rows took one.
    pub async fn remake(
        &self,
        conn: &mut PgConnection,
        tenant: &TenantId,
        user: &str,
        keys: &[String],
        embedder: &crate::models::Embedder,
    ) -> anyhow::Result<u64> {
        if keys.is_empty() {
            return Ok(0);
        }
        let sql = format!(
            "SELECT {key}::text, {text} FROM {table}
              WHERE tenant_id = $1 AND user_id = $2 AND {filter} AND {key} = ANY($3::text[]::{key_type}[])",
            key = self.key,
            key_type = self.key_type,
            text = (self.text)(),
            table = self.table,
            filter = self.filter
        );
        let rows: Vec<(String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(user)
            .bind(keys)
            .fetch_all(&mut *conn)
            .await?;
        if rows.is_empty() {
            return Ok(0);
        }
        let (keys, texts): (Vec<String>, Vec<String>) =
            rows.into_iter().map(|(k, t)| (k, if t.trim().is_empty() { "(empty)".to_owned() } else { t })).unzip();
        let vectors = embedder.embed(&texts).await?;
        // Vectors of the model too are made again: `replace` writes over any other's.
        let sql = format!(
            "UPDATE {table} SET embedding_model = NULL
              WHERE tenant_id = $1 AND user_id = $2 AND {key} = ANY($3::text[]::{key_type}[])",
            table = self.table,
            key = self.key,
            key_type = self.key_type
        );
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(tenant.as_str()).bind(user).bind(&keys).execute(&mut *conn).await?;
        Ok(self.replace(conn, tenant, user, &keys, &vectors, embedder.model()).await?)
    }
}
