//! Over from Mem0: the JSON `Memory.get_all(user_id=…)` returns (`{"results": […]}`, or
//! the list alone). Each entry becomes a memory of the user — its words redacted, its
//! times kept, Mem0's id, hash, categories and metadata kept in the memory's
//! `metadata` — unless the user already has one that says the same (the test `POST
//! /v1/users/{user_id}/memories` applies), and is searchable as soon as the import
//! returns. Its id is derived from Mem0's, so a second import finds it and adds nothing.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::{Map, Value, json};

use super::{ImportError, Imported, Importer, mapped_id, refused, target_user};
use crate::memories::{self, Change, Kind, NewMemory, Origin, edit};
use engram_base::domain::{Category, TenantId, UserId, ValidationError};

/// How alike two memories' vectors must be to say the same (as for an added memory).
const DUPLICATE_SIMILARITY: f64 = 0.92;

/// Mem0's default categories and ours; any other is `statement`, and the memory keeps
/// Mem0's names in `metadata.mem0_categories`.
pub const CATEGORIES: [(&str, Category); 15] = [
    ("personal_details", Category::Personal),
    ("family", Category::Relationship),
    ("professional_details", Category::Identity),
    ("sports", Category::Preference),
    ("travel", Category::Event),
    ("food", Category::Preference),
    ("music", Category::Preference),
    ("health", Category::Health),
    ("technology", Category::Technical),
    ("hobbies", Category::Preference),
    ("fashion", Category::Preference),
    ("entertainment", Category::Preference),
    ("milestones", Category::Event),
    ("user_preferences", Category::Preference),
    ("misc", Category::Other),
];

/// One entry, checked.
struct Entry {
    id: String,
    memory: String,
    hash: Option<String>,
    metadata: Value,
    categories: Vec<String>,
    created_at: Option<DateTime<Utc>>,
    updated_at: Option<DateTime<Utc>>,
    user_id: Option<String>,
}

pub(super) async fn import(
    importer: &Importer<'_>,
    tenant: &TenantId,
    user: Option<&UserId>,
    doc: Value,
) -> Result<Imported, ImportError> {
    // Mem0's graph memory (`relations`, where it is on) is not imported: it is counted.
    let relations = doc.get("relations").and_then(Value::as_array).map_or(0, Vec::len);
    let (entries, prefix) = match doc {
        Value::Array(entries) => (entries, ""),
        Value::Object(mut o) => match o.remove("results") {
            Some(Value::Array(entries)) => (entries, "results"),
            _ => return Err(ValidationError::new("results", "is not a list of memories").into()),
        },
        _ => unreachable!("kind_of saw a list or an object"),
    };
    let field_of = |i: usize| match prefix {
        "" => format!("[{i}]"),
        _ => format!("{prefix}[{i}]"),
    };
    let entries: Vec<Entry> =
        entries.into_iter().enumerate().map(|(i, e)| entry(e, &field_of(i))).collect::<Result<_, _>>()?;
    let named = entries.iter().find_map(|e| e.user_id.clone());
    if let Some(i) = entries.iter().position(|e| e.user_id.is_some() && e.user_id != named) {
        return Err(ValidationError::new(
            format!("{}.user_id", field_of(i)),
            "names another Mem0 user than the entries before it: import one user at a time",
        )
        .into());
    }
    let target = target_user(user, named.map(Value::String).as_ref(), &format!("{}.user_id", field_of(0)))?;
    let mut imported = Imported { user_id: target.to_string(), format: "mem0".into(), ..Default::default() };
    if relations > 0 {
        imported.skipped.insert("relations".into(), relations as u64);
    }
    let now = Utc::now();
    let mut memories_ready = Vec::with_capacity(entries.len());
    for entry in entries {
        let said = entry.memory.trim().to_owned();
        let mut content = Value::String(said.clone());
        importer.redact(&mut content, &mut imported);
        // Mem0's hash is of the words as said: beside a redacted secret it would let one
        // guess it back.
        let hash = entry.hash.filter(|_| content.as_str() == Some(said.as_str()));
        let mut metadata = json!({
            "source": "mem0",
            "mem0_id": entry.id,
            "mem0_hash": hash,
            "mem0_categories": entry.categories,
            "mem0_metadata": entry.metadata,
        });
        importer.redact(&mut metadata, &mut imported);
        let category = entry
            .categories
            .iter()
            .find_map(|c| CATEGORIES.iter().find(|(name, _)| c.eq_ignore_ascii_case(name)).map(|(_, ours)| *ours))
            .unwrap_or(Category::Statement);
        let created_at = entry.created_at.unwrap_or(now);
        let memory = NewMemory {
            user_id: target.clone(),
            kind: Kind::Fact,
            category,
            key: None,
            value: None,
            content: content.as_str().unwrap_or_default().to_owned(),
            importance: 0.7,
            source_event_ids: Vec::new(),
            source_quote: None,
            derived_from: Vec::new(),
            valid_from: created_at,
            pinned: false,
        };
        let id = mapped_id(&target, uuid::Uuid::new_v5(&MEM0_NAMESPACE, entry.id.as_bytes()), false);
        let origin = Origin { id, created_at, updated_at: entry.updated_at.unwrap_or(created_at), metadata };
        memories_ready.push((memory, origin));
    }
    let texts: Vec<String> = memories_ready.iter().map(|(m, _)| memories::match_text(&m.content, None, None)).collect();
    let mut vectors = Vec::with_capacity(texts.len());
    for batch in texts.chunks(super::EMBED_BATCH) {
        vectors.extend(importer.embedder.embed(batch).await?);
    }

    let change = Change::by(importer.actor.clone(), None, "imported from Mem0");
    let mut tx = importer.db.tenant_tx(tenant).await?;
    crate::users::hold(&mut tx, tenant, &[target.as_str()]).await?;
    let (mut added, mut present) = (0, 0);
    for (i, ((memory, origin), vector)) in memories_ready.iter().zip(&vectors).enumerate() {
        if memories::get(&mut tx, tenant, &target, origin.id).await?.is_some() {
            present += 1;
            continue;
        }
        let said = (memory.content.as_str(), None);
        if edit::duplicate_of(&mut tx, tenant, &target, said, vector, DUPLICATE_SIMILARITY).await?.is_some() {
            imported.duplicates += 1;
            continue;
        }
        memories::insert_from(&mut tx, tenant, memory, origin, (vector, importer.embedder.model()), &change)
            .await
            .map_err(|e| refused(e, &field_of(i)))?;
        added += 1;
    }
    imported.added.insert("memories".into(), added);
    imported.already_present.insert("memories".into(), present);
    imported.vectors_made = added;
    super::audit(&mut tx, tenant, importer, &imported).await?;
    tx.commit().await?;
    Ok(imported)
}

