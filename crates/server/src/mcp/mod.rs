//! MCP (the Model Context Protocol): engram's tools for agents. Served over Streamable
//! HTTP at `/mcp` on the API listener, behind the same keys and scopes as the HTTP API
//! (the authentication middleware refuses a request without a valid key before any
//! tool runs), and over stdio by `engram mcp --stdio` with the key in `ENGRAM_API_KEY`.
//!
//! Each tool calls the function its HTTP route calls ([`tools`]); an engram error
//! comes back as a tool error carrying engram's error body, never as a failed session.
//! The HTTP transport is stateless, so any API replica answers any request, and a
//! client needs no `initialize` first. A POST is answered with JSON, whatever its
//! `Accept` names, since every tool's answer is one message.
//!
//! A connection may be bound to one user: by a key bound to that user, by
//! `/mcp?user_id=…` or the `X-Engram-User` header (HTTP), or by `ENGRAM_USER_ID`
//! (stdio). The tools then need no `user_id`, and a key bound to a user cannot bind
//! another.

mod arguments;
pub mod tools;

use std::sync::Arc;

use actix_web::{HttpMessage, web};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use rmcp_actix_web::transport::{LocalSessionManager, StreamableHttpService, on_request_extensions};
use serde_json::Value;

use engram_base::auth::Principal;
use engram_base::domain::UserId;
use engram_core::service::AppState;
use engram_core::service::error::ErrorBody;

const INSTRUCTIONS: &str = "engram is the long-term memory of your conversations with each user. Before \
    answering, call get_context with the user's id and message; after answering, call remember with both \
    turns. Use search_memory for a specific question about the user's past, and report_memory when the user \
    says a memory is wrong or out of date.";

/// One MCP server: the tools over the process's state, for the caller of each HTTP
/// request, or (stdio) for the key it was started with, checked again on every call
/// as the HTTP API checks every request: a key revoked meanwhile stops working.
#[derive(Clone)]
pub struct Engram {
    state: web::Data<AppState>,
    key: Option<String>,
    /// The user a stdio connection is bound to.
    user: Option<String>,
}

/// The user an HTTP request binds its connection to: `?user_id=` or `X-Engram-User`.
#[derive(Clone)]
struct ConnectionUser(String);

impl Engram {
    /// The tools for whoever each HTTP request authenticated as.
    pub fn per_request(state: web::Data<AppState>) -> Self {
        Self { state, key: None, user: None }
    }

    /// The tools for the holder of API key `secret`, bound to `user` if given.
    pub fn for_key(state: web::Data<AppState>, secret: String, user: Option<String>) -> Self {
        Self { state, key: Some(secret), user }
    }

    /// Who is calling, bound to the connection's user if it names one.
    async fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Principal, ErrorBody> {
        let principal = self.principal(context).await?;
        let extensions = on_request_extensions(&context.extensions);
        let named = extensions.and_then(|e| e.get::<ConnectionUser>()).map(|u| u.0.clone()).or(self.user.clone());
        match named {
            Some(user) => {
                let user = UserId::parse(user).map_err(|err| engram_core::service::Error::from(err).body())?;
                engram_core::service::scopes::bind(principal, user).map_err(|err| err.body())
            }
            None => Ok(principal),
        }
    }

    /// The principal the HTTP middleware found, or that of the key.
    async fn principal(&self, context: &RequestContext<RoleServer>) -> Result<Principal, ErrorBody> {
        let unauthorized = || {
            ErrorBody::new(
                "unauthorized",
                "a valid API key is required: send `Authorization: Bearer <key>`".into(),
                None,
            )
        };
        let Some(secret) = &self.key else {
            return on_request_extensions(&context.extensions)
                .and_then(|extensions| extensions.get::<Principal>())
                .cloned()
                .ok_or_else(unauthorized);
        };
        let found = self.state.keys.authenticate(&self.state.db.pool, secret).await;
        let principal = found.map_err(|err| engram_core::service::Error::from(err).body())?.ok_or_else(unauthorized)?;
        self.state.limits.check(&principal).map_err(|_| {
            ErrorBody::new("rate_limited", "this API key is over its rate limit; retry later".into(), None)
        })?;
        Ok(principal)
    }
}

