//! Everything stored about one user: export it, or forget it everywhere in one
//! transaction with an audit-log row that records who, when and how much — never
//! what, and not the user's id either, only a keyed hash of it.
//!
//! **A deletion stays a deletion.** Every writer of a user's data — a job's unit, an
//! ingest batch, feedback, the access-statistics flush — holds the user's *life lock*
//! shared for its transaction ([`hold`]) and, where it works from an earlier read,
//! checks that the user still exists ([`exists`]). Forgetting takes the same lock
//! exclusively: it waits for the writers in flight, and every writer after it finds
//! nothing left and writes nothing. A deleted user's id comes back only with new events.

use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::Sha256;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::{memories, user_indexes};
use engram_base::db::Database;
use engram_base::domain::{Actor, TenantId, UserId};

/// The tables that hold user data, children first so deletion never trips a reference.
/// `tests/api/forget.rs` checks this list against every table with a `user_id` column.
const USER_TABLES: &[&str] = &[
    "job_runs",
    "job_checkpoints",
    "feedback",
    "user_graphs",
    "graph_history",
    "relations",
    "entities",
    "memory_access",
    "memory_history",
    "memories",
    "user_vector_indexes",
    "period_summaries",
    "sessions",
    "events",
    // Last: deleting memories puts their `memory.deleted` here first.
    "webhook_outbox",
];

/// The tables `memories` owns, in the order `USER_TABLES` lists them.
const MEMORY_TABLES: [&str; 3] = ["memory_access", "memory_history", "memories"];

/// The tables `graph` owns, in the order `USER_TABLES` lists them.
const GRAPH_TABLES: [&str; 4] = ["user_graphs", "graph_history", "relations", "entities"];

