//! The tools: what each is for (its arguments are [`super::arguments`]), the scope it
//! needs, and the operation of [`engram_core::service`] it calls, the one its HTTP route calls.

use rmcp::model::{Tool, ToolAnnotations};
use rmcp::schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::arguments::{
    AddMemory, DeleteMemory, ForgetUser, GetContext, GetMemory, ListMemories, Remember, ReportMemory, SearchMemory,
    Turn, UpdateMemory,
};
use engram_base::auth::Principal;
use engram_base::domain::ValidationError;
use engram_core::feedback::FeedbackRequest;
use engram_core::search::SearchRequest;
use engram_core::service::input::{Params, parse_json};
use engram_core::service::memories::{self, MemoryEdit, NewMemoryRequest};
use engram_core::service::scopes::{Need, check, need};
use engram_core::service::{AppState, Error, events, feedback, lookups, users};

/// The names of the tools, in the order they are listed.
const NAMES: &[&str] = &[
    "remember",
    "search_memory",
    "get_context",
    "list_memories",
    "get_memory",
    "add_memory",
    "update_memory",
    "delete_memory",
    "report_memory",
    "forget_user",
];

/// Every tool, as `tools/list` describes it.
pub fn list() -> Vec<Tool> {
    NAMES.iter().filter_map(|name| describe(name)).collect()
}

/// One tool's description, schema and hints.
pub fn describe(name: &str) -> Option<Tool> {
    let read = || ToolAnnotations::new().read_only(true).open_world(false);
    let (description, schema, annotations) = match name {
        "remember" => (
            "Store conversation turns in the user's long-term memory. Call it after each exchange with the \
             user's message and your answer. Turns are searchable at once; facts are extracted from them in the \
             background. Give each turn an `id` to make retries safe.",
            schema::<Remember>(),
            ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false),
        ),
        "search_memory" => (
            "Search what is known about the user: facts, insights and the raw conversation turns (kinds \
             [\"fact\", \"insight\", \"event\"] by default), so what was just remembered is found at once. \
             Results come best first with a score; time phrases in the query (\"last week\") and since/until \
             narrow by time.",
            schema::<SearchMemory>(),
            read(),
        ),
        "get_context" => (
            "Get a prompt-ready block of what matters about the user for the question at hand, within a token \
             budget: the current conversation, profile, relevant memories and recent sessions. Call it before \
             answering the user.",
            schema::<GetContext>(),
            read(),
        ),
        "list_memories" => (
            "List the user's memories, newest first, a page at a time; pass `next_cursor` back as `cursor`.",
            schema::<ListMemories>(),
            read(),
        ),
        "get_memory" => (
            "Get one memory with its history: every change, what replaced it, and the turns it came from.",
            schema::<GetMemory>(),
            read(),
        ),
        "add_memory" => (
            "Remember one thing about the user in so many words, searchable at once — when the user asks you to \
             remember something (\"remember that I prefer dark mode\"). Give a `key` for something that has one \
             current value (an employer, a home city): a later memory with the same key replaces it.",
            schema::<AddMemory>(),
            ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false),
        ),
        "update_memory" => (
            "Correct one memory: its sentence, category, importance, or pin it so it is never evicted. The change \
             is recorded in the memory's history.",
            schema::<UpdateMemory>(),
            ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false),
        ),
        "delete_memory" => (
            "Delete one memory for good when the user asks you to forget it; with sources true also the \
             conversation turns it came from.",
            schema::<DeleteMemory>(),
            ToolAnnotations::new().read_only(false).destructive(true).idempotent(false).open_world(false),
        ),
        "report_memory" => (
            "Tell engram a memory was wrong, outdated or helpful. Wrong and outdated count as corrections and \
             lower the memory's rank; put what is true now in `note`.",
            schema::<ReportMemory>(),
            ToolAnnotations::new().read_only(false).destructive(false).open_world(false),
        ),
        "forget_user" => (
            "Delete everything stored about the user, everywhere, for good (needs an admin key). Only on the \
             user's explicit request.",
            schema::<ForgetUser>(),
            ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(false),
        ),
        _ => return None,
    };
    Some(Tool::new(name.to_owned(), description, schema).annotate(annotations))
}