impl ServerHandler for Engram {
    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::default();
        implementation.name = "engram".to_owned();
        implementation.version = env!("CARGO_PKG_VERSION").to_owned();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation)
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::list()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::describe(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let principal = match self.caller(&context).await {
            Ok(principal) => principal,
            Err(body) => return Ok(failure(body).into()),
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let span = tracing::info_span!("tool", tool = %request.name, tenant = %principal.tenant);
        let outcome =
            tracing::Instrument::instrument(tools::call(&self.state, &principal, &request.name, arguments), span).await;
        match outcome {
            None => Err(ErrorData::invalid_params(format!("no tool named `{}`", request.name), None)),
            Some(Ok((value, text))) => {
                let mut result = CallToolResult::structured(value);
                // A model reads the text; the structure stays for programs.
                if let Some(text) = text {
                    result.content = vec![ContentBlock::text(text)];
                }
                Ok(result.into())
            }
            Some(Err(err)) => Ok(failure(err.body()).into()),
        }
    }
}

/// Serves the tools on stdin and stdout for the key in `ENGRAM_API_KEY`, until the
/// client closes stdin; logs go to stderr.
pub async fn serve_stdio(state: web::Data<AppState>) -> anyhow::Result<()> {
    use anyhow::Context;
    use rmcp::ServiceExt;
    let secret = std::env::var("ENGRAM_API_KEY")
        .ok()
        .map(|key| key.trim().to_owned())
        .filter(|key| !key.is_empty())
        .context("set ENGRAM_API_KEY to an engram API key (engram keys create)")?;
    let Some(principal) = engram_base::auth::authenticate(&state.db.pool, &secret).await? else {
        anyhow::bail!("ENGRAM_API_KEY is not an active engram API key");
    };
    let user = std::env::var("ENGRAM_USER_ID").ok().map(|user| user.trim().to_owned()).filter(|u| !u.is_empty());
    if let Some(user) = &user {
        let bound = UserId::parse(user.clone()).map_err(engram_core::service::Error::from);
        bound
            .and_then(|user| engram_core::service::scopes::bind(principal, user))
            .map_err(|err| anyhow::anyhow!("ENGRAM_USER_ID: {}", err.body().error.message))?;
    }
    let service =
        Engram::for_key(state, secret, user).serve(rmcp::transport::stdio()).await.context("MCP handshake on stdio")?;
    tracing::info!("engram MCP server on stdio");
    service.waiting().await.context("MCP session on stdio")?;
    Ok(())
}

/// A tool error: engram's error body, `{"error": {"code", "message", "field"?}}`.
fn failure(body: ErrorBody) -> CallToolResult {
    let body = serde_json::to_value(body).unwrap_or(Value::Null);
    CallToolResult::structured_error(body)
}

/// `/mcp`: Streamable HTTP, stateless, accepting the `Host` values of `server.mcp_hosts`
/// (the DNS-rebinding defence) and bodies up to `server.max_body_bytes`; the `Origin`
/// check is the authentication middleware's. A POST that does not accept an event
/// stream (no `Accept`, `*/*`, `application/json`) is served as one that accepts both,
/// which the transport requires: its answer is JSON either way.
pub fn scope(
    state: web::Data<AppState>,
    sessions: Arc<LocalSessionManager>,
) -> actix_web::Scope<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = actix_web::dev::ServiceResponse,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let server = &state.settings.server;
    let (hosts, max_body) = (server.mcp_hosts.clone(), server.max_body_bytes);
    let service = StreamableHttpService::builder()
        .service_factory(Arc::new(move || Ok(Engram::per_request(state.clone()))))
        .session_manager(sessions)
        .stateful_mode(false)
        .json_response(true)
        .allowed_hosts(hosts)
        .max_request_body_bytes(max_body)
        .on_request_fn(|request, extensions| {
            if let Some(principal) = request.extensions().get::<Principal>() {
                extensions.insert(principal.clone());
            }
            if let Some(user) = connection_user(request) {
                extensions.insert(ConnectionUser(user));
            }
        })
        .build();
    service.scope_with_path("/mcp").wrap_fn(|mut request, service| {
        if request.method() == actix_web::http::Method::POST {
            accept_json(request.headers_mut());
        }
        actix_web::dev::Service::call(service, request)
    })
}

/// The user a request names for its connection, from the query or the header.
fn connection_user(request: &actix_web::HttpRequest) -> Option<String> {
    let query = web::Query::<std::collections::HashMap<String, String>>::from_query(request.query_string()).ok();
    let from_query = query.and_then(|q| q.get("user_id").cloned());
    let from_header = || request.headers().get("x-engram-user").and_then(|v| v.to_str().ok()).map(str::to_owned);
    from_query.or_else(from_header).map(|user| user.trim().to_owned()).filter(|user| !user.is_empty())
}

/// Names both media types the transport insists on when the client named no event
/// stream: a client that accepts only JSON is answered in JSON anyway.
fn accept_json(headers: &mut actix_web::http::header::HeaderMap) {
    use actix_web::http::header::{ACCEPT, HeaderValue};
    let accepted = headers.get(ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    if !accepted.contains("text/event-stream") {
        headers.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
    }
}
