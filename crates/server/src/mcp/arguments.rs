//! What each tool takes: its JSON schema is generated from these types, with the
//! descriptions written for a model.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde_json::Value;

use engram_base::domain::{Category, Cursor, Kind, MemoryId, ResultKind, SessionId, UserId};
use engram_core::feedback::Verdict;
use engram_core::memories::Status;
use engram_core::service::input::Key;

/// Conversation turns to remember.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Remember {
    /// The end user the conversation is with (your application's id for them); not needed on a
    /// connection bound to a user.
    #[schemars(with = "Option<String>")]
    pub user_id: Option<UserId>,
    /// The conversation these turns belong to; without it engram continues the user's open session.
    pub session_id: Option<String>,
    /// One thing the user said, as a single user turn; or give `events`.
    pub content: Option<String>,
    /// The turns, oldest first (at most `ingest.max_batch_events`); or give `content`.
    pub events: Option<Vec<Turn>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Who spoke: `user`, `assistant`, `tool` or `system`.
    pub role: String,
    /// What was said.
    pub content: String,
    /// Your own id for the turn; a turn sent again with the same id is stored once.
    pub id: Option<String>,
    /// When it was said (RFC 3339); now when absent.
    pub created_at: Option<String>,
    /// Anything else to keep with the turn.
    pub metadata: Option<serde_json::Map<String, Value>>,
}

/// What to look up.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchMemory {
    /// The user (not needed on a connection bound to one).
    #[schemars(with = "Option<String>")]
    pub user_id: Option<UserId>,
    /// The question or topic, in the user's words.
    pub query: String,
    /// What to search: `fact`, `insight`, `event` (raw conversation turns; these three by
    /// default, so a turn just remembered is found before any job has run), `relation`,
    /// `session_summary`, `period_summary`.
    #[schemars(with = "Option<Vec<String>>")]
    pub kinds: Option<Vec<ResultKind>>,
    /// At most this many results (default 10).
    pub limit: Option<i64>,
    /// Results scoring below this (0–1) are left out.
    pub min_score: Option<f64>,
    /// Only memories of these categories (e.g. `identity`, `preference`, `project`, `technical`).
    #[schemars(with = "Option<Vec<String>>")]
    pub categories: Option<Vec<Category>>,
    /// Only what happened at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Only what happened before this time (RFC 3339).
    pub until: Option<String>,
    /// What was known at this time (RFC 3339): memories later replaced still count.
    pub as_of: Option<String>,
}

/// The context block to put in a prompt.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetContext {
    /// The user (not needed on a connection bound to one).
    #[schemars(with = "Option<String>")]
    pub user_id: Option<UserId>,
    /// What the agent is about to answer; without it the block holds the profile and recent sessions.
    pub query: Option<String>,
    /// Token budget of the block (default 512).
    pub max_tokens: Option<i64>,
    /// The current conversation: its latest turns open the block.
    #[schemars(with = "Option<String>")]
    pub session_id: Option<SessionId>,
}

/// A page of memories.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListMemories {
    /// The user (not needed on a connection bound to one).
    #[schemars(with = "Option<String>")]
    pub user_id: Option<UserId>,
    /// Only this category.
    #[schemars(with = "Option<String>")]
    pub category: Option<Category>,
    /// `active` (default), `superseded`, `merged`, `evicted` or `deleted`.
    #[schemars(with = "Option<String>")]
    pub status: Option<Status>,
    /// `fact` or `insight`.
    #[schemars(with = "Option<String>")]
    pub kind: Option<Kind>,
    /// Only memories of this key.
    #[schemars(with = "Option<String>")]
    pub key: Option<Key>,
    /// Page size, 1–200 (default 50).
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    #[schemars(with = "Option<String>")]
    pub cursor: Option<Cursor>,
}

/// One memory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetMemory {
    /// The user (not needed on a connection bound to one).
    #[schemars(with = "Option<String>")]
    pub user_id: Option<UserId>,
    /// The memory's `id`, as search_memory or list_memories return it.
    #[schemars(with = "String")]
    pub memory_id: MemoryId,
}

/// A verdict on a memory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportMemory {
    /// The user (not needed on a connection bound to one).
    #[schemars(with = "Option<String>")]
    pub user_id: Option<UserId>,
    #[schemars(with = "String")]
    pub memory_id: MemoryId,
    /// `wrong` (it was never true), `outdated` (no longer true) or `helpful`.
    #[schemars(with = "String")]
    pub kind: Verdict,
    /// What is true instead, or why.
    pub note: Option<String>,
}

/// A memory to add in so many words.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMemory {
    /// The user (not needed on a connection bound to one).
    #[schemars(with = "Option<String>")]
    pub user_id: Option<UserId>,
    /// What to remember, as one sentence about the user ("Prefers dark mode in every app").
    pub content: String,
    /// `identity`, `personal`, `preference`, `project`, `technical`, `decision`, `event`, `lesson`,
    /// `statement` (default), `relationship`, `health`, `finance` or `other`.
    #[schemars(with = "Option<String>")]
    pub category: Option<Category>,
    /// A stable name for what it states (`employer`, `home_city`): a later memory with the same key
    /// replaces this one.
    #[schemars(with = "Option<String>")]
    pub key: Option<Key>,
    /// 0–1 (default 0.7).
    pub importance: Option<f32>,
    /// Pinned memories are never evicted.
    pub pinned: Option<bool>,
}

/// A change to one memory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMemory {
    /// The user (not needed on a connection bound to one).
    #[schemars(with = "Option<String>")]
    pub user_id: Option<UserId>,
    /// The memory's `id`.
    #[schemars(with = "String")]
    pub memory_id: MemoryId,
    /// The corrected sentence.
    pub content: Option<String>,
    #[schemars(with = "Option<String>")]
    pub category: Option<Category>,
    pub importance: Option<f32>,
    pub pinned: Option<bool>,
}

/// A memory to delete for good.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteMemory {
    /// The user (not needed on a connection bound to one).
    #[schemars(with = "Option<String>")]
    pub user_id: Option<UserId>,
    /// The memory's `id`.
    #[schemars(with = "String")]
    pub memory_id: MemoryId,
    /// Also blank out the conversation turns it came from (default false).
    pub sources: Option<bool>,
}

/// The user to forget.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetUser {
    /// The user (not needed on a connection bound to one).
    #[schemars(with = "Option<String>")]
    pub user_id: Option<UserId>,
}
