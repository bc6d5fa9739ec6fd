//! The tools, one registry entry each: its name, what it is for (written for a model),
//! its hints, its arguments (whose type gives the input schema, [`super::arguments`]),
//! the scope it needs, and the operation of [`engram_core::service`] it calls — the one
//! its HTTP route calls.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use rmcp::schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::arguments::{
    AddMemory, DeleteMemory, ForgetUser, GetContext, GetMemory, ListMemories, Remember, ReportMemory, SearchMemory,
    Turn, UpdateMemory,
};
use engram_base::auth::Principal;
use engram_base::domain::{ResultKind, UserId, ValidationError};
use engram_core::feedback::FeedbackRequest;
use engram_core::search::SearchRequest;
use engram_core::service::input::{Int, parse_value};
use engram_core::service::lookups::ContextQuery;
use engram_core::service::memories::{self, MemoryEdit, MemoryQuery, NewMemoryRequest};
use engram_core::service::scopes::{Need, check, need};
use engram_core::service::{AppState, Error, events, feedback, lookups, users};

type Answer<'a> = Pin<Box<dyn Future<Output = Result<Value, Error>> + Send + 'a>>;
/// How a tool runs: its arguments as JSON in, its answer as JSON out.
type Run = Box<dyn for<'a> Fn(&'a AppState, &'a Principal, Value) -> Answer<'a> + Send + Sync>;

/// One tool: what `tools/list` shows of it, and what `tools/call` runs.
pub struct Entry {
    tool: Tool,
    run: Run,
    /// What a model reads of the answer before its structure; `None`: the structure alone.
    readable: fn(&Value) -> Option<String>,
}

/// A tool that needs `N` of the key and calls `operation` with its arguments `A`.
fn entry<N, A, O, F>(name: &'static str, description: &'static str, hints: ToolAnnotations, operation: F) -> Entry
where
    N: Need,
    A: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + 'static,
    F: for<'a> Fn(&'a AppState, &'a Principal, A) -> Pin<Box<dyn Future<Output = Result<O, Error>> + Send + 'a>>
        + Send
        + Sync
        + 'static,
{
    let schema: Arc<JsonObject> = rmcp::handler::server::common::schema_for_type::<A>();
    Entry {
        tool: Tool::new(name, description, schema).annotate(hints),
        run: Box::new(move |state, principal, raw| {
            // The scope is checked before the arguments are read.
            let checked = check::<N>(principal).and_then(|()| Ok(parse_value::<A>(raw)?));
            let answer = checked.map(|args| operation(state, principal, args));
            Box::pin(async move {
                let body = answer?.await?;
                serde_json::to_value(body).map_err(|err| Error::Internal(err.into()))
            })
        }),
        readable: |_| None,
    }
}

impl Entry {
    fn readable(mut self, readable: fn(&Value) -> Option<String>) -> Self {
        self.readable = readable;
        self
    }
}

/// Hints for a tool that changes nothing.
fn reads() -> ToolAnnotations {
    ToolAnnotations::new().read_only(true).open_world(false)
}

/// Hints for a tool that writes: whether it destroys, and whether a repeat changes more.
fn writes(destructive: bool, idempotent: Option<bool>) -> ToolAnnotations {
    let hints = ToolAnnotations::new().read_only(false).destructive(destructive).open_world(false);
    match idempotent {
        Some(idempotent) => hints.idempotent(idempotent),
        None => hints,
    }
}

