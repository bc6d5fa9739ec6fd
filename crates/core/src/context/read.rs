//! What the block holds besides the lookup's results — the session's latest turns, the
//! profile, the latest summaries — and every turn or memory as a dated line.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::assemble::Candidate;
use crate::search::SearchResult;
use engram_base::domain::{Kind, ResultKind, Role, SessionId, TenantId, UserId};

/// A search result as a dated line: a turn with its speaker's role, a memory with the
/// time it was stated.
pub(super) fn dated(result: SearchResult) -> Candidate {
    let at = result.created_at.or(result.parts.span.map(|(start, _)| start));
    let content = match at {
        Some(at) => said(at, result.role, &result.content),
        None => result.content,
    };
    Candidate { id: result.id, kind: result.kind, content }
}

/// A dated line of what was said, with what a relative time phrase in it meant:
/// `[Mon 8 May 2023] user: I went yesterday. (yesterday = Sun 7 May 2023)`.
fn said(at: DateTime<Utc>, role: Option<Role>, content: &str) -> String {
    let line = match role {
        Some(role) => format!("{}: {content}", role.as_str()),
        None => content.to_owned(),
    };
    match engram_language::when::annotate(content, at) {
        Some(meant) => engram_language::text::dated(at, &format!("{line} ({meant})")),
        None => engram_language::text::dated(at, &line),
    }
}

/// The latest turns of a session, newest first as read and oldest first as returned; as
/// many as could fill the largest working share.
pub(super) async fn latest_turns(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    session: &SessionId,
) -> sqlx::Result<Vec<Candidate>> {
    let mut rows: Vec<(uuid::Uuid, Role, String, DateTime<Utc>)> = sqlx::query!(
        r#"SELECT id, role AS "role: Role", content, created_at FROM events
          WHERE tenant_id = $1 AND user_id = $2 AND session_id = $3
          ORDER BY created_at DESC, seq DESC LIMIT 200"#,
        tenant.as_str(),
        user.as_str(),
        session.as_str()
    )
    .map(|r| (r.id, r.role, r.content, r.created_at))
    .fetch_all(conn)
    .await?;
    rows.reverse();
    Ok(rows
        .into_iter()
        .filter_map(|(id, role, content, at)| {
            let content = engram_language::text::visible(&content)?;
            Some(Candidate { id: id.to_string(), kind: ResultKind::Event, content: said(at, Some(role), &content) })
        })
        .collect())
}

/// Identity and profile facts, most important first.
pub async fn profile(conn: &mut PgConnection, tenant: &TenantId, user: &UserId) -> sqlx::Result<Vec<Candidate>> {
    let rows: Vec<(uuid::Uuid, Kind, String)> = sqlx::query!(
        r#"SELECT id, kind AS "kind: Kind", content FROM memories
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND category IN ('identity', 'personal')
          ORDER BY pinned DESC, importance DESC, updated_at DESC LIMIT 20"#,
        tenant.as_str(),
        user.as_str()
    )
    .map(|r| (r.id, r.kind, r.content))
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, kind, content)| Candidate { id: id.to_string(), kind: kind.into(), content })
        .collect())
}

/// The latest session summaries and period summaries.
pub async fn recent_summaries(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
) -> sqlx::Result<(Vec<Candidate>, Vec<Candidate>)> {
    let sessions: Vec<(String, String, Option<DateTime<Utc>>)> = sqlx::query!(
        r#"SELECT session_id, summary AS "summary!", summarized_at FROM sessions
          WHERE tenant_id = $1 AND user_id = $2 AND summary IS NOT NULL
          ORDER BY last_event_at DESC LIMIT 3"#,
        tenant.as_str(),
        user.as_str()
    )
    .map(|r| (r.session_id, r.summary, r.summarized_at))
    .fetch_all(&mut *conn)
    .await?;
    let periods: Vec<(uuid::Uuid, String)> = sqlx::query!(
        "SELECT id, summary FROM period_summaries WHERE tenant_id = $1 AND user_id = $2
          ORDER BY period_start DESC LIMIT 2",
        tenant.as_str(),
        user.as_str()
    )
    .map(|r| (r.id, r.summary))
    .fetch_all(conn)
    .await?;
    Ok((
        sessions
            .into_iter()
            .map(|(id, content, _)| Candidate { id, kind: ResultKind::SessionSummary, content })
            .collect(),
        periods
            .into_iter()
            .map(|(id, content)| Candidate { id: id.to_string(), kind: ResultKind::PeriodSummary, content })
            .collect(),
    ))
}

/// The turn before each of the turns `replies` in its session (the question a reply
/// answers), as a dated line, by the reply's id.
pub(super) async fn turns_before(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    replies: &[uuid::Uuid],
) -> sqlx::Result<Vec<(uuid::Uuid, Candidate)>> {
    let rows: Vec<(uuid::Uuid, uuid::Uuid, Role, String, DateTime<Utc>)> = sqlx::query!(
        r#"SELECT r.id AS reply, p.id AS "id!", p.role AS "role!: Role", p.content AS "content!", p.created_at AS "created_at!" FROM events r
           JOIN LATERAL (SELECT e.id, e.role, e.content, e.created_at FROM events e
                          WHERE e.tenant_id = r.tenant_id AND e.user_id = r.user_id AND e.session_id = r.session_id
                            AND (e.created_at, e.seq) < (r.created_at, r.seq)
                          ORDER BY e.created_at DESC, e.seq DESC LIMIT 1) p ON true
          WHERE r.tenant_id = $1 AND r.user_id = $2 AND r.id = ANY($3)"#,
        tenant.as_str(),
        user.as_str(),
        replies
    )
    .map(|r| (r.reply, r.id, r.role, r.content, r.created_at))
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(reply, id, role, content, at)| {
            let content = engram_language::text::visible(&content)?;
            Some((
                reply,
                Candidate { id: id.to_string(), kind: ResultKind::Event, content: said(at, Some(role), &content) },
            ))
        })
        .collect())
}
