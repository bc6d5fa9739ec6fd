//! Writing summaries: a session's (level 1), a period's over archived sessions
//! (level 2), and clearing both when turns they were made from are rewritten. The
//! summarize jobs and `ingest::rewrite` write summaries only through here.

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use engram_base::domain::{TenantId, UserId};
use engram_base::models::Embedding;

/// A summary as stored: its text and the vector of the text, by `model`.
pub struct Summary<'a> {
    pub text: &'a str,
    pub embedding: &'a Embedding,
    pub model: &'a str,
}

/// Stores a session's summary, made from `events`, and ends the session at its last
/// event if it was still open.
pub async fn set_session(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    session: &str,
    summary: &Summary<'_>,
    events: &[Uuid],
    now: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query!("UPDATE sessions SET summary = $4, summary_event_ids = $5, embedding = $6, embedding_model = $7, embedding_dims = $8,
                summarized_at = $9, ended_at = coalesce(ended_at, last_event_at)
          WHERE tenant_id = $1 AND user_id = $2 AND session_id = $3", tenant.as_str(), user.as_str(), session, summary.text, events, summary.embedding.to_pgvector() as _, summary.model, summary.embedding.dims() as i32, now)
    .execute(conn)
    .await?;
    Ok(())
}

/// One period of a user's: which (`day`, `week`, `month`), its first and last day.
pub struct Span<'a> {
    pub kind: &'a str,
    pub start: NaiveDate,
    pub end: NaiveDate,
}

/// Stores the summary of a period over `sessions` and archives them; false when the
/// period already had one (the sessions are archived either way).
pub async fn add_period(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    period: &Span<'_>,
    summary: &Summary<'_>,
    sessions: &[&str],
    now: DateTime<Utc>,
) -> sqlx::Result<bool> {
    let inserted = sqlx::query!(
        "INSERT INTO period_summaries (tenant_id, id, user_id, period, period_start, period_end, summary, session_ids,
                                       embedding, embedding_model, embedding_dims, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
         ON CONFLICT (tenant_id, user_id, period, period_start) DO NOTHING",
        tenant.as_str(),
        Uuid::now_v7(),
        user.as_str(),
        period.kind,
        period.start,
        period.end,
        summary.text,
        sessions as _,
        summary.embedding.to_pgvector() as _,
        summary.model,
        summary.embedding.dims() as i32,
        now
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "UPDATE sessions SET archived_at = $4 WHERE tenant_id = $1 AND user_id = $2 AND session_id = ANY($3)",
        tenant.as_str(),
        user.as_str(),
        sessions as _,
        now
    )
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Clears the summaries of `sessions` (and their earlier versions) and the period
/// summaries made from them; the sessions are summarised again by the next runs.
/// Returns how many summaries went.
pub async fn clear(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    sessions: &[String],
) -> sqlx::Result<u64> {
    let cleared = sqlx::query!(
        "UPDATE sessions SET summary = NULL, summary_event_ids = '{}', summary_history = '[]', embedding = NULL,
                embedding_model = NULL, embedding_dims = NULL, summarized_at = NULL, archived_at = NULL
          WHERE tenant_id = $1 AND user_id = $2 AND session_id = ANY($3)
            AND (summary IS NOT NULL OR summary_history <> '[]')",
        tenant.as_str(),
        user.as_str(),
        sessions
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    let periods = sqlx::query!(
        "DELETE FROM period_summaries WHERE tenant_id = $1 AND user_id = $2 AND session_ids && $3",
        tenant.as_str(),
        user.as_str(),
        sessions
    )
    .execute(conn)
    .await?
    .rows_affected();
    Ok(cleared + periods)
}
