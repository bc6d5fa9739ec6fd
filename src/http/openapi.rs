//! The OpenAPI 3 document at `GET /openapi.json`. Handlers carry `#[utoipa::path]`;
//! registering them through utoipa-actix-web puts every route into the document, so
//! the document cannot miss a route. The types below exist only to describe bodies
//! that handlers build as JSON.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ComponentsBuilder, OpenApi as Document};
use utoipa::{Modify, OpenApi, ToSchema};
use uuid::Uuid;

use crate::domain::event::RawEvent;
use crate::memories::{HistoryEntry, Memory};

#[derive(OpenApi)]
#[openapi(
    info(title = "engram", description = "Long-term memory for AI agents"),
    modifiers(&BearerKeys),
    tags(
        (name = "events", description = "Appending conversation events"),
        (name = "lookups", description = "Search and prompt-ready context"),
        (name = "users", description = "Per-user listings, export and deletion"),
        (name = "operations", description = "Health, readiness, metrics"),
        (name = "jobs", description = "Consolidation jobs: schedules, runs, triggers"),
    )
)]
struct ApiDoc;

struct BearerKeys;

impl Modify for BearerKeys {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(|| ComponentsBuilder::new().build());
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("engram key").build()),
        );
    }
}

/// The document's title, description, tags and security scheme; paths are added as
/// routes are registered.
pub fn base() -> Document {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}

/// Serves the finished document at `GET /openapi.json`, which it lists too.
pub fn serve(mut doc: Document) -> actix_web::Resource {
    let item = utoipa::openapi::PathItem::new(
        utoipa::openapi::HttpMethod::Get,
        utoipa::openapi::path::OperationBuilder::new()
            .tag("operations")
            .summary(Some("This OpenAPI 3 document"))
            .response("200", utoipa::openapi::Response::new("The document")),
    );
    doc.paths.paths.insert("/openapi.json".to_owned(), item);
    let json = doc.to_json().expect("the document serialises");
    actix_web::web::resource("/openapi.json").route(actix_web::web::get().to(move || {
        let json = json.clone();
        async move { actix_web::HttpResponse::Ok().content_type("application/json").body(json) }
    }))
}

/// `{"error": {"code", "message", "field"?}}`
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ErrorBody {
    error: ErrorDetail,
}

#[derive(ToSchema)]
#[allow(dead_code)]
struct ErrorDetail {
    /// `invalid_request`, `unauthorized`, `forbidden`, `not_found`, `conflict`,
    /// `payload_too_large`, `unavailable`, `internal`, `not_ready`
    code: String,
    message: String,
    /// The offending field of an `invalid_request`.
    field: Option<String>,
}

/// One event, or `{"events": [...]}`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum EventsBody {
    One(RawEvent),
    Batch(EventBatch),
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct EventBatch {
    events: Vec<RawEvent>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Created {
    id: Uuid,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct MemoryPage {
    memories: Vec<Memory>,
    /// Pass as `cursor` for the next page; absent on the last page.
    next_cursor: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct MemoryDetail {
    memory: Memory,
    history: Vec<HistoryEntry>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SessionList {
    sessions: Vec<Session>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
struct Session {
    session_id: String,
    started_at: DateTime<Utc>,
    last_event_at: DateTime<Utc>,
    event_count: i32,
    ended_at: Option<DateTime<Utc>>,
    summary: Option<String>,
    summary_event_ids: Vec<Uuid>,
    summarized_at: Option<DateTime<Utc>>,
    archived_at: Option<DateTime<Utc>>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SummaryList {
    summaries: Vec<PeriodSummary>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
struct PeriodSummary {
    id: Uuid,
    /// `week` or `month`
    period: String,
    period_start: NaiveDate,
    period_end: NaiveDate,
    summary: String,
    session_ids: Vec<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

/// Every table's rows for the user, embeddings left out.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Export {
    user_id: String,
    events: Vec<Value>,
    sessions: Vec<Value>,
    period_summaries: Vec<Value>,
    memories: Vec<Value>,
    memory_history: Vec<Value>,
    feedback: Vec<Value>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Deleted {
    user_id: String,
    /// Rows removed per table.
    deleted: Value,
}

/// Served by `GET /admin/v1/users/{user_id}/deletions`.
#[derive(serde::Serialize, ToSchema)]
pub struct DeletionList {
    pub deletions: Vec<crate::users::Deletion>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Status {
    status: String,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct JobList {
    jobs: Vec<crate::jobs::control::JobOverview>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Queued {
    run_id: uuid::Uuid,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Paused {
    job: String,
    paused: bool,
}
