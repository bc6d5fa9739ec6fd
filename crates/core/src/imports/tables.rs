//! engram's own export read back: each table's rows checked against the columns this
//! database has (so an export of an older release, lacking a newer column, still
//! reads), redacted, and inserted with `ON CONFLICT DO NOTHING`. The statements name
//! their tables at run time, from [`TABLES`]; every value is a bind parameter.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, NaiveDate};
use serde_json::{Map, Value};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{ImportError, Imported, Importer, mapped_id, target_user};
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

/// Columns made here, never read from a document: whose the row is, what is derived
/// from its text (vectors, the text-search column), a turn's place in the log, and a
/// checkpoint's bookkeeping of runs.
const MADE_HERE: [&str; 12] = [
    "tenant_id",
    "user_id",
    "embedding",
    "embedding_model",
    "embedding_dims",
    "content_tsv",
    "seq",
    "pass_id",
    "failures",
    "retry_after",
    "last_error",
    "received_at",
];

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
/// Texts per call to the embedder.
const EMBED_BATCH: usize = 128;

/// A column of this database.
struct Column {
    name: String,
    /// PostgreSQL's `udt_name`: `uuid`, `text`, `_uuid`, `timestamptz`, …
    udt: String,
    nullable: bool,
    has_default: bool,
}

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
    let schema = schema(&importer.db.pool).await?;
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
    let mut added: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (table, key) in TABLES {
        let Some(rows) = ready.get(table) else { continue };
        let rows = match table {
            "job_checkpoints" => moved_watermarks(&mut tx, tenant, &target, rows, ready.get("events")).await?,
            _ => rows.clone(),
        };
        let keys = insert(&mut tx, tenant, &target, table, key, &rows).await.map_err(|e| refused(e, table))?;
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

/// The columns of the imported tables, as this database has them.
async fn schema(pool: &sqlx::PgPool) -> sqlx::Result<HashMap<String, Vec<Column>>> {
    let names: Vec<&str> = TABLES.iter().map(|(t, _)| *t).collect();
    let rows: Vec<(String, String, String, bool, bool)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text, udt_name::text, is_nullable = 'YES', column_default IS NOT NULL
           FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = ANY($1)
          ORDER BY table_name, ordinal_position",
    )
    .bind(&names)
    .fetch_all(pool)
    .await?;
    let mut schema: HashMap<String, Vec<Column>> = HashMap::new();
    for (table, name, udt, nullable, has_default) in rows {
        schema.entry(table).or_default().push(Column { name, udt, nullable, has_default });
    }
    Ok(schema)
}

/// The row with its values checked against the columns; made-here columns dropped
/// (but a turn's `seq`, which orders them). Names the field that is wrong.
fn check_row(row: Value, columns: &[Column], field: &str) -> Result<Map<String, Value>, ValidationError> {
    let Value::Object(mut row) = row else { return Err(ValidationError::new(field, "is not an object")) };
    let seq = row.get("seq").cloned();
    row.retain(|name, _| !MADE_HERE.contains(&name.as_str()));
    for (name, value) in &row {
        let Some(column) = columns.iter().find(|c| c.name == *name) else {
            return Err(ValidationError::new(format!("{field}.{name}"), "is not a column of this table"));
        };
        if value.is_null() {
            if !column.nullable {
                return Err(ValidationError::new(format!("{field}.{name}"), "must not be null"));
            }
            continue;
        }
        if let Err(expected) = check_value(&column.udt, value) {
            return Err(ValidationError::new(format!("{field}.{name}"), format!("must be {expected}")));
        }
    }
    for column in columns {
        let required = !column.nullable && !column.has_default && !MADE_HERE.contains(&column.name.as_str());
        if required && !row.contains_key(&column.name) {
            return Err(ValidationError::new(format!("{field}.{}", column.name), "is missing"));
        }
    }
    if let Some(seq) = seq.filter(Value::is_i64) {
        row.insert("seq".into(), seq);
    }
    Ok(row)
}

/// Whether `value` reads as a value of the PostgreSQL type `udt`; what it must be if not.
fn check_value(udt: &str, value: &Value) -> Result<(), &'static str> {
    let is_uuid = |v: &Value| v.as_str().is_some_and(|s| Uuid::parse_str(s).is_ok());
    let ok = match udt {
        "uuid" => is_uuid(value),
        "_uuid" => value.as_array().is_some_and(|a| a.iter().all(is_uuid)),
        "text" => value.is_string(),
        "_text" => value.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        "timestamptz" => value.as_str().is_some_and(|s| DateTime::parse_from_rfc3339(s).is_ok()),
        "date" => value.as_str().is_some_and(|s| NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok()),
        "int2" | "int4" => value.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        "int8" => value.is_i64(),
        "float4" | "float8" => value.is_number(),
        "bool" => value.is_boolean(),
        _ => true,
    };
    match (ok, udt) {
        (true, _) => Ok(()),
        (false, "uuid") => Err("a UUID"),
        (false, "_uuid") => Err("a list of UUIDs"),
        (false, "text") => Err("a string"),
        (false, "_text") => Err("a list of strings"),
        (false, "timestamptz") => Err("an RFC 3339 time"),
        (false, "date") => Err("a date (YYYY-MM-DD)"),
        (false, "bool") => Err("true or false"),
        (false, _) => Err("a number"),
    }
}

/// For another user, every id (and id list) derived anew; a client's own event id is
/// the client's, so it is not carried over to another user.
fn map_ids(row: &mut Map<String, Value>, columns: &[Column], user: &UserId, same_user: bool) {
    if same_user {
        return;
    }
    let map = |v: &mut Value| {
        if let Some(id) = v.as_str().and_then(|s| Uuid::parse_str(s).ok()) {
            *v = Value::String(mapped_id(user, id, false).to_string());
        }
    };
    for column in columns {
        match (column.udt.as_str(), row.get_mut(&column.name)) {
            ("uuid", Some(value)) => map(value),
            ("_uuid", Some(Value::Array(ids))) => ids.iter_mut().for_each(map),
            _ => {}
        }
    }
    row.remove("client_event_id");
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
    let here: HashMap<Uuid, i64> =
        sqlx::query_as("SELECT id, seq FROM events WHERE tenant_id = $1 AND user_id = $2 AND id = ANY($3)")
            .bind(tenant.as_str())
            .bind(user.as_str())
            .bind(&ids)
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

/// A database's refusal of a row, named by its table; other failures stay failures.
fn refused(err: sqlx::Error, table: &str) -> ImportError {
    if let Some(db) = err.as_database_error()
        && let Some(code) = db.code()
        && (code.starts_with("22") || code.starts_with("23"))
    {
        let why = match db.constraint() {
            Some(rule) => format!("holds a row that breaks the rule {rule}"),
            None => "holds a value the column cannot take".to_owned(),
        };
        return ValidationError::new(table, why).into();
    }
    err.into()
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
