//! The OpenAPI 3 document at `GET /openapi.json`, shown as a page at `GET /docs`. Handlers carry `#[utoipa::path]`;
//! registering them through utoipa-actix-web puts every route into the document, so
//! the document cannot miss a route. The types below are the bodies handlers serve
//! (and the one request body that is parsed by hand), so what is documented is what
//! is sent.

use serde::Serialize;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ComponentsBuilder, OpenApi as Document};
use utoipa::{Modify, OpenApi, ToSchema};

use engram_base::domain::event::RawEvent;

#[derive(OpenApi)]
#[openapi(
    info(title = "engram", description = "Long-term memory for AI agents"),
    modifiers(&BearerKeys),
    tags(
        (name = "events", description = "Appending conversation events"),
        (name = "lookups", description = "Search and prompt-ready context"),
        (name = "users", description = "Per-user listings, export and deletion"),
        (name = "operations", description = "Health, readiness, metrics, the calling key"),
        (name = "jobs", description = "Consolidation jobs: schedules, runs, triggers"),
        (name = "webhooks", description = "Signed deliveries of what changed, per tenant"),
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

/// A page that reads `/openapi.json` and shows every route; it is part of the binary,
/// so reading the API needs nothing from elsewhere.
const DOCS_PAGE: &str = include_str!("api_docs.html");

/// Serves the finished document at `GET /openapi.json` and its readable view at
/// `GET /docs`, and lists both in the document.
pub fn serve(mut doc: Document) -> (actix_web::Resource, actix_web::Resource) {
    let get = |summary: &str, answer: &str| {
        utoipa::openapi::PathItem::new(
            utoipa::openapi::HttpMethod::Get,
            utoipa::openapi::path::OperationBuilder::new()
                .tag("operations")
                .summary(Some(summary))
                .response("200", utoipa::openapi::Response::new(answer)),
        )
    };
    doc.paths.paths.insert("/openapi.json".to_owned(), get("This OpenAPI 3 document", "The document"));
    doc.paths.paths.insert("/docs".to_owned(), get("This document as a readable page", "An HTML page"));
    let json = doc.to_json().expect("the document serialises");
    let document = actix_web::web::resource("/openapi.json").route(actix_web::web::get().to(move || {
        let json = json.clone();
        async move { actix_web::HttpResponse::Ok().content_type("application/json").body(json) }
    }));
    let page = actix_web::web::resource("/docs").route(
        actix_web::web::get()
            .to(|| async { actix_web::HttpResponse::Ok().content_type("text/html; charset=utf-8").body(DOCS_PAGE) }),
    );
    (document, page)
}

pub use engram_core::service::error::{ErrorBody, ErrorDetail};

/// What a route with input refuses before it answers: written once, named in each
/// route's `responses`.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code, reason = "the variants describe responses; they are never built")]
pub enum Refused {
    #[response(status = 400, description = "Invalid input; `field` names it")]
    Invalid(ErrorBody),
    #[response(status = 401, description = "No valid key")]
    NoKey(ErrorBody),
    #[response(status = 403, description = "The key lacks the scope")]
    Forbidden(ErrorBody),
}

/// What a route without input refuses: no key, or a key without the scope.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code, reason = "the variants describe responses; they are never built")]
pub enum KeyRefused {
    #[response(status = 401, description = "No valid key")]
    NoKey(ErrorBody),
    #[response(status = 403, description = "The key lacks the scope")]
    Forbidden(ErrorBody),
}

/// One event, or `{"events": [...]}` (the request body of `POST /v1/events`, parsed
/// by `ingest::parse_body` so that every error names its field).
#[derive(ToSchema)]
#[allow(dead_code, reason = "describes the body `ingest::parse_body` reads; never built")]
pub enum EventsBody {
    One(RawEvent),
    Batch(EventBatch),
}

#[derive(ToSchema)]
#[allow(dead_code, reason = "describes the body `ingest::parse_body` reads; never built")]
pub struct EventBatch {
    events: Vec<RawEvent>,
}

/// What `/healthz` and `/readyz` answer when all is well.
#[derive(Serialize, ToSchema)]
pub struct ServiceStatus {
    pub status: &'static str,
}
