//! Feedback and corrections. Clients report `wrong`, `outdated` or `helpful` on a
//! memory; and a user message that corrects the agent ("that's wrong", "你记错了",
//! "I already switched to …") within `corrections.window_minutes` of memories being
//! served to that user is detected at ingest and linked to those memories. Either
//! way a correction halves the memory's confidence (with a history row) and leaves
//! the rest to the consolidation jobs.

use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::memories::{self, Change};
use engram_base::configuration::CorrectionSettings;
use engram_base::db::Database;
use engram_base::domain::{MemoryId, Owner, TenantId, UserId, ValidationError};
use engram_language::configured::Patterns;

/// A client's verdict on a memory it was served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize, sqlx::Type, utoipa::ToSchema)]
#[sqlx(type_name = "text", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Wrong,
    Outdated,
    Helpful,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Wrong => "wrong",
            Self::Outdated => "outdated",
            Self::Helpful => "helpful",
        }
    }

    /// Wrong and outdated are corrections; helpful is a confirmation.
    pub fn corrects(self) -> bool {
        self != Self::Helpful
    }
}

/// Finds correcting messages; patterns are case-insensitive regular expressions.
pub struct Detector {
    patterns: Patterns,
    window: Duration,
}

impl Detector {
    pub fn new(settings: &CorrectionSettings) -> Result<Self, String> {
        let patterns = Patterns::new(&settings.patterns).map_err(|e| format!("corrections.patterns: {e}"))?;
        Ok(Self { patterns, window: Duration::minutes(settings.window_minutes.into()) })
    }

    pub fn is_correction(&self, text: &str) -> bool {
        self.patterns.matches(text)
    }

    /// Links a correcting message to the memories served to its user within the window
    /// before it; returns how many memories it names (0: nothing was served).
    pub async fn link(
        &self,
        conn: &mut PgConnection,
        tenant: &TenantId,
        user: &UserId,
        event_id: Uuid,
        at: DateTime<Utc>,
    ) -> sqlx::Result<usize> {
        let served: Vec<Uuid> = sqlx::query_scalar!(
            "SELECT a.memory_id FROM memory_access a
               JOIN memories m ON m.tenant_id = a.tenant_id AND m.id = a.memory_id AND m.status = 'active'
              WHERE a.tenant_id = $1 AND a.user_id = $2 AND a.last_accessed_at BETWEEN $3 AND $4
              ORDER BY a.last_accessed_at DESC LIMIT 5",
            tenant.as_str(),
            user.as_str(),
            at - self.window,
            at + Duration::minutes(1)
        )
        .fetch_all(&mut *conn)
        .await?;
        for &memory in &served {
            record(conn, Owner::new(tenant, user), memory, Verdict::Wrong, "detected", None, Some(event_id)).await?;
        }
        Ok(served.len())
    }
}

/// `POST /v1/feedback` as the client sends it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackRequest {
    #[schema(value_type = String)]
    pub user_id: UserId,
    #[schema(value_type = uuid::Uuid)]
    pub memory_id: MemoryId,
    /// `wrong` (it was never true), `outdated` (no longer true) or `helpful`.
    pub kind: Verdict,
    pub note: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum FeedbackError {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("no memory {0} for this user")]
    NotFound(Uuid),
    #[error("database error while storing feedback")]
    Database(#[from] sqlx::Error),
}

/// Stores client feedback; returns its id and whether it is a correction.
pub async fn submit(db: &Database, tenant: &TenantId, request: FeedbackRequest) -> Result<(Uuid, bool), FeedbackError> {
    let (user, memory, verdict) = (request.user_id, request.memory_id.0, request.kind);
    if request.note.as_ref().is_some_and(|n| n.len() > 2000 || n.contains('\0')) {
        return Err(ValidationError::new("note", "must be at most 2000 bytes of text").into());
    }
    let mut tx = db.tenant_tx(tenant).await?;
    crate::users::hold(&mut tx, tenant, &[user.as_str()]).await?;
    if memories::get(&mut tx, tenant, &user, memory).await?.is_none() {
        return Err(FeedbackError::NotFound(memory));
    }
    let id =
        record(&mut tx, Owner::new(tenant, &user), memory, verdict, "feedback", request.note.as_deref(), None).await?;
    tx.commit().await?;
    Ok((id, verdict.corrects()))
}

/// Marks the open corrections of these memories resolved: a newer memory replaced them.
pub async fn resolve(conn: &mut PgConnection, tenant: &TenantId, memories: &[Uuid]) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE feedback SET resolved_at = now() WHERE tenant_id = $1 AND memory_id = ANY($2) AND resolved_at IS NULL",
        tenant.as_str(),
        memories
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A feedback row; a correction also halves the memory's confidence, with history.
async fn record(
    conn: &mut PgConnection,
    owner: Owner<'_>,
    memory: Uuid,
    kind: Verdict,
    source: &str,
    note: Option<&str>,
    event_id: Option<Uuid>,
) -> sqlx::Result<Uuid> {
    let Owner { tenant, user } = owner;
    let id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO feedback (tenant_id, id, user_id, memory_id, kind, source, note, event_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        tenant.as_str(),
        id,
        user.as_str(),
        memory,
        kind as _,
        source,
        note,
        event_id
    )
    .execute(&mut *conn)
    .await?;
    if kind.corrects() {
        memories::lifecycle::doubt(
            conn,
            tenant,
            user,
            memory,
            &Change::by(source, None, format!("{source}: {}", kind.as_str())),
        )
        .await?;
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrections_are_recognised_in_several_languages_and_small_talk_is_not() {
        let detector = Detector::new(&CorrectionSettings::default()).unwrap();
        for text in [
            "That's wrong, I use Neovim now",
            "no, you are wrong",
            "I already switched to Rust",
            "你记错了，我现在用 Vim",
            "不对，我现在用 PostgreSQL",
            "我们已经换成 Vite 了",
            "Das stimmt nicht",
        ] {
            assert!(detector.is_correction(text), "{text}");
        }
        for text in ["thanks!", "ok", "好的", "What is the capital of France?", "I wrote the wrong test yesterday"] {
            assert!(!detector.is_correction(text), "{text}");
        }
    }

    #[test]
    fn an_invalid_pattern_names_the_setting() {
        let settings = CorrectionSettings { patterns: vec!["(".into()], window_minutes: 5 };
        assert!(Detector::new(&settings).err().unwrap().contains("corrections.patterns"));
    }
}
