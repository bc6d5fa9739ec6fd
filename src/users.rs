//! Everything stored about one user: export it, or forget it everywhere in one
//! transaction with an audit-log row that records who, when and how much — never
//! what.

use serde_json::{Value, json};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::db::Database;
use crate::domain::{TenantId, UserId};

/// The tables that hold user data, children first so deletion never trips a reference.
const USER_TABLES: &[&str] =
    &["job_runs", "job_checkpoints", "feedback", "memory_access", "memory_history", "memories", "period_summaries", "sessions", "events"];

/// Every row of the user, table by table, as JSON (embeddings left out: they are
/// derived from the content and large).
pub async fn export(db: &Database, tenant: &TenantId, user: &UserId) -> sqlx::Result<Value> {
    let mut tx = db.tenant_tx(tenant).await?;
    let mut out = serde_json::Map::new();
    out.insert("user_id".into(), json!(user.as_str()));
    for table in USER_TABLES.iter().rev() {
        out.insert((*table).into(), rows(&mut tx, tenant, user, table).await?);
    }
    tx.commit().await?;
    Ok(Value::Object(out))
}

async fn rows(conn: &mut PgConnection, tenant: &TenantId, user: &UserId, table: &str) -> sqlx::Result<Value> {
    // `table` is one of USER_TABLES; vectors and the generated text-search column are left out.
    let order = match table {
        "sessions" => "started_at",
        "memory_access" => "last_accessed_at",
        "job_checkpoints" => "done_at",
        _ => "created_at",
    };
    let sql = format!(
        "SELECT coalesce(jsonb_agg(to_jsonb(t) - 'embedding' - 'content_tsv' - 'tenant_id' ORDER BY t.{order}), '[]')
           FROM {table} t WHERE t.tenant_id = $1 AND t.user_id = $2"
    );
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(tenant.as_str()).bind(user.as_str()).fetch_one(conn).await
}

/// Deletes the user everywhere; returns the rows removed per table.
pub async fn forget(db: &Database, tenant: &TenantId, user: &UserId, actor: Uuid) -> sqlx::Result<Value> {
    let mut tx = db.tenant_tx(tenant).await?;
    let mut counts = serde_json::Map::new();
    for table in USER_TABLES {
        let sql = format!("DELETE FROM {table} WHERE tenant_id = $1 AND user_id = $2");
        let done = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(tenant.as_str()).bind(user.as_str()).execute(&mut *tx).await?;
        counts.insert((*table).into(), json!(done.rows_affected()));
    }
    let counts = Value::Object(counts);
    sqlx::query(
        "INSERT INTO audit_log (tenant_id, id, actor, action, target, details) VALUES ($1, $2, $3, 'delete_user', $4, $5)",
    )
    .bind(tenant.as_str())
    .bind(Uuid::now_v7())
    .bind(format!("key:{actor}"))
    .bind(user.as_str())
    .bind(json!({"deleted": counts}))
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(counts)
}
