//! The tools: what each takes (its JSON schema is generated from the argument type,
//! with descriptions written for a model), the scope it needs, and the operation of
//! [`crate::service`] it calls, the one its HTTP route calls.

use rmcp::model::{Tool, ToolAnnotations};
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::feedback::FeedbackRequest;
use crate::search::SearchRequest;
use crate::service::input::{Params, parse_json};
use crate::service::memories::{self, MemoryEdit, NewMemoryRequest};
use crate::service::scopes::{Need, check, need};
use crate::service::{AppState, Error, events, feedback, lookups, users};

/// Conversation turns to remember.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Remember {
    /// The end user the conversation is with (your application's id for them).
    user_id: String,
    /// The conversation these turns belong to; without it engram continues the user's open session.
    session_id: Option<String>,
    /// The turns, oldest first (at most `ingest.max_batch_events`).
    events: Vec<Turn>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Turn {
    /// Who spoke: `user`, `assistant`, `tool` or `system`.
    role: String,
    /// What was said.
    content: String,
    /// Your own id for the turn; a turn sent again with the same id is stored once.
    id: Option<String>,
    /// When it was said (RFC 3339); now when absent.
    created_at: Option<String>,
    /// Anything else to keep with the turn.
    metadata: Option<serde_json::Map<String, Value>>,
}

/// What to look up.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchMemory {
    user_id: String,
    /// The question or topic, in the user's words.
    query: String,
    /// What to search: `fact`, `insight` (the default pair), `event` (raw conversation turns),
    /// `session_summary`, `period_summary`.
    kinds: Option<Vec<String>>,
    /// At most this many results (default 10).
    limit: Option<i64>,
    /// Results scoring below this (0–1) are left out.
    min_score: Option<f64>,
    /// Only memories of these categories (e.g. `identity`, `preference`, `project`, `technical`).
    categories: Option<Vec<String>>,
    /// Only what happened at or after this time (RFC 3339).
    since: Option<String>,
    /// Only what happened before this time (RFC 3339).
    until: Option<String>,
    /// What was known at this time (RFC 3339): memories later replaced still count.
    as_of: Option<String>,
}

/// The context block to put in a prompt.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetContext {
    user_id: String,
    /// What the agent is about to answer; without it the block holds the profile and recent sessions.
    query: Option<String>,
    /// Token budget of the block (default 512).
    max_tokens: Option<i64>,
    /// The current conversation: its latest turns open the block.
    session_id: Option<String>,
}

/// A page of memories.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListMemories {
    user_id: String,
    /// Only this category.
    category: Option<String>,
    /// `active` (default), `superseded`, `merged`, `evicted` or `deleted`.
    status: Option<String>,
    /// `fact` or `insight`.
    kind: Option<String>,
    /// Page size, 1–200 (default 50).
    limit: Option<i64>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// One memory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetMemory {
    user_id: String,
    /// The memory's `id`, as search_memory or list_memories return it.
    memory_id: String,
}

/// A verdict on a memory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReportMemory {
    user_id: String,
    memory_id: String,
    /// `wrong` (it was never true), `outdated` (no longer true) or `helpful`.
    kind: String,
    /// What is true instead, or why.
    note: Option<String>,
}

/// A memory to add in so many words.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddMemory {
    user_id: String,
    /// What to remember, as one sentence about the user ("Prefers dark mode in every app").
    content: String,
    /// `identity`, `personal`, `preference`, `project`, `technical`, `decision`, `event`, `lesson`,
    /// `statement` (default), `relationship`, `health`, `finance` or `other`.
    category: Option<String>,
    /// A stable name for what it states (`employer`, `home_city`): a later memory with the same key
    /// replaces this one.
    key: Option<String>,
    /// 0–1 (default 0.7).
    importance: Option<f32>,
    /// Pinned memories are never evicted.
    pinned: Option<bool>,
}

/// A change to one memory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdateMemory {
    user_id: String,
    /// The memory's `id`.
    memory_id: String,
    /// The corrected sentence.
    content: Option<String>,
    category: Option<String>,
    importance: Option<f32>,
    pinned: Option<bool>,
}

/// A memory to delete for good.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeleteMemory {
    user_id: String,
    /// The memory's `id`.
    memory_id: String,
    /// Also blank out the conversation turns it came from (default false).
    sources: Option<bool>,
}

/// The user to forget.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ForgetUser {
    user_id: String,
}

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
            "Search what is known about the user: facts and insights by default, raw conversation turns with \
             kinds [\"event\"]. Results come best first with a score; time phrases in the query (\"last week\") \
             and since/until narrow by time.",
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

fn to_value(body: impl serde::Serialize) -> Result<Value, Error> {
    serde_json::to_value(body).map_err(|err| Error::Internal(err.into()))
}

async fn remember(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: Remember = arguments::<need::Ingest, _>(principal, &raw)?;
    let events: Vec<Value> = args
        .events
        .into_iter()
        .map(|turn| {
            json!({"user_id": args.user_id, "session_id": args.session_id, "role": turn.role, "content": turn.content,
                   "id": turn.id, "created_at": turn.created_at, "metadata": turn.metadata})
        })
        .collect();
    let body = serde_json::to_vec(&json!({ "events": events })).map_err(|err| Error::Internal(err.into()))?;
    let events = crate::ingest::parse_body(&body, &state.settings.ingest, state.clock.now())?;
    to_value(events::append(state, principal, events).await?)
}

async fn search_memory(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: SearchMemory = arguments::<need::Read, _>(principal, &raw)?;
    let request = SearchRequest {
        user_id: args.user_id,
        query: args.query,
        limit: args.limit,
        min_score: args.min_score,
        categories: args.categories,
        kinds: args.kinds,
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
    to_value(lookups::context(state, principal, args.user_id, &params).await?)
}

async fn list_memories(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: ListMemories = arguments::<need::Read, _>(principal, &raw)?;
    let params = Params::from_pairs([
        ("category", args.category),
        ("status", args.status),
        ("kind", args.kind),
        ("limit", args.limit.map(|n| n.to_string())),
        ("cursor", args.cursor),
    ]);
    to_value(memories::page(state, principal, args.user_id, &params).await?)
}

async fn get_memory(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: GetMemory = arguments::<need::Read, _>(principal, &raw)?;
    to_value(memories::detail(state, principal, args.user_id, &args.memory_id).await?)
}

async fn report_memory(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: ReportMemory = arguments::<need::Read, _>(principal, &raw)?;
    let request =
        FeedbackRequest { user_id: args.user_id, memory_id: args.memory_id, kind: args.kind, note: args.note };
    to_value(feedback::submit(state, principal, request).await?)
}

async fn forget_user(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: ForgetUser = arguments::<need::Admin, _>(principal, &raw)?;
    to_value(users::forget(state, principal, args.user_id).await?)
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
    to_value(memories::add(state, principal, args.user_id, request).await?)
}

async fn update_memory(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: UpdateMemory = arguments::<need::Ingest, _>(principal, &raw)?;
    let edit =
        MemoryEdit { content: args.content, category: args.category, importance: args.importance, pinned: args.pinned };
    to_value(memories::update(state, principal, args.user_id, &args.memory_id, edit).await?)
}

async fn delete_memory(state: &AppState, principal: &Principal, raw: Value) -> Result<Value, Error> {
    let args: DeleteMemory = arguments::<need::Ingest, _>(principal, &raw)?;
    let params = Params::from_pairs([("sources", args.sources.map(|s| s.to_string()))]);
    to_value(memories::delete(state, principal, args.user_id, &args.memory_id, &params).await?)
}
