//! Rewriting stored turns when a person asks for something to be forgotten: the text a
//! turn kept is replaced, its vector and the vector of the turn after it (made with it,
//! see [`crate::ingest::vectors::window_text_sql`]) are dropped to be made anew, and the
//! summaries made from it are cleared so that `summarize_sessions` and
//! `summarize_periods` make them again from what is left.

use sqlx::PgConnection;
use uuid::Uuid;

use crate::sessions::summaries;
use engram_base::domain::{TenantId, UserId};

pub use engram_language::text::DELETED;

/// What a rewrite changed.
#[derive(Debug, Default, Clone)]
pub struct Rewritten {
    pub turns: u64,
    /// Turns whose vectors were dropped, to be embedded again.
    pub to_embed: Vec<Uuid>,
    pub summaries_cleared: u64,
}

/// Sets the text of each of the user's turns in `rewrites` (id, new text).
pub async fn rewrite_turns(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    rewrites: &[(Uuid, String)],
) -> sqlx::Result<Rewritten> {
    if rewrites.is_empty() {
        return Ok(Rewritten::default());
    }
    let ids: Vec<Uuid> = rewrites.iter().map(|(id, _)| *id).collect();
    let texts: Vec<&str> = rewrites.iter().map(|(_, text)| text.as_str()).collect();
    let changed: Vec<(Uuid, String)> = sqlx::query!(
        "UPDATE events e SET content = r.text, embedding = NULL, embedding_model = NULL, embedding_dims = NULL
           FROM unnest($3::uuid[], $4::text[]) AS r(id, text)
          WHERE e.tenant_id = $1 AND e.user_id = $2 AND e.id = r.id
         RETURNING e.id, e.session_id",
        tenant.as_str(),
        user.as_str(),
        &ids,
        &texts as _
    )
    .map(|r| (r.id, r.session_id))
    .fetch_all(&mut *conn)
    .await?;
    let changed_ids: Vec<Uuid> = changed.iter().map(|(id, _)| *id).collect();
    // The turn after each: its vector was made with the text that is gone.
    let next: Vec<Uuid> = sqlx::query_scalar!(
        "UPDATE events n SET embedding = NULL, embedding_model = NULL, embedding_dims = NULL
          WHERE n.tenant_id = $1 AND n.user_id = $2 AND n.id IN (
                SELECT (SELECT x.id FROM events x
                         WHERE x.tenant_id = e.tenant_id AND x.user_id = e.user_id AND x.session_id = e.session_id
                           AND (x.created_at, x.seq) > (e.created_at, e.seq)
                         ORDER BY x.created_at, x.seq LIMIT 1)
                  FROM events e WHERE e.tenant_id = $1 AND e.user_id = $2 AND e.id = ANY($3))
         RETURNING n.id",
        tenant.as_str(),
        user.as_str(),
        &changed_ids
    )
    .fetch_all(&mut *conn)
    .await?;
    let sessions: Vec<String> = changed.into_iter().map(|(_, session)| session).collect();
    let summaries_cleared = summaries::clear(conn, tenant, user, &sessions).await?;
    let mut to_embed = changed_ids;
    to_embed.extend(next);
    to_embed.sort();
    to_embed.dedup();
    Ok(Rewritten { turns: rewrites.len() as u64, to_embed, summaries_cleared })
}

/// The turn right after each of the user's turns `ids` in its session: its vector was
/// made with the turn before (see [`crate::ingest::vectors::window_text_sql`]).
pub async fn next_turns(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    ids: &[Uuid],
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        r#"SELECT n.id AS "id!" FROM events e
           JOIN LATERAL (SELECT x.id FROM events x
                          WHERE x.tenant_id = e.tenant_id AND x.user_id = e.user_id AND x.session_id = e.session_id
                            AND (x.created_at, x.seq) > (e.created_at, e.seq)
                          ORDER BY x.created_at, x.seq LIMIT 1) n ON true
          WHERE e.tenant_id = $1 AND e.user_id = $2 AND e.id = ANY($3)"#,
        tenant.as_str(),
        user.as_str(),
        ids
    )
    .fetch_all(conn)
    .await
}
