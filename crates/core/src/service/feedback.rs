//! A client's verdict on a memory it was served.

use super::{AppState, Error, scopes};
use crate::feedback::{self, FeedbackError, FeedbackRequest};
use engram_base::auth::Principal;

/// What was stored: the feedback's id.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Created {
    pub id: uuid::Uuid,
}

/// Stores feedback; a correction is counted.
pub async fn submit(state: &AppState, principal: &Principal, mut request: FeedbackRequest) -> Result<Created, Error> {
    scopes::reach(principal, &request.user_id)?;
    // A note is stored like a turn: its secrets never are.
    request.note = request.note.map(|note| crate::ingest::secrets::redact(&note, &state.settings.ingest.redact));
    let (id, correction) = feedback::submit(&state.db, &principal.tenant, request).await.map_err(|err| match err {
        FeedbackError::Invalid(err) => Error::Invalid(err),
        FeedbackError::NotFound(_) => Error::NotFound(err.to_string()),
        FeedbackError::Database(err) => err.into(),
    })?;
    if correction {
        state.metrics.corrections.with_label_values(&["feedback"]).inc();
    }
    Ok(Created { id })
}
