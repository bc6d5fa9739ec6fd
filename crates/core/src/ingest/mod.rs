//! Appending conversation events: request parsing shared by `POST /v1/events`, MCP's
//! `remember` and `engram ingest` ([`parse`]), session assignment, and the
//! one-transaction batch insert.
//!
//! A batch is validated whole before anything is written, and written in one
//! transaction: it is stored entirely or not at all. Events that carry a client id
//! are idempotent: sending them again returns the ids stored the first time. Secrets
//! are redacted before anything is stored ([`secrets`]).

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use crate::feedback::Detector;
use engram_base::configuration::IngestSettings;
use engram_base::db::Database;
use engram_base::domain::{NewEvent, Role, SessionId, TenantId, ValidationError};

mod parse;
pub mod retention;
pub mod rewrite;
pub mod secrets;
pub mod vectors;

use parse::reject_repeated_client_ids;
pub use parse::{parse_batch, parse_body, parse_event};

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("{0}: is already the id of another user's event")]
    IdTaken(String),
    #[error("concurrent requests kept storing the same event ids; retry")]
    Contended,
    #[error("database error while storing events")]
    Database(#[from] sqlx::Error),
}

/// What a batch did: ids and sessions in request order.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Ingested {
    pub ids: Vec<Uuid>,
    pub session_ids: Vec<String>,
    /// Events stored by this call.
    pub accepted: usize,
    /// Events whose client id was already stored; nothing was written for them.
    pub duplicates: usize,
    /// User messages recognised as corrections of memories served shortly before.
    #[serde(skip)]
    pub corrections: usize,
    /// The ids this call stored, to be embedded.
    #[serde(skip)]
    pub fresh: Vec<Uuid>,
}

/// Stores a validated batch in one transaction; see the module documentation.
#[tracing::instrument(skip_all, fields(tenant = %tenant, events = events.len()))]
pub async fn ingest(
    db: &Database,
    tenant: &TenantId,
    mut events: Vec<NewEvent>,
    limits: &IngestSettings,
    corrections: Option<&Detector>,
) -> Result<Ingested, IngestError> {
    reject_repeated_client_ids(&events)?;
    secrets::redact_events(&mut events, &limits.redact);
    let idle_gap = Duration::minutes(limits.session_idle_minutes.into());
    // A concurrent request may store one of our client ids between our check and our
    // insert; the transaction then rolls back and the next attempt sees it as a duplicate.
    for _ in 0..3 {
        if let Some(done) = try_ingest(db, tenant, &events, idle_gap, corrections).await? {
            return Ok(done);
        }
    }
    Err(IngestError::Contended)
}

async fn try_ingest(
    db: &Database,
    tenant: &TenantId,
    events: &[NewEvent],
    idle_gap: Duration,
    detector: Option<&Detector>,
) -> Result<Option<Ingested>, IngestError> {
    let mut tx = db.tenant_tx(tenant).await?;
    lock_users(&mut tx, tenant, events).await?;

    let existing = existing_client_ids(&mut tx, tenant, events).await?;
    reject_ids_of_other_users(events, &existing)?;
    let fresh: Vec<usize> = (0..events.len())
        .filter(|&i| events[i].client_id.as_ref().is_none_or(|id| !existing.contains_key(id.as_str())))
        .collect();
    let sessions = assign_sessions(&mut tx, tenant, events, &fresh, idle_gap).await?;
    let ids: Vec<Uuid> = fresh.iter().map(|_| Uuid::now_v7()).collect();
    let inserted = insert_events(&mut tx, tenant, events, &fresh, &ids, &sessions).await?;
    if inserted != fresh.len() {
        return Ok(None);
    }
    let mut corrections = 0;
    if let Some(detector) = detector {
        for (&i, &id) in fresh.iter().zip(&ids) {
            let event = &events[i];
            if event.role == Role::User
                && detector.is_correction(&event.content)
                && detector.link(&mut tx, tenant, &event.user_id, id, event.created_at).await? > 0
            {
                corrections += 1;
            }
        }
    }
    tx.commit().await?;

    let mut out = Ingested {
        ids: Vec::new(),
        session_ids: Vec::new(),
        accepted: inserted,
        duplicates: 0,
        corrections,
        fresh: ids.clone(),
    };
    let mut fresh_slot = fresh.iter().zip(ids.iter().zip(&sessions)).map(|(&i, v)| (i, v)).peekable();
    for (i, event) in events.iter().enumerate() {
        match fresh_slot.peek() {
            Some(&(j, (id, session))) if j == i => {
                out.ids.push(*id);
                out.session_ids.push(session.to_string());
                fresh_slot.next();
            }
            _ => {
                let stored = &existing[event.client_id.as_ref().expect("only client ids repeat").as_str()];
                out.ids.push(stored.id);
                out.session_ids.push(stored.session.clone());
                out.duplicates += 1;
            }
        }
    }
    Ok(Some(out))
}