/// What a model reads of a tool's answer, before the structure: the context block, or
/// the results of a search one per line. `None`: the structure alone.
pub fn readable(name: &str, answer: &Value) -> Option<String> {
    match name {
        "get_context" => answer["text"].as_str().map(str::to_owned),
        "search_memory" => {
            let results = answer["results"].as_array()?;
            if results.is_empty() {
                return Some("Nothing found.".to_owned());
            }
            let lines: Vec<String> = results
                .iter()
                .map(|r| {
                    let when = r["created_at"].as_str().or(r["updated_at"].as_str()).unwrap_or("").get(..10);
                    let when = when.map_or_else(String::new, |day| format!(", {day}"));
                    format!(
                        "- {} ({}{when}; score {:.2}; id {})",
                        r["content"].as_str().unwrap_or(""),
                        r["kind"].as_str().unwrap_or(""),
                        r["score"].as_f64().unwrap_or(0.0),
                        r["id"].as_str().unwrap_or("")
                    )
                })
                .collect();
            Some(lines.join("\n"))
        }
        _ => None,
    }
}

fn schema<T: JsonSchema + 'static>() -> std::sync::Arc<rmcp::model::JsonObject> {
    rmcp::handler::server::common::schema_for_type::<T>()
}

/// Runs tool `name` for `principal`: the scope is checked before the arguments are read.
/// `None` for a tool that does not exist.
pub async fn call(
    state: &AppState,
    principal: &Principal,
    name: &str,
    arguments: Value,
) -> Option<Result<Value, Error>> {
    let outcome = match name {
        "remember" => remember(state, principal, arguments).await,
        "search_memory" => search_memory(state, principal, arguments).await,
        "get_context" => get_context(state, principal, arguments).await,
        "list_memories" => list_memories(state, principal, arguments).await,
        "get_memory" => get_memory(state, principal, arguments).await,
        "add_memory" => add_memory(state, principal, arguments).await,
        "update_memory" => update_memory(state, principal, arguments).await,
        "delete_memory" => delete_memory(state, principal, arguments).await,
        "report_memory" => report_memory(state, principal, arguments).await,
        "forget_user" => forget_user(state, principal, arguments).await,
        _ => return None,
    };
    Some(outcome)
}

/// The arguments as `T`, after the scope check; an error names the argument.
fn arguments<N: Need, T: DeserializeOwned>(principal: &Principal, arguments: &Value) -> Result<T, Error> {
    check::<N>(principal)?;
    let bytes = serde_json::to_vec(arguments).map_err(|err| Error::Internal(err.into()))?;
    Ok(parse_json(&bytes)?)
}

/// The user a tool acts for: its `user_id`, else the connection's; whether the key
/// may reach them is the operation's check.
fn target(principal: &Principal, user_id: Option<String>) -> Result<String, Error> {
    match (user_id, &principal.user) {
        (Some(user), _) => Ok(user),
        (None, Some(bound)) => Ok(bound.to_string()),
        (None, None) => Err(ValidationError::new(
            "user_id",
            "is required on a connection bound to no user: pass `user_id`, or bind the connection with \
             `/mcp?user_id=<user>`, the `X-Engram-User` header, `ENGRAM_USER_ID` (stdio) or a key made \
             with `engram keys create --user <user>`",
        )
        .into()),
    }
}

fn to_value(body: impl serde::Serialize) -> Result<Value, Error> {
    serde_json::to_value(body).map_err(|err| Error::Internal(err.into()))
}

