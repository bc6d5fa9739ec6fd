//! The bearer-key extractor: every `/v1` and `/admin` handler takes a [`Principal`].

use std::future::Future;
use std::pin::Pin;

use actix_web::{FromRequest, HttpRequest, dev::Payload, web};

use super::error::ApiError;
use super::state::AppState;
use crate::auth::{Principal, Scope};

impl FromRequest for Principal {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let secret = req
            .headers()
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(|secret| secret.trim().to_owned());
        Box::pin(async move {
            let (Some(state), Some(secret)) = (state, secret) else {
                return Err(ApiError::Unauthorized);
            };
            state.keys.authenticate(&state.db.pool, &secret).await?.ok_or(ApiError::Unauthorized)
        })
    }
}

/// 403 unless the key carries `scope`.
pub fn require(principal: &Principal, scope: Scope) -> Result<(), ApiError> {
    if principal.has(scope) { Ok(()) } else { Err(ApiError::Forbidden(scope)) }
}
