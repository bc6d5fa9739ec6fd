//! A person's own changes to one memory: an edit of its words, category, importance or
//! pin, and a deletion for good. Both write their history row in the caller's
//! transaction; a deletion leaves only that something was deleted, when and by whom.

use serde_json::{Map, Value, json};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{Action, Change, lifecycle};
use engram_base::domain::{Category, Owner, TenantId, UserId};
use engram_base::models::Embedding;

/// The fields an edit may change; `None` leaves one as it is.
#[derive(Debug, Default, Clone)]
pub struct Edit {
    pub content: Option<String>,
    pub category: Option<Category>,
    pub importance: Option<f32>,
    pub pinned: Option<bool>,
}

/// Applies `edit` to a memory that is not deleted; a new content comes with its vector
/// and clears the keyed value (the person's words are now the memory). False when there
/// is no such memory. Only the fields that change are recorded, before and after.
pub async fn update(
    conn: &mut PgConnection,
    owner: Owner<'_>,
    id: Uuid,
    edit: &Edit,
    vector: Option<(&Embedding, &str)>,
    change: &Change,
) -> sqlx::Result<bool> {
    let Owner { tenant, user } = owner;
    let current: Option<(String, String, f32, bool)> = sqlx::query!(
        "SELECT content, category, importance, pinned FROM memories
          WHERE tenant_id = $1 AND user_id = $2 AND id = $3 AND status <> 'deleted' FOR UPDATE",
        tenant.as_str(),
        user.as_str(),
        id
    )
    .map(|r| (r.content, r.category, r.importance, r.pinned))
    .fetch_optional(&mut *conn)
    .await?;
    let Some((content, category, importance, pinned)) = current else { return Ok(false) };
    let (mut before, mut after) = (Map::new(), Map::new());
    let mut note = |field: &str, old: Value, new: Value| {
        if old != new {
            before.insert(field.to_owned(), old);
            after.insert(field.to_owned(), new);
        }
    };
    if let Some(new) = &edit.content {
        note("content", json!(content), json!(new));
    }
    if let Some(new) = &edit.category {
        note("category", json!(category), json!(new));
    }
    if let Some(new) = edit.importance {
        note("importance", json!(importance), json!(new));
    }
    if let Some(new) = edit.pinned {
        note("pinned", json!(pinned), json!(new));
    }
    if after.is_empty() {
        return Ok(true);
    }
    let new_content = after.contains_key("content").then_some(edit.content.as_deref()).flatten();
    sqlx::query!(
        "UPDATE memories SET content = coalesce($4, content), category = coalesce($5, category),
                importance = coalesce($6, importance), pinned = coalesce($7, pinned),
                value = CASE WHEN $4 IS NULL THEN value END,
                embedding = coalesce($8, embedding), embedding_model = coalesce($9, embedding_model),
                embedding_dims = coalesce($10, embedding_dims), updated_at = now()
          WHERE tenant_id = $1 AND user_id = $2 AND id = $3",
        tenant.as_str(),
        user.as_str(),
        id,
        new_content,
        edit.category.map(Category::as_str),
        edit.importance,
        edit.pinned,
        vector.map(|(v, _)| v.to_pgvector()) as _,
        vector.map(|(_, model)| model),
        vector.map(|(v, _)| v.dims() as i32)
    )
    .execute(&mut *conn)
    .await?;
    let (before, after) = (Value::Object(before), Value::Object(after));
    lifecycle::record(conn, Owner::new(tenant, user), id, Action::Updated, Some(before), Some(after), change).await?;
    Ok(true)
}

/// What deleting memories removed.
#[derive(Debug, Default, Clone)]
pub struct Removed {
    /// The memories deleted: the one asked for and those merged into it.
    pub ids: Vec<Uuid>,
    /// Their texts, for finding what else states them; never stored or logged.
    pub contents: Vec<String>,
    /// The raw turns they came from.
    pub source_event_ids: Vec<Uuid>,
    pub memory_access: u64,
    pub history_redacted: u64,
}

