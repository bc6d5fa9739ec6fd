//! Memories: the semantic facts and insights engram keeps per user, their history,
//! and the queries that list them. This module is the only writer of `memories` and
//! `memory_history`: jobs, feedback and operators create and change memories through
//! [`insert`], [`restore`] and the functions of [`lifecycle`], and every change writes
//! its history row.

pub mod access;
pub mod decay;
pub mod edit;
pub mod lifecycle;
mod read;

pub use lifecycle::Change;
pub use read::{ListFilter, get, history, list};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;
use sqlx::PgConnection;
use uuid::Uuid;

pub use engram_base::domain::Kind;
use engram_base::domain::{Category, Owner, TenantId, UserId};
use engram_base::models::Embedding;

/// How a key reads in a fact's canonical statement: the words a question about it uses,
/// in English (in its vector and its keyword match) and in Chinese (in its keyword match
/// only: the multilingual model already relates a Chinese question to the English
/// words, while keywords cannot cross languages). Keys not listed read as themselves
/// (`team_size` as "team size").
const KEY_LABELS: &[(&str, &str, &str)] = &[
    ("name", "name, what I am called", "名字, 姓名, 叫什么"),
    ("role", "job, role, what I work as", "职业, 职位, 做什么工作"),
    ("location", "where I live, home city", "住在哪里, 所在城市"),
    ("employer", "employer, where I work", "在哪里工作, 公司, 单位"),
    ("team_size", "team size, how many people on the team", "团队规模, 团队有多少人"),
    ("project", "what I am building, the project", "在做的项目"),
    ("database", "database", "数据库"),
    ("framework", "web framework", "框架"),
    ("language", "programming language", "编程语言"),
    ("cloud", "cloud, where we deploy and host", "云, 部署在哪里"),
    ("ci", "CI/CD, the pipeline that builds, tests and deploys", "持续集成, 流水线"),
    ("bundler", "frontend bundler, the tool that bundles the frontend", "前端打包工具"),
    ("orchestration", "container orchestration", "容器编排"),
];

/// What a memory's vector is made from: the user's words and, for a keyed fact, its
/// canonical statement (`database: postgresql`), so that a question about the key
/// finds a fact whose sentence never names it. [`match_text_sql`] says the same in SQL.
pub fn match_text(content: &str, key: Option<&str>, value: Option<&str>) -> String {
    match (key, value) {
        (Some(key), Some(value)) => {
            let label = KEY_LABELS.iter().find(|(k, ..)| *k == key).map(|(_, label, _)| (*label).to_owned());
            format!("{content}\n{}: {value}", label.unwrap_or_else(|| key.replace('_', " ")))
        }
        _ => content.to_owned(),
    }
}

/// What a memory's keyword share is counted in: [`match_text`] and the key's Chinese words.
pub fn keyword_text(content: &str, key: Option<&str>, value: Option<&str>) -> String {
    let text = match_text(content, key, value);
    match KEY_LABELS.iter().find(|(k, ..)| Some(*k) == key).filter(|_| value.is_some()) {
        Some((.., chinese)) => format!("{text} / {chinese}"),
        None => text,
    }
}

/// [`match_text`] of a `memories` row, in SQL.
pub fn match_text_sql() -> &'static str {
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let labels: String = KEY_LABELS.iter().map(|(key, label, _)| format!(" WHEN '{key}' THEN '{label}'")).collect();
        format!("content || coalesce(E'\\n' || CASE key{labels} ELSE replace(key, '_', ' ') END || ': ' || value, '')")
    });
    &SQL
}

/// Memories' vectors, for `reembed`.
pub const VECTORS: engram_base::stored_vectors::VectorColumn = engram_base::stored_vectors::VectorColumn {
    name: "memories",
    table: "memories",
    key: "id",
    key_type: "uuid",
    text: match_text_sql,
    storage: "vector",
    filter: "status <> 'deleted'",
};

/// Where a memory is in its life: only `active` ones are searched (and `superseded`
/// ones by `as_of`); the others wait for `purge`, restorable meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, sqlx::Type, utoipa::ToSchema)]
#[sqlx(type_name = "text", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    Superseded,
    Merged,
    Evicted,
    Deleted,
}

/// What a `memory_history` row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, sqlx::Type, utoipa::ToSchema)]
#[sqlx(type_name = "text", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Created,
    Updated,
    Merged,
    Superseded,
    Evicted,
    Restored,
    Deleted,
    Insight,
}

impl Status {
    pub const ALL: [Self; 5] = [Self::Active, Self::Superseded, Self::Merged, Self::Evicted, Self::Deleted];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Superseded => "superseded",
            Self::Merged => "merged",
            Self::Evicted => "evicted",
            Self::Deleted => "deleted",
        }
    }
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct Memory {
    pub id: Uuid,
    pub user_id: String,
    pub kind: Kind,
    #[sqlx(try_from = "String")]
    pub category: Category,
    pub key: Option<String>,
    /// A keyed fact's normalised value (`postgresql` for the key `database`).
    pub value: Option<String>,
    pub content: String,
    pub importance: f32,
    pub confidence: f32,
    pub status: Status,
    pub pinned: bool,
    pub source_event_ids: Vec<Uuid>,
    pub source_quote: Option<String>,
    pub derived_from: Vec<Uuid>,
    pub access_count: i32,
    pub last_accessed_at: Option<DateTime<Utc>>,
    pub valid_from: DateTime<Utc>,
    pub valid_to: Option<DateTime<Utc>>,
    pub superseded_by: Option<Uuid>,
    pub embedding_model: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// What came with it from elsewhere: an import from Mem0 keeps `mem0_id` here.
    #[schema(value_type = Object)]
    pub metadata: serde_json::Value,
    /// How much it still matters now, 0–1: `engram_decay`, what `evict` ranks by and
    /// search weighs with. Filled in by the API ([`Memory::with_decay`]); 0 elsewhere.
    #[sqlx(skip)]
    pub decay: f64,
}