/// Every tool, in the order `tools/list` shows them.
static TOOLS: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    vec![
        entry::<need::Ingest, Remember, _, _>(
            "remember",
            "Store conversation turns in the user's long-term memory. Call it after each exchange with the \
             user's message and your answer. Turns are searchable at once; facts are extracted from them in the \
             background. Give each turn an `id` to make retries safe.",
            writes(false, Some(false)),
            |state, principal, args| Box::pin(remember(state, principal, args)),
        ),
        entry::<need::Read, SearchMemory, _, _>(
            "search_memory",
            "Search what is known about the user: facts, insights and the raw conversation turns (kinds \
             [\"fact\", \"insight\", \"event\"] by default), so what was just remembered is found at once. \
             Results come best first with a score; time phrases in the query (\"last week\") and since/until \
             narrow by time.",
            reads(),
            |state, principal, args| Box::pin(search_memory(state, principal, args)),
        )
        .readable(results),
        entry::<need::Read, GetContext, _, _>(
            "get_context",
            "Get a prompt-ready block of what matters about the user for the question at hand, within a token \
             budget: the current conversation, profile, relevant memories and recent sessions. Call it before \
             answering the user.",
            reads(),
            |state, principal, args: GetContext| {
                Box::pin(async move {
                    let user = target(principal, args.user_id)?;
                    let query = ContextQuery {
                        query: args.query,
                        max_tokens: args.max_tokens.map(Int),
                        session_id: args.session_id,
                    };
                    lookups::context(state, principal, &user, query).await
                })
            },
        )
        .readable(|answer| answer["text"].as_str().map(str::to_owned)),
        entry::<need::Read, ListMemories, _, _>(
            "list_memories",
            "List the user's memories, newest first, a page at a time; pass `next_cursor` back as `cursor`.",
            reads(),
            |state, principal, args: ListMemories| {
                Box::pin(async move {
                    let user = target(principal, args.user_id)?;
                    let query = MemoryQuery {
                        category: args.category,
                        status: args.status,
                        kind: args.kind,
                        key: args.key,
                        limit: args.limit.map(Int),
                        cursor: args.cursor,
                    };
                    memories::page(state, principal, &user, query).await
                })
            },
        ),
        entry::<need::Read, GetMemory, _, _>(
            "get_memory",
            "Get one memory with its history: every change, what replaced it, and the turns it came from.",
            reads(),
            |state, principal, args: GetMemory| {
                Box::pin(async move {
                    memories::detail(state, principal, &target(principal, args.user_id)?, args.memory_id).await
                })
            },
        ),
        entry::<need::Ingest, AddMemory, _, _>(
            "add_memory",
            "Remember one thing about the user in so many words, searchable at once — when the user asks you to \
             remember something (\"remember that I prefer dark mode\"). Give a `key` for something that has one \
             current value (an employer, a home city): a later memory with the same key replaces it.",
            writes(false, Some(false)),
            |state, principal, args: AddMemory| {
                Box::pin(async move {
                    let user = target(principal, args.user_id)?;
                    let request = NewMemoryRequest {
                        content: args.content,
                        category: args.category,
                        key: args.key,
                        importance: args.importance,
                        pinned: args.pinned,
                        valid_from: None,
                    };
                    memories::add(state, principal, &user, request).await
                })
            },
        ),
        entry::<need::Ingest, UpdateMemory, _, _>(
            "update_memory",
            "Correct one memory: its sentence, category, importance, or pin it so it is never evicted. The change \
             is recorded in the memory's history.",
            writes(false, Some(true)),
            |state, principal, args: UpdateMemory| {
                Box::pin(async move {
                    let user = target(principal, args.user_id)?;
                    let edit = MemoryEdit {
                        content: args.content,
                        category: args.category,
                        importance: args.importance,
                        pinned: args.pinned,
                    };
                    memories::update(state, principal, &user, args.memory_id, edit).await
                })
            },
        ),
        entry::<need::Ingest, DeleteMemory, _, _>(
            "delete_memory",
            "Delete one memory for good when the user asks you to forget it; with sources true also the \
             conversation turns it came from.",
            writes(true, Some(false)),
            |state, principal, args: DeleteMemory| {
                Box::pin(async move {
                    let user = target(principal, args.user_id)?;
                    memories::delete(state, principal, &user, args.memory_id, args.sources.unwrap_or(false)).await
                })
            },
        ),
        entry::<need::Read, ReportMemory, _, _>(
            "report_memory",
            "Tell engram a memory was wrong, outdated or helpful. Wrong and outdated count as corrections and \
             lower the memory's rank; put what is true now in `note`.",
            writes(false, None),
            |state, principal, args: ReportMemory| {
                Box::pin(async move {
                    let request = FeedbackRequest {
                        user_id: target(principal, args.user_id)?,
                        memory_id: args.memory_id,
                        kind: args.kind,
                        note: args.note,
                    };
                    feedback::submit(state, principal, request).await
                })
            },
        ),
        entry::<need::Admin, ForgetUser, _, _>(
            "forget_user",
            "Delete everything stored about the user, everywhere, for good (needs an admin key). Only on the \
             user's explicit request.",
            writes(true, Some(true)),
            |state, principal, args: ForgetUser| {
                Box::pin(async move { users::forget(state, principal, &target(principal, args.user_id)?).await })
            },
        ),
    ]
});