/// Serialises concurrent batches of one user, so two of them cannot both open a
/// session; and holds the users' life locks, so a batch lands wholly before or after
/// a deletion of its user.
async fn lock_users(
    tx: &mut Transaction<'static, Postgres>,
    tenant: &TenantId,
    events: &[NewEvent],
) -> sqlx::Result<()> {
    let users: BTreeSet<&str> = events.iter().map(|e| e.user_id.as_str()).collect();
    for user in &users {
        sqlx::query!("SELECT FROM pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))", tenant.as_str(), user)
            .execute(&mut **tx)
            .await?;
    }
    crate::users::hold(tx, tenant, &users.into_iter().collect::<Vec<_>>()).await
}

/// Client ids are unique per tenant (they are the platform's own message ids): one
/// already stored for another user's event is a conflict, never a silent duplicate.
fn reject_ids_of_other_users(events: &[NewEvent], existing: &HashMap<String, Stored>) -> Result<(), IngestError> {
    for (i, event) in events.iter().enumerate() {
        let Some(client_id) = &event.client_id else { continue };
        if existing.get(client_id.as_str()).is_some_and(|stored| stored.user != event.user_id.as_str()) {
            let field = if events.len() == 1 { "id".to_owned() } else { format!("events[{i}].id") };
            return Err(IngestError::IdTaken(field));
        }
    }
    Ok(())
}

/// An event stored earlier under a client id of this batch.
struct Stored {
    id: Uuid,
    user: String,
    session: String,
}

async fn existing_client_ids(
    tx: &mut Transaction<'static, Postgres>,
    tenant: &TenantId,
    events: &[NewEvent],
) -> sqlx::Result<HashMap<String, Stored>> {
    let client_ids: Vec<&str> = events.iter().filter_map(|e| e.client_id.as_ref().map(|c| c.as_str())).collect();
    if client_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<(String, Uuid, String, String)> = sqlx::query!(
        r#"SELECT client_event_id AS "client_event_id!", id, user_id, session_id FROM events WHERE tenant_id = $1 AND client_event_id = ANY($2)"#,
        tenant.as_str(),
        &client_ids as _
    )
    .map(|r| (r.client_event_id, r.id, r.user_id, r.session_id))
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().map(|(client, id, user, session)| (client, Stored { id, user, session })).collect())
}

/// The session of each fresh event: its own, or the user's open session (the latest one,
/// if the event falls within the idle gap of it), or a new one.
async fn assign_sessions(
    tx: &mut Transaction<'static, Postgres>,
    tenant: &TenantId,
    events: &[NewEvent],
    fresh: &[usize],
    idle_gap: Duration,
) -> sqlx::Result<Vec<SessionId>> {
    let mut assigned: HashMap<usize, SessionId> = HashMap::new();
    let mut unassigned: Vec<usize> = Vec::new();
    for &i in fresh {
        match &events[i].session_id {
            Some(session) => {
                assigned.insert(i, session.clone());
            }
            None => unassigned.push(i),
        }
    }
    if !unassigned.is_empty() {
        let users: Vec<&str> = unassigned.iter().map(|&i| events[i].user_id.as_str()).collect();
        let latest: Vec<LatestSession> = sqlx::query!(
            "SELECT DISTINCT ON (user_id) user_id, session_id, started_at, last_event_at, ended_at
               FROM sessions WHERE tenant_id = $1 AND user_id = ANY($2)
              ORDER BY user_id, last_event_at DESC",
            tenant.as_str(),
            &users as _
        )
        .map(|r| (r.user_id, r.session_id, r.started_at, r.last_event_at, r.ended_at))
        .fetch_all(&mut **tx)
        .await?;
        let mut open: HashMap<String, OpenSession> = latest
            .into_iter()
            .filter(|row| row.4.is_none())
            .filter_map(|(user, session, start, last, _)| {
                Some((user, OpenSession { id: SessionId::parse(session).ok()?, start, last }))
            })
            .collect();
        unassigned.sort_by_key(|&i| events[i].created_at);
        for i in unassigned {
            let event = &events[i];
            let at = event.created_at;
            let current =
                open.get_mut(event.user_id.as_str()).filter(|s| at <= s.last + idle_gap && at >= s.start - idle_gap);
            let id = match current {
                Some(session) => {
                    session.start = session.start.min(at);
                    session.last = session.last.max(at);
                    session.id.clone()
                }
                None => {
                    let id = SessionId::generate();
                    open.insert(event.user_id.to_string(), OpenSession { id: id.clone(), start: at, last: at });
                    id
                }
            };
            assigned.insert(i, id);
        }
    }
    Ok(fresh.iter().map(|i| assigned.remove(i).expect("every fresh event is assigned")).collect())
}

