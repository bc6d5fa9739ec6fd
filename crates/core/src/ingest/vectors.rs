//! Raw turns made searchable by meaning. A turn is findable by its words as soon as it
//! is stored; its embedding follows shortly after: each API process hands the ids of
//! the events it stored to its [`EventVectors`], a background task that embeds them in
//! batches (usually within a second), and what that could not take (a full queue, a
//! restart, a model outage) the `embed_events` job embeds from the backlog
//! (`events_unembedded`, the `engram_events_unembedded` gauge).
//!
//! Vectors are written only where none is yet, so the task and the job may meet on an
//! event without harm; and only onto rows that still exist, so an event deleted with
//! its user in the meantime stays deleted.

use std::sync::Arc;

use sqlx::PgPool;
use tokio::sync::mpsc;
use uuid::Uuid;

use engram_base::db::Database;
use engram_base::domain::{TenantId, UserId};
use engram_base::models::Embedder;

/// Raw turns' vectors, for `reembed`.
pub const VECTORS: engram_base::stored_vectors::VectorColumn = engram_base::stored_vectors::VectorColumn {
    name: "events",
    table: "events",
    key: "id",
    key_type: "uuid",
    text: window_text_sql,
    storage: "halfvec",
    filter: "true",
};

/// SQL, over a row of `events` (unaliased): the text a turn's vector is made from. That is
/// the turn before it in its session (its last 500 characters), then the turn itself, since
/// an answer often means something only beside its question ("A sunrise by the lake." after
/// "What did you paint?"), and a vector of the turn alone would miss that.
pub fn window_text_sql() -> &'static str {
    "coalesce((SELECT right(p.content, 500) || E'\\n' FROM events p
                WHERE p.tenant_id = events.tenant_id AND p.user_id = events.user_id
                  AND p.session_id = events.session_id AND (p.created_at, p.seq) < (events.created_at, events.seq)
                ORDER BY p.created_at DESC, p.seq DESC LIMIT 1), '') || events.content"
}

/// Ids waiting for the background task, at most; more are left to the job.
const QUEUE: usize = 10_000;
/// Events embedded in one model call and one statement.
pub const BATCH: usize = 128;

/// The background embedder of one API process.
#[derive(Clone)]
pub struct EventVectors {
    sender: mpsc::Sender<(TenantId, Vec<Uuid>)>,
}

impl EventVectors {
    /// Starts the task on the current runtime.
    pub fn start(db: Database, embedder: Arc<Embedder>) -> Self {
        let (sender, receiver) = mpsc::channel(QUEUE / BATCH);
        tokio::spawn(embed_submitted(db, embedder, receiver));
        Self { sender }
    }

    /// Queues freshly stored events; when the queue is full they wait for the job.
    pub fn submit(&self, tenant: &TenantId, ids: &[Uuid]) {
        for chunk in ids.chunks(BATCH) {
            if self.sender.try_send((tenant.clone(), chunk.to_vec())).is_err() {
                tracing::debug!(events = chunk.len(), "embedding queue full; the embed_events job takes them");
            }
        }
    }
}

async fn embed_submitted(db: Database, embedder: Arc<Embedder>, mut receiver: mpsc::Receiver<(TenantId, Vec<Uuid>)>) {
    while let Some((tenant, ids)) = receiver.recv().await {
        let result = async {
            let mut tx = db.tenant_tx(&tenant).await?;
            let done = embed(&mut tx, &embedder, &tenant, &ids).await?;
            tx.commit().await?;
            anyhow::Ok(done)
        }
        .await;
        if let Err(err) = result {
            tracing::warn!(error = %err, events = ids.len(), "cannot embed new events now; the embed_events job will");
        }
    }
}

/// Embeds those of `ids` that have no vector yet; returns how many it wrote.
pub async fn embed(
    conn: &mut sqlx::PgConnection,
    embedder: &Embedder,
    tenant: &TenantId,
    ids: &[Uuid],
) -> anyhow::Result<usize> {
    let rows: Vec<(Uuid, String)> = sqlx::query!(
        r#"SELECT id, coalesce((SELECT right(p.content, 500) || E'\n' FROM events p
                WHERE p.tenant_id = events.tenant_id AND p.user_id = events.user_id
                  AND p.session_id = events.session_id AND (p.created_at, p.seq) < (events.created_at, events.seq)
                ORDER BY p.created_at DESC, p.seq DESC LIMIT 1), '') || events.content AS "text!" FROM events WHERE tenant_id = $1 AND id = ANY($2) AND embedding IS NULL ORDER BY seq"#,
        tenant.as_str(),
        ids
    )
    .map(|r| (r.id, r.text))
    .fetch_all(&mut *conn)
    .await?;
    if rows.is_empty() {
        return Ok(0);
    }
    let texts: Vec<String> = rows.iter().map(|(_, content)| content.clone()).collect();
    let vectors = embedder.embed(&texts).await?;
    let ids: Vec<Uuid> = rows.iter().map(|(id, _)| *id).collect();
    let vectors: Vec<pgvector::Vector> = vectors.iter().map(|v| v.to_pgvector()).collect();
    let written = sqlx::query!(
        "UPDATE events e SET embedding = v.embedding::halfvec, embedding_model = $4, embedding_dims = $5
           FROM unnest($2::uuid[], $3::vector[]) AS v(id, embedding)
          WHERE e.tenant_id = $1 AND e.id = v.id AND e.embedding IS NULL",
        tenant.as_str(),
        &ids,
        &vectors as _,
        embedder.model(),
        embedder.dims() as i16
    )
    .execute(&mut *conn)
    .await?;
    Ok(written.rows_affected() as usize)
}

/// A user's events without a vector, oldest first, at most `limit`.
pub async fn backlog(
    conn: &mut sqlx::PgConnection,
    tenant: &TenantId,
    user: &str,
    limit: i64,
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT id FROM events WHERE tenant_id = $1 AND user_id = $2 AND embedding IS NULL ORDER BY seq LIMIT $3",
        tenant.as_str(),
        user,
        limit
    )
    .fetch_all(conn)
    .await
}

/// Users with events waiting for a vector.
pub async fn waiting_users(
    pool: &PgPool,
    tenant: Option<&str>,
    user: Option<&str>,
) -> sqlx::Result<Vec<(TenantId, UserId)>> {
    sqlx::query!(
        r#"SELECT DISTINCT tenant_id AS "tenant_id!: TenantId", user_id AS "user_id!: UserId" FROM events
          WHERE embedding IS NULL AND ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)"#,
        tenant,
        user
    )
    .map(|r| (r.tenant_id, r.user_id))
    .fetch_all(pool)
    .await
}

/// Events waiting for a vector, over every tenant (the backlog gauge).
pub async fn backlog_size(pool: &PgPool) -> sqlx::Result<i64> {
    sqlx::query_scalar!(r#"SELECT count(*) AS "count!" FROM events WHERE embedding IS NULL"#).fetch_one(pool).await
}