impl Memory {
    /// The memory with its decay score as of `now`.
    pub fn with_decay(mut self, params: &decay::DecayParams, now: DateTime<Utc>) -> Self {
        let touched = self.last_accessed_at.unwrap_or(self.created_at);
        self.decay = params.weight(self.importance.into(), touched, self.access_count, self.category.as_str(), now);
        self
    }
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct HistoryEntry {
    pub id: Uuid,
    pub action: Action,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
    pub reason: Option<String>,
    pub job_run_id: Option<Uuid>,
    pub actor: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A memory to create.
#[derive(Debug, Clone)]
pub struct NewMemory {
    pub user_id: UserId,
    pub kind: Kind,
    pub category: Category,
    pub key: Option<String>,
    pub value: Option<String>,
    pub content: String,
    pub importance: f32,
    pub source_event_ids: Vec<Uuid>,
    pub source_quote: Option<String>,
    pub derived_from: Vec<Uuid>,
    pub valid_from: DateTime<Utc>,
    pub pinned: bool,
}

/// Where a memory came from, when it did not start here: its id, times and metadata.
#[derive(Debug, Clone)]
pub struct Origin {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub metadata: serde_json::Value,
}

/// Inserts a memory with its embedding and a `created` history row.
pub async fn insert(
    conn: &mut PgConnection,
    tenant: &TenantId,
    memory: &NewMemory,
    embedding: &Embedding,
    embedding_model: &str,
    change: &Change,
) -> sqlx::Result<Uuid> {
    let origin = Origin {
        id: Uuid::now_v7(),
        created_at: memory.valid_from,
        updated_at: memory.valid_from,
        metadata: json!({}),
    };
    insert_from(conn, tenant, memory, &origin, (embedding, embedding_model), change).await
}

/// Inserts a memory made elsewhere (an import) with the id, times and metadata it had.
pub async fn insert_from(
    conn: &mut PgConnection,
    tenant: &TenantId,
    memory: &NewMemory,
    origin: &Origin,
    (embedding, embedding_model): (&Embedding, &str),
    change: &Change,
) -> sqlx::Result<Uuid> {
    let id = origin.id;
    sqlx::query!(
        "INSERT INTO memories (tenant_id, id, user_id, kind, category, key, content, embedding, embedding_model,
                               embedding_dims, importance, source_event_ids, source_quote, derived_from,
                               valid_from, pinned, created_at, updated_at, value, metadata)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
        tenant.as_str(),
        id,
        memory.user_id.as_str(),
        memory.kind as _,
        memory.category.as_str(),
        memory.key.as_deref(),
        &memory.content,
        embedding.to_pgvector() as _,
        embedding_model,
        embedding.dims() as i32,
        memory.importance,
        &memory.source_event_ids,
        memory.source_quote.as_deref(),
        &memory.derived_from,
        memory.valid_from,
        memory.pinned,
        origin.created_at,
        origin.updated_at,
        memory.value.as_deref(),
        &origin.metadata
    )
    .execute(&mut *conn)
    .await?;
    let after = json!({"kind": memory.kind, "category": memory.category, "key": memory.key, "value": memory.value,
                       "content": memory.content, "importance": memory.importance});
    lifecycle::record(conn, Owner::new(tenant, &memory.user_id), id, Action::Created, None, Some(after), change)
        .await?;
    Ok(id)
}

/// Why a memory could not be restored.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("no memory {0} for this user")]
    NotFound(Uuid),
    #[error("memory {id} is {}; only evicted or merged memories can be restored", status.as_str())]
    NotRestorable { id: Uuid, status: Status },
    #[error("database error")]
    Database(#[from] sqlx::Error),
}

/// Brings an evicted or merged memory back into search, with a history row. Restoring
/// counts as an access, so the next `evict` run does not take it straight back.
pub async fn restore(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    id: Uuid,
    actor: &str,
) -> Result<(), RestoreError> {
    let status: Option<Status> =
        sqlx::query_scalar!(r#"SELECT status AS "status: Status" FROM memories WHERE tenant_id = $1 AND user_id = $2 AND id = $3 FOR UPDATE"#, tenant.as_str(), user.as_str(), id)
            .fetch_optional(&mut *conn)
            .await?;
    let status = status.ok_or(RestoreError::NotFound(id))?;
    if !matches!(status, Status::Evicted | Status::Merged) {
        return Err(RestoreError::NotRestorable { id, status });
    }
    sqlx::query!(
        "WITH restored AS (
            UPDATE memories SET status = 'active', superseded_by = NULL, updated_at = now()
             WHERE tenant_id = $1 AND id = $2 RETURNING tenant_id, id, user_id
         )
         INSERT INTO memory_access (tenant_id, memory_id, user_id, access_count, last_accessed_at)
         SELECT tenant_id, id, user_id, 1, now() FROM restored
         ON CONFLICT (tenant_id, memory_id) DO UPDATE SET last_accessed_at = now()",
        tenant.as_str(),
        id
    )
    .execute(&mut *conn)
    .await?;
    let (before, after) = (json!({"status": status}), json!({"status": Status::Active}));
    let change = Change::by(actor, None, "restored by an operator");
    lifecycle::record(conn, Owner::new(tenant, user), id, Action::Restored, Some(before), Some(after), &change).await?;
    Ok(())
}
