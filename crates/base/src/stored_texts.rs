//! The texts engram keeps, for applying changed secret rules to them (the `redact` job):
//! which table, which row key, which text and JSON columns, and which vector is made from
//! them. Like [`crate::stored_vectors`], the SQL is put together only from these
//! constants; every value is a bind parameter. A row's id, times and every other column
//! stay as they are.

use serde_json::Value;
use sqlx::PgConnection;

use crate::domain::TenantId;
use crate::stored_vectors::VectorColumn;

/// A table's free text: its text columns and its JSON columns, in that order.
pub struct TextColumns {
    /// The name counts use (`events`, `memories`, …).
    pub name: &'static str,
    pub table: &'static str,
    /// The row's key within a user, and its SQL type (`uuid` or `text`).
    pub key: &'static str,
    pub key_type: &'static str,
    pub texts: &'static [&'static str],
    pub jsons: &'static [&'static str],
    /// The vector made from these texts: dropped when they change, to be made again.
    pub vectors: Option<&'static VectorColumn>,
}

impl TextColumns {
    /// A table keyed by its `id` (a uuid) within a user, named as the table is.
    pub const fn by_id(
        table: &'static str,
        texts: &'static [&'static str],
        jsons: &'static [&'static str],
        vectors: Option<&'static VectorColumn>,
    ) -> Self {
        Self { name: table, table, key: "id", key_type: "uuid", texts, jsons, vectors }
    }
}

/// One row: its key and its columns' values (a text column's as a JSON string or null).
pub type Row = (String, Vec<Value>);

impl TextColumns {
    fn columns(&self) -> impl Iterator<Item = &&'static str> {
        self.texts.iter().chain(self.jsons)
    }

    /// Up to `limit` of the user's rows after the key `after` (from the first when
    /// `None`), in key order.
    pub async fn batch(
        &self,
        conn: &mut PgConnection,
        tenant: &TenantId,
        user: &str,
        after: Option<&str>,
        limit: i64,
    ) -> sqlx::Result<Vec<Row>> {
        let values: Vec<String> = self.columns().map(|c| format!("to_jsonb({c})")).collect();
        let sql = format!(
            "SELECT {key}::text, jsonb_build_array({values}) FROM {table}
              WHERE tenant_id = $1 AND user_id = $2 AND ($3::text IS NULL OR {key} > $3::{key_type})
              ORDER BY {key} LIMIT $4",
            key = self.key,
            key_type = self.key_type,
            table = self.table,
            values = values.join(", "),
        );
        let rows: Vec<(String, Value)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(user)
            .bind(after)
            .bind(limit)
            .fetch_all(conn)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(key, values)| match values {
                Value::Array(values) => (key, values),
                other => (key, vec![other]),
            })
            .collect())
    }

    /// Writes `rows` back (their values in [`Self::batch`]'s order) and drops the vector
    /// made from them; returns how many rows were written.
    pub async fn write(
        &self,
        conn: &mut PgConnection,
        tenant: &TenantId,
        user: &str,
        rows: &[Row],
    ) -> sqlx::Result<u64> {
        if rows.is_empty() {
            return Ok(0);
        }
        let mut sets: Vec<String> =
            self.texts.iter().enumerate().map(|(i, c)| format!("{c} = v.vals ->> {i}")).collect();
        let offset = self.texts.len();
        sets.extend(
            self.jsons
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{c} = nullif(v.vals -> {}, 'null'::jsonb)", offset + i)),
        );
        if self.vectors.is_some() {
            sets.push("embedding = NULL, embedding_model = NULL, embedding_dims = NULL".to_owned());
        }
        let sql = format!(
            "UPDATE {table} t SET {sets}
               FROM unnest($3::text[], $4::jsonb[]) AS v(key, vals)
              WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.{key} = v.key::{key_type}",
            table = self.table,
            sets = sets.join(", "),
            key = self.key,
            key_type = self.key_type,
        );
        let keys: Vec<&str> = rows.iter().map(|(key, _)| key.as_str()).collect();
        let values: Vec<Value> = rows.iter().map(|(_, values)| Value::Array(values.clone())).collect();
        let done = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(user)
            .bind(&keys)
            .bind(&values)
            .execute(conn)
            .await?;
        Ok(done.rows_affected())
    }
}
