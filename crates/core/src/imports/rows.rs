//! The rows of an export, checked against the columns this database has before anything
//! is written: every name a column, every value of its column's type, every required
//! column there; then, for another user, every id derived anew.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDate};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::mapped_id;
use engram_base::domain::{UserId, ValidationError};

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

/// A column of this database.
pub(super) struct Column {
    pub name: String,
    /// PostgreSQL's `udt_name`: `uuid`, `text`, `_uuid`, `timestamptz`, …
    pub udt: String,
    pub nullable: bool,
    pub has_default: bool,
}

/// The columns of the imported tables, as this database has them.
pub(super) async fn schema(pool: &sqlx::PgPool, tables: &[&str]) -> sqlx::Result<HashMap<String, Vec<Column>>> {
    let rows: Vec<(String, String, String, bool, bool)> = sqlx::query!(
        r#"SELECT table_name::text AS "table_name!", column_name::text AS "column_name!", udt_name::text AS "udt_name!", is_nullable = 'YES' AS "nullable!", column_default IS NOT NULL AS "has_default!"
           FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = ANY($1)
          ORDER BY table_name, ordinal_position"#,
        tables as _
    )
    .map(|r| (r.table_name, r.column_name, r.udt_name, r.nullable, r.has_default))
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
pub(super) fn check_row(row: Value, columns: &[Column], field: &str) -> Result<Map<String, Value>, ValidationError> {
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

/// The names engram reads back as kinds, where no database rule holds them: a memory's
/// category and a relation's predicate.
pub(super) fn check_names(table: &str, row: &Map<String, Value>, field: &str) -> Result<(), ValidationError> {
    let (column, known): (&str, fn(&str) -> bool) = match table {
        "memories" => ("category", |c| engram_base::domain::Category::parse(c).is_some()),
        "relations" => ("predicate", |p| crate::graph::Predicate::parse(p).is_some()),
        _ => return Ok(()),
    };
    match row.get(column).and_then(Value::as_str) {
        Some(name) if !known(name) => {
            Err(ValidationError::new(format!("{field}.{column}"), format!("`{name}` is not a {column} engram knows")))
        }
        _ => Ok(()),
    }
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
pub(super) fn map_ids(row: &mut Map<String, Value>, columns: &[Column], user: &UserId, same_user: bool) {
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
