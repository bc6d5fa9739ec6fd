//! Who is calling, decided before anything else of the request is looked at.
//!
//! [`authenticate`] runs as middleware on every `/v1` and `/admin` request: no key, or a
//! key that is unknown or revoked, is a 401 before the handler (and with it the body's
//! parsing) starts, and a key past its rate limit a 429 with `Retry-After`. A handler names the scope it needs in its first argument,
//! [`Authorized<need::Read>`] and the like: the check reads what the middleware found,
//! so it is decided in the first poll of the extractors, before any body extractor
//! behind it has read a byte — a 403 never loses to a 400.

use std::future::{Ready, ready};
use std::marker::PhantomData;
use std::ops::Deref;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpMessage, HttpRequest, get, web};

use super::error::ApiError;
use super::state::AppState;
use engram_base::auth::Principal;

/// The path prefixes that need a key.
const PROTECTED: &[&str] = &["/v1/", "/admin/", "/mcp"];

/// Looks up the bearer key of a protected request and keeps its principal in the
/// request's extensions; answers 401 itself when there is none.
pub async fn authenticate(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody + 'static>>, actix_web::Error> {
    if !PROTECTED.iter().any(|prefix| req.path().starts_with(prefix)) {
        return Ok(next.call(req).await?.map_into_left_body());
    }
    let secret = req
        .headers()
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(|secret| secret.trim().to_owned());
    let state = req.app_data::<web::Data<AppState>>().cloned();
    if req.path().starts_with("/mcp")
        && let Some(origin) = req.headers().get("origin")
        && !state
            .as_ref()
            .is_some_and(|s| s.settings.server.cors_origins.iter().any(|o| o.as_bytes() == origin.as_bytes()))
    {
        // MCP's Streamable HTTP asks servers to refuse pages of unknown origins.
        return Ok(req.error_response(ApiError::OriginNotAllowed).map_into_right_body());
    }
    let found = match (state, secret) {
        (Some(state), Some(secret)) => state.keys.authenticate(&state.db.pool, &secret).await.map_err(ApiError::from),
        _ => Ok(None),
    };
    match found {
        Ok(Some(principal)) => {
            let limited = req.app_data::<web::Data<AppState>>().map(|state| state.limits.check(&principal));
            if let Some(Err(wait)) = limited {
                return Ok(req.error_response(ApiError::RateLimited(wait)).map_into_right_body());
            }
            req.extensions_mut().insert(principal);
            Ok(next.call(req).await?.map_into_left_body())
        }
        Ok(None) => Ok(req.error_response(ApiError::Unauthorized).map_into_right_body()),
        Err(err) => Ok(req.error_response(err).map_into_right_body()),
    }
}

pub use engram_core::service::scopes::{Need, need};

/// Whether `principal` may do what `N` guards: a 403 naming the scope if not.
pub fn check<N: Need>(principal: &Principal) -> Result<(), ApiError> {
    Ok(engram_core::service::scopes::check::<N>(principal)?)
}

/// The caller's principal, checked against `N`; put it first among a handler's arguments.
pub struct Authorized<N: Need> {
    principal: Principal,
    need: PhantomData<N>,
}

impl<N: Need> Deref for Authorized<N> {
    type Target = Principal;

    fn deref(&self) -> &Principal {
        &self.principal
    }
}

impl<N: Need> FromRequest for Authorized<N> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let principal = req.extensions().get::<Principal>().cloned();
        ready(match principal {
            None => Err(ApiError::Unauthorized),
            Some(principal) => check::<N>(&principal).map(|()| Self { principal, need: PhantomData }),
        })
    }
}

#[utoipa::path(
    tag = "operations",
    responses((status = 200, description = "The calling key: tenant, scopes, bound user", body = engram_core::service::scopes::Caller),
              (status = 401, description = "No valid key", body = super::openapi::ErrorBody)),
    security(("api_key" = []))
)]
#[get("/v1/whoami")]
async fn whoami(principal: Authorized<need::AnyKey>) -> actix_web::HttpResponse {
    actix_web::HttpResponse::Ok().json(engram_core::service::scopes::caller(&principal))
}

pub fn configure(cfg: &mut utoipa_actix_web::service_config::ServiceConfig) {
    cfg.service(whoami);
}
