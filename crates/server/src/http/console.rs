//! The web console: static files compiled into the binary and served at `/console/`.
//! The page signs in with an API key its user types and drives engram through the
//! public API alone, so it can do nothing that key cannot; loading it needs no key.
//! Every asset and API call is relative, so the console works behind a path prefix.

use actix_web::http::header;
use actix_web::{HttpResponse, web};

use super::error::ApiError;

/// What the page may load and run: its own scripts and styles, calls to its own origin.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                      connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The files of `console/`, each name with its content (listed by `build.rs`).
const FILES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/console_files.rs"));

/// A file's content type, by its extension.
fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        _ => "text/plain; charset=utf-8",
    }
}

/// `/console` (redirected to `console/`, so relative links resolve) and its files.
pub fn scope() -> actix_web::Scope {
    web::scope("/console")
        .route(
            "",
            web::get().to(|| async { HttpResponse::Found().insert_header((header::LOCATION, "console/")).finish() }),
        )
        .route("/{file:.*}", web::get().to(file))
}

async fn file(path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let name = match path.as_str() {
        "" => "index.html",
        name => name,
    };
    let (_, body) =
        FILES.iter().find(|(file, _)| *file == name).ok_or_else(|| ApiError::not_found("no such console file"))?;
    Ok(HttpResponse::Ok()
        .content_type(content_type(name))
        .insert_header((header::CONTENT_SECURITY_POLICY, POLICY))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(*body))
}