/// Mem0's ids (any string) as UUIDs.
const MEM0_NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x2f0c_8e5b_71d4_4c3a_9f62_a8b1_d0e4_3c57);

fn entry(value: Value, field: &str) -> Result<Entry, ValidationError> {
    let Value::Object(mut o) = value else { return Err(ValidationError::new(field, "is not an object")) };
    let text = |o: &mut Map<String, Value>, name: &str| -> Result<Option<String>, ValidationError> {
        match o.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ValidationError::new(format!("{field}.{name}"), "must be a string")),
        }
    };
    let memory = text(&mut o, "memory")?.filter(|m| !m.trim().is_empty());
    let Some(memory) = memory else {
        return Err(ValidationError::new(format!("{field}.memory"), "is missing or empty"));
    };
    let id = match o.remove("id") {
        Some(Value::String(id)) if !id.is_empty() => id,
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err(ValidationError::new(format!("{field}.id"), "is missing: Mem0's id is kept")),
    };
    let mut time = |name: &str| -> Result<Option<DateTime<Utc>>, ValidationError> {
        text(&mut o, name)?
            .map(|t| {
                parse_time(&t)
                    .ok_or_else(|| ValidationError::new(format!("{field}.{name}"), "must be an ISO 8601 time"))
            })
            .transpose()
    };
    let (created_at, updated_at) = (time("created_at")?, time("updated_at")?);
    let metadata = match o.remove("metadata") {
        None | Some(Value::Null) => json!({}),
        Some(m @ Value::Object(_)) => m,
        Some(_) => return Err(ValidationError::new(format!("{field}.metadata"), "must be an object")),
    };
    let categories = match o.remove("categories") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(c)) if c.iter().all(Value::is_string) => {
            c.into_iter().filter_map(|c| c.as_str().map(str::to_owned)).collect()
        }
        Some(_) => return Err(ValidationError::new(format!("{field}.categories"), "must be a list of strings")),
    };
    Ok(Entry {
        id,
        memory,
        hash: text(&mut o, "hash")?,
        metadata,
        categories,
        created_at,
        updated_at,
        user_id: text(&mut o, "user_id")?,
    })
}

/// An ISO 8601 time as Mem0 writes it: with an offset, or without (then UTC).
fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
        .map(|t| t.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem0_times_read_with_or_without_an_offset() {
        let pacific = parse_time("2024-07-20T01:02:03.123456-07:00").unwrap();
        assert_eq!(pacific.to_rfc3339(), "2024-07-20T08:02:03.123456+00:00");
        assert_eq!(parse_time("2024-07-20T01:02:03").unwrap().to_rfc3339(), "2024-07-20T01:02:03+00:00");
        assert!(parse_time("yesterday").is_none());
    }

    #[test]
    fn an_entry_without_words_is_refused_naming_it() {
        let err = entry(json!({"id": "a", "memory": "  "}), "results[2]").err().unwrap();
        assert_eq!(err.field, "results[2].memory");
        let err = entry(json!({"id": "a", "memory": "x", "created_at": "soon"}), "results[0]").err().unwrap();
        assert_eq!(err.field, "results[0].created_at");
    }
}