/// Every tool, as `tools/list` describes it.
pub fn list() -> Vec<Tool> {
    TOOLS.iter().map(|entry| entry.tool.clone()).collect()
}

/// One tool's description, schema and hints.
pub fn describe(name: &str) -> Option<Tool> {
    find(name).map(|entry| entry.tool.clone())
}

fn find(name: &str) -> Option<&'static Entry> {
    TOOLS.iter().find(|entry| entry.tool.name == name)
}

/// Runs tool `name` for `principal`: the answer, and what a model reads of it first.
/// `None` for a tool that does not exist.
pub async fn call(
    state: &AppState,
    principal: &Principal,
    name: &str,
    arguments: Value,
) -> Option<Result<(Value, Option<String>), Error>> {
    let entry = find(name)?;
    Some((entry.run)(state, principal, arguments).await.map(|answer| {
        let text = (entry.readable)(&answer);
        (answer, text)
    }))
}

/// The user a tool acts for: its `user_id`, else the connection's; whether the key
/// may reach them is the operation's check.
fn target(principal: &Principal, user_id: Option<UserId>) -> Result<UserId, Error> {
    match (user_id, &principal.user) {
        (Some(user), _) => Ok(user),
        (None, Some(bound)) => Ok(bound.clone()),
        (None, None) => Err(ValidationError::new(
            "user_id",
            "is required on a connection bound to no user: pass `user_id`, or bind the connection with \
             `/mcp?user_id=<user>`, the `X-Engram-User` header, `ENGRAM_USER_ID` (stdio) or a key made \
             with `engram keys create --user <user>`",
        )
        .into()),
    }
}

/// The results of a search, one per line.
fn results(answer: &Value) -> Option<String> {
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

async fn remember(
    state: &AppState,
    principal: &Principal,
    args: Remember,
) -> Result<engram_core::ingest::Ingested, Error> {
    let user = target(principal, args.user_id)?;
    let turns = match (args.content, args.events) {
        (Some(content), None) => {
            vec![Turn { role: "user".into(), content, id: None, created_at: None, metadata: None }]
        }
        (None, Some(events)) => events,
        _ => return Err(ValidationError::new("content", "give either `content` (one user turn) or `events`").into()),
    };
    let raw = turns
        .into_iter()
        .map(|turn| engram_base::domain::event::RawEvent {
            id: turn.id,
            user_id: Some(user.to_string()),
            session_id: args.session_id.clone(),
            role: Some(turn.role),
            content: Some(turn.content),
            created_at: turn.created_at,
            metadata: turn.metadata.map(Value::Object),
        })
        .collect();
    let events = engram_core::ingest::parse_batch(raw, &state.settings.ingest, state.clock.now())?;
    events::append(state, principal, events).await
}

async fn search_memory(
    state: &AppState,
    principal: &Principal,
    args: SearchMemory,
) -> Result<engram_core::search::SearchResponse, Error> {
    let request = SearchRequest {
        user_id: target(principal, args.user_id)?,
        query: args.query,
        limit: args.limit,
        min_score: args.min_score,
        categories: args.categories,
        // Over HTTP the default is facts and insights; an agent expects to find what it
        // was told a moment ago, before `extract_facts` has turned it into a fact.
        kinds: Some(args.kinds.unwrap_or_else(|| vec![ResultKind::Fact, ResultKind::Insight, ResultKind::Event])),
        as_of: args.as_of,
        since: args.since,
        until: args.until,
        embedding: None,
        explain: false,
    };
    lookups::search(state, principal, request).await
}
