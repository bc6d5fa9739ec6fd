//! engram's own export read back: each table's rows checked against the columns this
//! database has (so an export of an older release, lacking a newer column, still
//! reads), redacted, and inserted with `ON CONFLICT DO NOTHING`. The statements name
//! their tables at run time, from [`TABLES`]; every value is a bind parameter.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value};
use sqlx::PgConnection;
use uuid::Uuid;

use super::rows::{check_names, check_row, map_ids, schema};
use super::{EMBED_BATCH, ImportError, Imported, Importer, refused, target_user};
use engram_base::domain::{TenantId, UserId, ValidationError};
use engram_base::stored_vectors::VectorColumn;

/// The tables imported, in the order they are written, with each one's key.
const TABLES: [(&str, &str); 11] = [
    ("events", "id"),
    ("sessions", "session_id"),
    ("period_summaries", "id"),
    ("memories", "id"),
    ("memory_history", "id"),
    ("memory_access", "memory_id"),
    ("feedback", "id"),
    ("entities", "id"),
    ("relations", "id"),
    ("graph_history", "id"),
    ("job_checkpoints", "job"),
];

/// What an export says of itself, beside its tables.
const ABOUT: [&str; 5] = ["format", "format_version", "user_id", "exported_at", "embedding_model"];

/// Whether an export has a table called `name`.
pub(super) fn holds(name: &str) -> bool {
    TABLES.iter().any(|(t, _)| *t == name) || NOT_IMPORTED.contains(&name)
}

/// What an export holds that is not imported: the installation's record of runs.
const NOT_IMPORTED: [&str; 1] = ["job_runs"];

/// Text columns that name rather than say: kinds, states, keys, names. Every other
/// text passes the secret rules.
const NAMES: [&str; 15] = [
    "session_id",
    "client_event_id",
    "role",
    "kind",
    "category",
    "key",
    "status",
    "period",
    "action",
    "actor",
    "type",
    "predicate",
    "name",
    "norm_name",
    "job",
];

/// Rows per statement.
const CHUNK: usize = 500;

pub(super) async fn import(
    importer: &Importer<'_>,
    tenant: &TenantId,
    user: Option<&UserId>,
    doc: Value,
) -> Result<Imported, ImportError> {
    let Value::Object(mut doc) = doc else { unreachable!("kind_of saw an object") };
    let target = target_user(user, doc.get("user_id"), "user_id")?;
    let same_user = doc.get("user_id").and_then(Value::as_str) == Some(target.as_str());
    doc.retain(|name, _| !ABOUT.contains(&name.as_str()));
    let tables = doc;
    let mut imported = Imported { user_id: target.to_string(), format: super::FORMAT.into(), ..Default::default() };
    let names: Vec<&str> = TABLES.iter().map(|(t, _)| *t).collect();
    let schema = schema(&importer.db.pool, &names).await?;
    // Every row is checked, mapped and redacted before anything is written.
    let mut ready: BTreeMap<&str, Vec<Map<String, Value>>> = BTreeMap::new();
    for (name, rows) in tables {
        let field = name.clone();
        let Value::Array(rows) = rows else {
            return Err(ValidationError::new(field, "is not a list of rows").into());
        };
        if NOT_IMPORTED.contains(&name.as_str()) {
            imported.skipped.insert(name, rows.len() as u64);
            continue;
        }
        let Some((table, _)) = TABLES.iter().find(|(t, _)| *t == name) else {
            return Err(ValidationError::new(field, "is not a table an export holds").into());
        };
        let columns = &schema[*table];
        let mut checked = Vec::with_capacity(rows.len());
        for (i, row) in rows.into_iter().enumerate() {
            let field = format!("{field}[{i}]");
            let mut row = check_row(row, columns, &field)?;
            check_names(table, &row, &field)?;
            map_ids(&mut row, columns, &target, same_user);
            for column in columns.iter().filter(|c| matches!(c.udt.as_str(), "text" | "jsonb" | "_text")) {
                if !NAMES.contains(&column.name.as_str())
                    && let Some(value) = row.get_mut(&column.name)
                {
                    importer.redact(value, &mut imported);
                }
            }
            checked.push(row);
        }
        ready.insert(table, checked);
    }
    if let Some(events) = ready.get_mut("events") {
        // Turns keep their order: by their place in the exported log, then their time.
        events.sort_by_key(|r| (r.get("seq").and_then(Value::as_i64).unwrap_or(i64::MAX), r["created_at"].to_string()));
    }

    let mut tx = importer.db.tenant_tx(tenant).await?;
    crate::users::hold(&mut tx, tenant, &[target.as_str()]).await?;
    if let Some(events) = ready.get_mut("events") {
        drop_others_client_ids(&mut tx, tenant, &target, events).await?;
    }
    let mut added: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut entities_here: HashMap<String, String> = HashMap::new();
    for (table, key) in TABLES {
        let Some(rows) = ready.get(table) else { continue };
        let mut rows = match table {
            "job_checkpoints" => moved_watermarks(&mut tx, tenant, &target, rows, ready.get("events")).await?,
            _ => rows.clone(),
        };
        if matches!(table, "relations" | "graph_history") {
            for row in &mut rows {
                for column in ["subject_id", "object_id", "entity_id"] {
                    if let Some(Value::String(id)) = row.get_mut(column)
                        && let Some(theirs) = entities_here.get(id.as_str())
                    {
                        *id = theirs.clone();
                    }
                }
            }
        }
        let keys = insert(&mut tx, tenant, &target, table, key, &rows).await.map_err(|e| refused(e, table))?;
        if table == "entities" {
            entities_here = entities_already_here(&mut tx, tenant, &target, &rows, &keys).await?;
        }
        imported.added.insert(table.into(), keys.len() as u64);
        imported.already_present.insert(table.into(), (rows.len() - keys.len()) as u64);
        added.insert(table, keys);
    }
    imported.vectors_made = make_vectors(&mut tx, importer, tenant, &target, &added).await?;
    if added.get("relations").is_some_and(|k| !k.is_empty()) || added.get("entities").is_some_and(|k| !k.is_empty()) {
        crate::graph::snapshot::refresh(&mut tx, tenant, &target, importer.graph_scan_limit).await?;
    }
    super::audit(&mut tx, tenant, importer, &imported).await?;
    tx.commit().await?;
    Ok(imported)
}