async fn remember(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: Remember = arguments::<need::Ingest, _>(principal, &raw)?;
    let user = target(principal, args.user_id)?;
    let turns = match (args.content, args.events) {
        (Some(content), None) => {
            vec![Turn { role: "user".into(), content, id: None, created_at: None, metadata: None }]
        }
        (None, Some(events)) => events,
        _ => return Err(ValidationError::new("content", "give either `content` (one user turn) or `events`").into()),
    };
    let events: Vec<Value> = turns
        .into_iter()
        .map(|turn| {
            json!({"user_id": user, "session_id": args.session_id, "role": turn.role, "content": turn.content,
                   "id": turn.id, "created_at": turn.created_at, "metadata": turn.metadata})
        })
        .collect();
    let body = serde_json::to_vec(&json!({ "events": events })).map_err(|err| Error::Internal(err.into()))?;
    let events = engram_core::ingest::parse_body(&body, &state.settings.ingest, state.clock.now())?;
    to_value(events::append(state, principal, events).await?)
}

async fn search_memory(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: SearchMemory = arguments::<need::Read, _>(principal, &raw)?;
    let request = SearchRequest {
        user_id: target(principal, args.user_id)?,
        query: args.query,
        limit: args.limit,
        min_score: args.min_score,
        categories: args.categories,
        // Over HTTP the default is facts and insights; an agent expects to find what it
        // was told a moment ago, before `extract_facts` has turned it into a fact.
        kinds: Some(args.kinds.unwrap_or_else(|| ["fact", "insight", "event"].map(String::from).to_vec())),
        as_of: args.as_of,
        since: args.since,
        until: args.until,
        embedding: None,
        explain: false,
    };
    to_value(lookups::search(state, principal, request).await?)
}

async fn get_context(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: GetContext = arguments::<need::Read, _>(principal, &raw)?;
    let params = Params::from_pairs([
        ("query", args.query),
        ("max_tokens", args.max_tokens.map(|n| n.to_string())),
        ("session_id", args.session_id),
    ]);
    to_value(lookups::context(state, principal, target(principal, args.user_id)?, &params).await?)
}

async fn list_memories(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: ListMemories = arguments::<need::Read, _>(principal, &raw)?;
    let params = Params::from_pairs([
        ("category", args.category),
        ("status", args.status),
        ("kind", args.kind),
        ("key", args.key),
        ("limit", args.limit.map(|n| n.to_string())),
        ("cursor", args.cursor),
    ]);
    to_value(memories::page(state, principal, target(principal, args.user_id)?, &params).await?)
}

async fn get_memory(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: GetMemory = arguments::<need::Read, _>(principal, &raw)?;
    to_value(memories::detail(state, principal, target(principal, args.user_id)?, &args.memory_id).await?)
}

async fn report_memory(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: ReportMemory = arguments::<need::Read, _>(principal, &raw)?;
    let request = FeedbackRequest {
        user_id: target(principal, args.user_id)?,
        memory_id: args.memory_id,
        kind: args.kind,
        note: args.note,
    };
    to_value(feedback::submit(state, principal, request).await?)
}

async fn forget_user(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: ForgetUser = arguments::<need::Admin, _>(principal, &raw)?;
    to_value(users::forget(state, principal, target(principal, args.user_id)?).await?)
}

async fn add_memory(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: AddMemory = arguments::<need::Ingest, _>(principal, &raw)?;
    let request = NewMemoryRequest {
        content: args.content,
        category: args.category,
        key: args.key,
        importance: args.importance,
        pinned: args.pinned,
        valid_from: None,
    };
    to_value(memories::add(state, principal, target(principal, args.user_id)?, request).await?)
}

async fn update_memory(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: UpdateMemory = arguments::<need::Ingest, _>(principal, &raw)?;
    let edit =
        MemoryEdit { content: args.content, category: args.category, importance: args.importance, pinned: args.pinned };
    to_value(memories::update(state, principal, target(principal, args.user_id)?, &args.memory_id, edit).await?)
}

async fn delete_memory(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: DeleteMemory = arguments::<need::Ingest, _>(principal, &raw)?;
    let params = Params::from_pairs([("sources", args.sources.map(|s| s.to_string()))]);
    let user = target(principal, args.user_id)?;
    to_value(memories::delete(state, principal, user, &args.memory_id, &params).await?)
}
