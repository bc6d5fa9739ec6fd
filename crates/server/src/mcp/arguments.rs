//! What each tool takes: its JSON schema is generated from these types, with the
//! descriptions written for a model.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde_json::Value;

/// Conversation turns to remember.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Remember {
    /// The end user the conversation is with (your application's id for them); not needed on a
    /// connection bound to a user.
    pub user_id: Option<String>,
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
    pub user_id: Option<String>,
    /// The question or topic, in the user's words.
    pub query: String,
    /// What to search: `fact`, `insight`, `event` (raw conversation turns; these three by
    /// default, so a turn just remembered is found before any job has run), `relation`,
    /// `session_summary`, `period_summary`.
    pub kinds: Option<Vec<String>>,
    /// At most this many results (default 10).
    pub limit: Option<i64>,
    /// Results scoring below this (0–1) are left out.
    pub min_score: Option<f64>,
    /// Only memories of these categories (e.g. `identity`, `preference`, `project`, `technical`).
    pub categories: Option<Vec<String>>,
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
    pub user_id: Option<String>,
    /// What the agent is about to answer; without it the block holds the profile and recent sessions.
    pub query: Option<String>,
    /// Token budget of the block (default 512).
    pub max_tokens: Option<i64>,
    /// The current conversation: its latest turns open the block.
    pub session_id: Option<String>,
}

/// A page of memories.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListMemories {
    /// The user (not needed on a connection bound to one).
    pub user_id: Option<String>,
    /// Only this category.
    pub category: Option<String>,
    /// `active` (default), `superseded`, `merged`, `evicted` or `deleted`.
    pub status: Option<String>,
    /// `fact` or `insight`.
    pub kind: Option<String>,
    /// Only memories of this key.
    pub key: Option<String>,
    /// Page size, 1–200 (default 50).
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// One memory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetMemory {
    /// The user (not needed on a connection bound to one).
    pub user_id: Option<String>,
    /// The memory's `id`, as search_memory or list_memories return it.
    pub memory_id: String,
}

/// A verdict on a memory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportMemory {
    /// The user (not needed on a connection bound to one).
    pub user_id: Option<String>,
    pub memory_id: String,
    /// `wrong` (it was never true), `outdated` (no longer true) or `helpful`.
    pub kind: String,
    /// What is true instead, or why.
    pub note: Option<String>,
}

/// A memory to add in so many words.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMemory {
    /// The user (not needed on a connection bound to one).
    pub user_id: Option<String>,
    /// What to remember, as one sentence about the user ("Prefers dark mode in every app").
    pub content: String,
    /// `identity`, `personal`, `preference`, `project`, `technical`, `decision`, `event`, `lesson`,
    /// `statement` (default), `relationship`, `health`, `finance` or `other`.
    pub category: Option<String>,
    /// A stable name for what it states (`employer`, `home_city`): a later memory with the same key
    /// replaces this one.
    pub key: Option<String>,
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
    pub user_id: Option<String>,
    /// The memory's `id`.
    pub memory_id: String,
    /// The corrected sentence.
    pub content: Option<String>,
    pub category: Option<String>,
    pub importance: Option<f32>,
    pub pinned: Option<bool>,
}

/// A memory to delete for good.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteMemory {
    /// The user (not needed on a connection bound to one).
    pub user_id: Option<String>,
    /// The memory's `id`.
    pub memory_id: String,
    /// Also blank out the conversation turns it came from (default false).
    pub sources: Option<bool>,
}

/// The user to forget.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetUser {
    /// The user (not needed on a connection bound to one).
    pub user_id: Option<String>,
}
