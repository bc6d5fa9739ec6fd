//! The OpenAPI 3 document at `GET /openapi.json`. Handlers carry `#[utoipa::path]`;
//! registering them through utoipa-actix-web puts every route into the document, so
//! the document cannot miss a route. The types below are the bodies handlers serve
//! (and the one request body that is parsed by hand), so what is documented is what
//! is sent.

use serde::Serialize;
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

/// `{"error": {"code", "message", "field"?}}`: every error engram answers.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `invalid_request`, `unauthorized`, `forbidden`, `not_found`, `conflict`,
    /// `payload_too_large`, `unsupported_media_type`, `rate_limited`, `unavailable`,
    /// `not_ready`, `internal`
    pub code: &'static str,
    pub message: String,
    /// The offending field of an `invalid_request`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// One event, or `{"events": [...]}` (the request body of `POST /v1/events`, parsed
/// by `ingest::parse_body` so that every error names its field).
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

#[derive(Serialize, ToSchema)]
pub struct Created {
    pub id: Uuid,
}

#[derive(Serialize, ToSchema)]
pub struct MemoryPage {
    pub memories: Vec<Memory>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct MemoryDetail {
    pub memory: Memory,
    pub history: Vec<HistoryEntry>,
}

#[derive(Serialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<crate::sessions::Session>,
}

#[derive(Serialize, ToSchema)]
pub struct SummaryList {
    pub summaries: Vec<crate::sessions::PeriodSummary>,
}

/// Every table's rows for the user, embeddings left out: `events`, `sessions`,
/// `period_summaries`, `memories`, `memory_history`, `memory_access`, `feedback`,
/// `job_runs`, `job_checkpoints`, each an array.
#[derive(Serialize, ToSchema)]
pub struct Export {
    pub user_id: String,
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub tables: serde_json::Map<String, Value>,
}

#[derive(Serialize, ToSchema)]
pub struct Deleted {
    pub user_id: String,
    /// Rows removed per table.
    #[schema(value_type = Object)]
    pub deleted: Value,
}

/// Served by `GET /admin/v1/users/{user_id}/deletions`.
#[derive(Serialize, ToSchema)]
pub struct DeletionList {
    pub deletions: Vec<crate::users::Deletion>,
}

/// What `/healthz` and `/readyz` answer when all is well.
#[derive(Serialize, ToSchema)]
pub struct ServiceStatus {
    pub status: &'static str,
}

#[derive(Serialize, ToSchema)]
pub struct JobList {
    pub jobs: Vec<crate::jobs::control::JobOverview>,
}

#[derive(Serialize, ToSchema)]
pub struct Queued {
    pub run_id: Uuid,
}

#[derive(Serialize, ToSchema)]
pub struct Paused {
    pub job: String,
    pub paused: bool,
}