/// A user's latest session: user, session, started, last event, ended.
type LatestSession = (String, String, DateTime<Utc>, DateTime<Utc>, Option<DateTime<Utc>>);

struct OpenSession {
    id: SessionId,
    start: DateTime<Utc>,
    last: DateTime<Utc>,
}

/// Inserts the fresh events and updates their sessions in one statement; returns the
/// number of events stored.
async fn insert_events(
    tx: &mut Transaction<'static, Postgres>,
    tenant: &TenantId,
    events: &[NewEvent],
    fresh: &[usize],
    ids: &[Uuid],
    sessions: &[SessionId],
) -> sqlx::Result<usize> {
    if fresh.is_empty() {
        return Ok(0);
    }
    let pick = |f: fn(&NewEvent) -> Option<String>| fresh.iter().map(|&i| f(&events[i])).collect::<Vec<_>>();
    let users = pick(|e| Some(e.user_id.to_string()));
    let roles = pick(|e| Some(e.role.as_str().to_owned()));
    let contents = pick(|e| Some(e.content.clone()));
    let client_ids = pick(|e| e.client_id.as_ref().map(|c| c.to_string()));
    let times: Vec<DateTime<Utc>> = fresh.iter().map(|&i| events[i].created_at).collect();
    let metadata: Vec<Value> = fresh.iter().map(|&i| Value::Object(events[i].metadata.clone())).collect();
    let session_ids: Vec<&str> = sessions.iter().map(|s| s.as_str()).collect();
    let stored: i64 = sqlx::query_scalar!(r#"WITH inserted AS (
            INSERT INTO events (tenant_id, id, user_id, session_id, role, content, created_at, metadata, client_event_id)
            SELECT $1, * FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[],
                                     $7::timestamptz[], $8::jsonb[], $9::text[])
            ON CONFLICT (tenant_id, client_event_id) DO NOTHING
            RETURNING user_id, session_id, created_at
         ), touched AS (
            INSERT INTO sessions (tenant_id, user_id, session_id, started_at, last_event_at, event_count)
            SELECT $1, user_id, session_id, min(created_at), max(created_at), count(*)
              FROM inserted GROUP BY user_id, session_id
            ON CONFLICT (tenant_id, user_id, session_id) DO UPDATE SET
                started_at = least(sessions.started_at, excluded.started_at),
                last_event_at = greatest(sessions.last_event_at, excluded.last_event_at),
                event_count = sessions.event_count + excluded.event_count,
                -- A late event re-opens a summarised session: summarize_sessions redoes
                -- its summary once it ends again; the summary it had goes to its history.
                summary_history = CASE WHEN sessions.summarized_at IS NULL THEN sessions.summary_history
                    ELSE sessions.summary_history || jsonb_build_array(jsonb_build_object(
                        'summary', sessions.summary, 'event_ids', to_jsonb(sessions.summary_event_ids),
                        'summarized_at', sessions.summarized_at, 'reopened_at', now()))
                    END,
                summarized_at = NULL,
                ended_at = NULL
         )
         SELECT count(*) AS "stored!" FROM inserted"#, tenant.as_str(), ids, &users as _, &session_ids as _, &roles as _, &contents as _, &times, &metadata, &client_ids as _)
    .fetch_one(&mut **tx)
    .await?;
    Ok(stored as usize)
}