/// Deletes memories for good, with the duplicates merged into them: the rows and their
/// vectors, their access statistics, and the content of their history rows (action,
/// time and actor stay), and of other memories' history rows that quote them. Each gets
/// a `deleted` history row without content. Nothing is returned for ids that are not
/// the user's.
pub async fn delete(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    ids: &[Uuid],
    change: &Change,
) -> sqlx::Result<Removed> {
    let rows: Vec<(Uuid, String, Vec<Uuid>)> = sqlx::query!(
        r#"WITH RECURSIVE doomed AS (
            SELECT id FROM memories WHERE tenant_id = $1 AND user_id = $2 AND id = ANY($3)
            UNION
            SELECT m.id FROM memories m JOIN doomed d ON m.superseded_by = d.id
             WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.status = 'merged'
         )
         DELETE FROM memories m USING doomed d WHERE m.tenant_id = $1 AND m.id = d.id
         RETURNING m.id AS "id!", m.content AS "content!", m.source_event_ids AS "source_event_ids!""#,
        tenant.as_str(),
        user.as_str(),
        ids
    )
    .map(|r| (r.id, r.content, r.source_event_ids))
    .fetch_all(&mut *conn)
    .await?;
    let mut removed = Removed::default();
    for (id, content, sources) in rows {
        removed.ids.push(id);
        removed.contents.push(content);
        removed.source_event_ids.extend(sources);
    }
    if removed.ids.is_empty() {
        return Ok(removed);
    }
    removed.source_event_ids.sort();
    removed.source_event_ids.dedup();
    removed.memory_access = sqlx::query!(
        "DELETE FROM memory_access WHERE tenant_id = $1 AND memory_id = ANY($2)",
        tenant.as_str(),
        &removed.ids
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    // Their own rows, and rows of other memories that absorbed one of them (a merge
    // records the text it kept).
    removed.history_redacted = sqlx::query!(
        "UPDATE memory_history SET before = NULL, after = NULL, reason = NULL
          WHERE tenant_id = $1 AND user_id = $2
            AND (memory_id = ANY($3) OR (after ->> 'absorbed')::uuid = ANY($3))",
        tenant.as_str(),
        user.as_str(),
        &removed.ids
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    for id in &removed.ids {
        lifecycle::record(conn, Owner::new(tenant, user), *id, Action::Deleted, None, None, change).await?;
    }
    Ok(removed)
}

/// The user's active memory saying `content` again: the same words (case, spaces and
/// punctuation aside), or the most similar one if at least `min` similar. With a `key`
/// only the same words under that key count: a keyed memory is a slot whose values
/// differ by a word ("Lives in Austin", "Lives in Denver"), and under another key the
/// same words fill another slot.
pub async fn duplicate_of(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    (content, key): (&str, Option<&str>),
    embedding: &Embedding,
    min: f64,
) -> sqlx::Result<Option<Uuid>> {
    let same: Option<Uuid> = sqlx::query_scalar!(
        "SELECT id FROM memories WHERE tenant_id = $1 AND user_id = $2 AND status = 'active'
            AND ($4::text IS NULL OR key = $4)
            AND lower(regexp_replace(content, $5, '', 'g')) = lower(regexp_replace($3, $5, '', 'g'))
          LIMIT 1",
        tenant.as_str(),
        user.as_str(),
        content,
        key,
        engram_language::text::NOT_WORDS_POSIX
    )
    .fetch_optional(&mut *conn)
    .await?;
    if same.is_some() || key.is_some() {
        return Ok(same);
    }
    let dims = embedding.dims();
    let sql = format!(
        "SELECT id, 1 - (embedding::vector({dims}) <=> $3) FROM memories
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND embedding_dims = {dims}
          ORDER BY embedding::vector({dims}) <=> $3 LIMIT 1"
    );
    let found: Option<(Uuid, f64)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.as_str())
        .bind(user.as_str())
        .bind(embedding.to_pgvector())
        .fetch_optional(conn)
        .await?;
    Ok(found.filter(|(_, similarity)| *similarity >= min).map(|(id, _)| id))
}

/// The user's active memories with `key`.
pub async fn active_with_key(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    key: &str,
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT id FROM memories WHERE tenant_id = $1 AND user_id = $2 AND key = $3 AND status = 'active'",
        tenant.as_str(),
        user.as_str(),
        key
    )
    .fetch_all(conn)
    .await
}

/// The person said it again in so many words: the memory is fresh again.
pub async fn restate(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    id: Uuid,
    change: &Change,
) -> sqlx::Result<()> {
    sqlx::query!("UPDATE memories SET updated_at = now() WHERE tenant_id = $1 AND id = $2", tenant.as_str(), id)
        .execute(&mut *conn)
        .await?;
    lifecycle::record(
        conn,
        Owner::new(tenant, user),
        id,
        Action::Updated,
        None,
        Some(json!({"restated": true})),
        change,
    )
    .await
}