/// Checkpoints whose watermark (`state.seq`) is moved to the same turn's place in this
/// log: the last imported turn at or before it.
async fn moved_watermarks(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    rows: &[Map<String, Value>],
    events: Option<&Vec<Map<String, Value>>>,
) -> sqlx::Result<Vec<Map<String, Value>>> {
    let events = events.map(Vec::as_slice).unwrap_or_default();
    let ids: Vec<Uuid> = events.iter().filter_map(|e| e["id"].as_str()?.parse().ok()).collect();
    let here: HashMap<Uuid, i64> = sqlx::query!(
        "SELECT id, seq FROM events WHERE tenant_id = $1 AND user_id = $2 AND id = ANY($3)",
        tenant.as_str(),
        user.as_str(),
        &ids
    )
    .map(|r| (r.id, r.seq))
    .fetch_all(conn)
    .await?
    .into_iter()
    .collect();
    let mut moved = Vec::with_capacity(rows.len());
    for row in rows {
        let mut row = row.clone();
        if let Some(Value::Object(state)) = row.get_mut("state")
            && let Some(old) = state.get("seq").and_then(Value::as_i64)
        {
            let new = events
                .iter()
                .filter(|e| e.get("seq").and_then(Value::as_i64).is_some_and(|s| s <= old))
                .filter_map(|e| here.get(&e["id"].as_str()?.parse().ok()?))
                .max()
                .copied()
                .unwrap_or(0);
            state.insert("seq".into(), new.into());
        }
        moved.push(row);
    }
    Ok(moved)
}