/// Holds the life locks of `users` (shared) until the transaction on `conn` ends.
/// Writers share them; only [`forget`] takes one exclusively.
pub async fn hold(conn: &mut PgConnection, tenant: &TenantId, users: &[&str]) -> sqlx::Result<()> {
    // Seed 1 keeps these keys apart from ingest's session lock (seed 0) on the same ids.
    sqlx::query!(
        "SELECT FROM (SELECT count(pg_advisory_xact_lock_shared(hashtextextended($1 || '/' || u, 1))) FROM unnest($2::text[]) u) held",
        tenant.as_str(),
        users as _,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Holds the life lock of `user` alone until the transaction ends: writers in flight
/// finish first, and none starts meanwhile.
pub async fn hold_exclusively(conn: &mut PgConnection, tenant: &TenantId, user: &UserId) -> sqlx::Result<()> {
    sqlx::query!(
        "SELECT FROM pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 1))",
        tenant.as_str(),
        user.as_str()
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether anything of the user is stored: events, sessions or memories.
pub async fn exists(conn: &mut PgConnection, tenant: &TenantId, user: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT FROM events WHERE tenant_id = $1 AND user_id = $2)
             OR EXISTS (SELECT FROM sessions WHERE tenant_id = $1 AND user_id = $2)
             OR EXISTS (SELECT FROM memories WHERE tenant_id = $1 AND user_id = $2) AS "exists!""#,
        tenant.as_str(),
        user
    )
    .fetch_one(conn)
    .await
}

/// Every row of the user, by table, as JSON (embeddings left out: they are derived
/// from the content and large).
pub async fn export(db: &Database, tenant: &TenantId, user: &UserId) -> sqlx::Result<serde_json::Map<String, Value>> {
    let mut tx = db.tenant_tx(tenant).await?;
    let mut out = serde_json::Map::new();
    // What is derived for lookups (own indexes, the graph row) is left out too.
    for table in
        USER_TABLES.iter().rev().filter(|t| !matches!(**t, "user_vector_indexes" | "user_graphs" | "webhook_outbox"))
    {
        out.insert((*table).into(), rows(&mut tx, tenant, user, table).await?);
    }
    tx.commit().await?;
    Ok(out)
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

/// Deletes the user everywhere; returns the rows removed per table. Waits for the
/// user's writers in flight (see the module documentation). An HNSW index of the
/// user's own is dropped right after, in the background: a concurrent drop waits for
/// the transactions using `memories`.
pub async fn forget(db: &Database, tenant: &TenantId, user: &UserId, actor: Uuid) -> sqlx::Result<Value> {
    let user_hash = keyed_hash(&db.pool, tenant, user).await?;
    let mut tx = db.tenant_tx(tenant).await?;
    hold_exclusively(&mut tx, tenant, user).await?;
    let indexes = user_indexes::names_of(&mut tx, tenant, user).await?;
    let mut counts = serde_json::Map::new();
    for table in USER_TABLES {
        if GRAPH_TABLES.contains(table) {
            if *table == GRAPH_TABLES[0] {
                for (table, n) in crate::graph::store::forget_user(&mut tx, tenant, user).await? {
                    counts.insert(table.into(), json!(n));
                }
            }
            continue;
        }
        if MEMORY_TABLES.contains(table) {
            // Memories are deleted by their owner, all three tables at the first of them.
            if *table == MEMORY_TABLES[0] {
                for (table, n) in memories::lifecycle::forget_user(&mut tx, tenant, user).await? {
                    counts.insert(table.into(), json!(n));
                }
            }
            continue;
        }
        let sql = format!("DELETE FROM {table} WHERE tenant_id = $1 AND user_id = $2");
        let done =
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(tenant.as_str()).bind(user.as_str()).execute(&mut *tx).await?;
        counts.insert((*table).into(), json!(done.rows_affected()));
    }
    let counts = Value::Object(counts);
    crate::webhooks::user_deleted(&mut tx, tenant, user).await?;
    sqlx::query!("INSERT INTO audit_log (tenant_id, id, actor, action, target, details) VALUES ($1, $2, $3, 'delete_user', $4, $5)", tenant.as_str(), Uuid::now_v7(), Actor::Key(actor).to_string(), &user_hash, json!({"deleted": counts}))
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    if !indexes.is_empty() {
        let pool = db.pool.clone();
        tokio::spawn(async move {
            if let Err(err) = user_indexes::drop_all(&pool, &indexes).await {
                tracing::warn!(error = %err, "cannot drop a deleted user's own index; the next index_large_users run will");
            }
        });
    }
    Ok(counts)
}

/// A recorded deletion of a user, found by the user's id.
#[derive(Debug, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Deletion {
    pub at: chrono::DateTime<chrono::Utc>,
    /// `key:<id>` of the API key that asked for it, or `cli`.
    pub actor: String,
    /// Rows removed, per table.
    #[schema(value_type = Object)]
    pub deleted: Value,
}

/// The times `user` was forgotten in `tenant`, oldest first.
pub async fn deletions(db: &Database, tenant: &TenantId, user: &UserId) -> sqlx::Result<Vec<Deletion>> {
    let user_hash = keyed_hash(&db.pool, tenant, user).await?;
    let mut tx = db.tenant_tx(tenant).await?;
    let found = sqlx::query_as!(
        Deletion,
        r#"SELECT created_at AS at, actor, coalesce(details -> 'deleted', '{}') AS "deleted!" FROM audit_log
          WHERE tenant_id = $1 AND action = 'delete_user' AND target = $2 ORDER BY created_at"#,
        tenant.as_str(),
        &user_hash
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(found)
}

/// A user of a tenant as a listing shows them.
#[derive(Debug, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct UserSummary {
    pub user_id: String,
    /// Conversation turns stored.
    pub events: i64,
    /// Active memories (facts and insights).
    pub memories: i64,
    pub sessions: i64,
    /// Active entities of the knowledge graph.
    pub entities: i64,
    /// The newest turn's time, or the newest memory's when there is no turn.
    pub last_activity: Option<chrono::DateTime<chrono::Utc>>,
}

/// A page of the tenant's users in id order, after `after`: anyone with a turn or a memory.
pub async fn list(db: &Database, tenant: &TenantId, after: Option<&str>, limit: i64) -> sqlx::Result<Vec<UserSummary>> {
    let mut tx = db.tenant_tx(tenant).await?;
    let page = sqlx::query_scalar!(
        r#"SELECT user_id AS "user_id!" FROM (
             SELECT DISTINCT user_id FROM events WHERE tenant_id = $1 AND ($2::text IS NULL OR user_id > $2)
             UNION
             SELECT DISTINCT user_id FROM memories WHERE tenant_id = $1 AND ($2::text IS NULL OR user_id > $2)
           ) u ORDER BY user_id LIMIT $3"#,
        tenant.as_str(),
        after,
        limit
    )
    .fetch_all(&mut *tx)
    .await?;
    let found = counts(&mut tx, tenant, &page).await?;
    tx.commit().await?;
    Ok(found)
}

/// One user's counts, or `None` when engram holds no turn and no memory of them.
pub async fn summary(db: &Database, tenant: &TenantId, user: &UserId) -> sqlx::Result<Option<UserSummary>> {
    let mut tx = db.tenant_tx(tenant).await?;
    let found = counts(&mut tx, tenant, &[user.to_string()]).await?;
    tx.commit().await?;
    Ok(found.into_iter().next().filter(|u| u.events > 0 || u.memories > 0 || u.last_activity.is_some()))
}

/// What a listing shows of each of `users`, in their order.
async fn counts(conn: &mut PgConnection, tenant: &TenantId, users: &[String]) -> sqlx::Result<Vec<UserSummary>> {
    sqlx::query_as!(
        UserSummary,
        r#"SELECT p.user_id AS "user_id!",
                  (SELECT count(*) FROM events e WHERE e.tenant_id = $1 AND e.user_id = p.user_id) AS "events!",
                  (SELECT count(*) FROM memories m WHERE m.tenant_id = $1 AND m.user_id = p.user_id
                      AND m.status = 'active') AS "memories!",
                  (SELECT count(*) FROM sessions s WHERE s.tenant_id = $1 AND s.user_id = p.user_id) AS "sessions!",
                  (SELECT count(*) FROM entities g WHERE g.tenant_id = $1 AND g.user_id = p.user_id
                      AND g.status = 'active') AS "entities!",
                  coalesce((SELECT max(e.created_at) FROM events e WHERE e.tenant_id = $1 AND e.user_id = p.user_id),
                           (SELECT max(m.updated_at) FROM memories m WHERE m.tenant_id = $1 AND m.user_id = p.user_id))
                      AS "last_activity?"
             FROM unnest($2::text[]) WITH ORDINALITY AS p(user_id, n) ORDER BY p.n"#,
        tenant.as_str(),
        users
    )
    .fetch_all(conn)
    .await
}

/// `hmac:` and the hex HMAC-SHA256 of `tenant/user` under the installation's audit secret.
async fn keyed_hash(pool: &PgPool, tenant: &TenantId, user: &UserId) -> sqlx::Result<String> {
    let secret: Vec<u8> =
        sqlx::query_scalar!("SELECT secret FROM instance_secrets WHERE name = 'audit'").fetch_one(pool).await?;
    Ok(format!("hmac:{}", hmac_hex(&secret, &format!("{tenant}/{user}"))))
}

fn hmac_hex(secret: &[u8], message: &str) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(message.as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// An `audit_log` row: who did what to which target, with details that never hold the
/// content of what was deleted.
pub async fn audit(
    conn: &mut PgConnection,
    tenant: &TenantId,
    actor: &str,
    action: &str,
    target: &str,
    details: Value,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO audit_log (tenant_id, id, actor, action, target, details) VALUES ($1, $2, $3, $4, $5, $6)",
        tenant.as_str(),
        Uuid::now_v7(),
        actor,
        action,
        target,
        details
    )
    .execute(conn)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keyed_hash_is_hmac_sha256() {
        // RFC 4231, test case 2.
        assert_eq!(
            hmac_hex(b"Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