/// A client's event id is unique in its tenant: one another user of the tenant already
/// sent is dropped from the imported turn, which is then stored without it.
async fn drop_others_client_ids(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    events: &mut [Map<String, Value>],
) -> sqlx::Result<()> {
    let ids: Vec<&str> = events.iter().filter_map(|e| e.get("client_event_id")?.as_str()).collect();
    if ids.is_empty() {
        return Ok(());
    }
    let taken: Vec<String> = sqlx::query_scalar!(r#"SELECT client_event_id AS "client_event_id!" FROM events WHERE tenant_id = $1 AND user_id <> $2 AND client_event_id = ANY($3)"#, tenant.as_str(), user.as_str(), &ids as _)
    .fetch_all(conn)
    .await?;
    for event in events {
        if event.get("client_event_id").and_then(Value::as_str).is_some_and(|id| taken.iter().any(|t| t == id)) {
            event.remove("client_event_id");
        }
    }
    Ok(())
}

/// The imported entities not written because the user already has one by that name (or,
/// for the user's own entity, their own): each id mapped to the user's entity, so the
/// imported relations and history point at it.
async fn entities_already_here(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    rows: &[Map<String, Value>],
    written: &[String],
) -> sqlx::Result<HashMap<String, String>> {
    let mut here = HashMap::new();
    for row in rows {
        let Some(id) = row.get("id").and_then(Value::as_str).filter(|id| !written.iter().any(|w| w == id)) else {
            continue;
        };
        let is_user = row.get("is_user").and_then(Value::as_bool).unwrap_or(false);
        let norm_name = row.get("norm_name").and_then(Value::as_str).unwrap_or_default();
        let theirs: Option<String> = sqlx::query_scalar!(
            r#"SELECT id::text AS "id!" FROM entities
              WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND id <> $3::uuid
                AND (norm_name = $4 OR ($5 AND is_user))
                AND NOT EXISTS (SELECT FROM entities s WHERE s.tenant_id = $1 AND s.id = $3::uuid)
              ORDER BY is_user DESC LIMIT 1"#,
            tenant.as_str(),
            user.as_str(),
            id as _,
            norm_name,
            is_user
        )
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(theirs) = theirs {
            here.insert(id.to_owned(), theirs);
        }
    }
    Ok(here)
}

/// Inserts the rows that are not there yet; returns the keys written.
async fn insert(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    table: &str,
    key: &str,
    rows: &[Map<String, Value>],
) -> sqlx::Result<Vec<String>> {
    let mut written = Vec::new();
    // Rows are written in groups with the same columns: a column a row lacks takes its default.
    let mut groups: BTreeMap<Vec<String>, Vec<Value>> = BTreeMap::new();
    for row in rows {
        let columns: Vec<String> = row.keys().filter(|k| *k != "seq").cloned().collect();
        groups.entry(columns).or_default().push(Value::Object(row.clone()));
    }
    for (columns, rows) in groups {
        let listed: BTreeSet<&str> = columns.iter().map(String::as_str).collect();
        let names = listed.iter().copied().collect::<Vec<_>>().join(", ");
        let values = listed.iter().map(|c| format!("r.{c}")).collect::<Vec<_>>().join(", ");
        let sql = format!(
            "INSERT INTO {table} (tenant_id, user_id, {names})
             SELECT $1, $2, {values}
               FROM jsonb_array_elements($3) WITH ORDINALITY AS e(row, n), jsonb_populate_record(NULL::{table}, e.row) r
              ORDER BY e.n
             ON CONFLICT DO NOTHING RETURNING {key}::text"
        );
        for chunk in rows.chunks(CHUNK) {
            let keys: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()))
                .bind(tenant.as_str())
                .bind(user.as_str())
                .bind(Value::Array(chunk.to_vec()))
                .fetch_all(&mut *conn)
                .await?;
            written.extend(keys);
        }
    }
    Ok(written)
}

/// The vectors of the rows written, made by this installation's model.
async fn make_vectors(
    conn: &mut PgConnection,
    importer: &Importer<'_>,
    tenant: &TenantId,
    user: &UserId,
    added: &BTreeMap<&str, Vec<String>>,
) -> anyhow::Result<u64> {
    let columns: [(&str, &VectorColumn); 5] = [
        ("events", &crate::ingest::vectors::VECTORS),
        ("memories", &crate::memories::VECTORS),
        ("sessions", &crate::jobs::SESSION_VECTORS),
        ("period_summaries", &crate::jobs::PERIOD_VECTORS),
        ("entities", &crate::graph::ENTITY_VECTORS),
    ];
    let mut made = 0;
    for (table, column) in columns {
        for keys in added.get(table).map(Vec::as_slice).unwrap_or_default().chunks(EMBED_BATCH) {
            made += column.remake(conn, tenant, user.as_str(), keys, importer.embedder).await?;
        }
    }
    // A relation's vector is made from its sentence and its two entities' names.
    let relations: Vec<Uuid> =
        added.get("relations").map(Vec::as_slice).unwrap_or_default().iter().filter_map(|k| k.parse().ok()).collect();
    for ids in relations.chunks(EMBED_BATCH) {
        made += crate::graph::remake_relation_vectors(conn, tenant, user, ids, importer.embedder).await?;
    }
    Ok(made)
}
