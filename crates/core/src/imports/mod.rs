//! Imports: a user's data read back in, from engram's own export (any installation,
//! any tenant, the same or another user) or from Mem0's `get_all`. One transaction per
//! user, under the user's life lock: a document is taken whole or not at all, and a
//! bad one is refused naming the field before anything is written. Every text passes
//! the secret rules `ingest.redact` configures, as a turn does. Vectors are made by
//! this installation's model (an export carries none). Importing the same document
//! again adds nothing: ids are kept, or — for another user — derived from the user and
//! the id they had.

pub mod mem0;
mod rows;
mod tables;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use engram_base::db::Database;
use engram_base::domain::{TenantId, UserId, ValidationError};
use engram_base::models::Embedder;

/// What engram's export calls itself.
pub const FORMAT: &str = "engram.export";
/// The export format this engram writes and reads: beside `format`, `format_version`,
/// `user_id`, `exported_at` and `embedding_model`, one list of rows per table, as the
/// migrations define them, less vectors and what is derived for lookups.
pub const FORMAT_VERSION: u64 = 1;

/// Texts per call to the embedder.
const EMBED_BATCH: usize = 128;

/// Why an import was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The document, naming the field; nothing was written.
    #[error("{0}")]
    Invalid(#[from] ValidationError),
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

impl From<engram_base::models::ModelError> for ImportError {
    fn from(err: engram_base::models::ModelError) -> Self {
        Self::Failed(err.into())
    }
}

impl From<sqlx::Error> for ImportError {
    fn from(err: sqlx::Error) -> Self {
        Self::Failed(err.into())
    }
}

/// Who imports, and with what.
pub struct Importer<'a> {
    pub db: &'a Database,
    pub embedder: &'a Embedder,
    /// The kinds of secret redacted (`ingest.redact`).
    pub secret_kinds: &'a [String],
    /// `key:<id>` or `cli`, for the history and the audit log.
    pub actor: String,
    /// The walkable graph's scan limit (`graph.scan_limit`).
    pub graph_scan_limit: i64,
}

/// What an import did.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct Imported {
    pub user_id: String,
    /// `engram.export` or `mem0`.
    pub format: String,
    /// Rows written, per table.
    pub added: BTreeMap<String, u64>,
    /// Rows the user already had (the same id), per table: nothing was changed.
    pub already_present: BTreeMap<String, u64>,
    /// Mem0 memories that said what one of the user's memories already says.
    pub duplicates: u64,
    /// Texts in which a secret was replaced by its marker.
    pub secrets_redacted: u64,
    /// Vectors made by this installation's model.
    pub vectors_made: u64,
    /// What the document held that is not imported (an export's `job_runs`), per table.
    pub skipped: BTreeMap<String, u64>,
}

impl Importer<'_> {
    /// Imports `doc` for `tenant`: into `user`, or the user the document names.
    pub async fn import(&self, tenant: &TenantId, user: Option<&UserId>, doc: Value) -> Result<Imported, ImportError> {
        match kind_of(&doc)? {
            Kind::Engram => tables::import(self, tenant, user, doc).await,
            Kind::Mem0 => mem0::import(self, tenant, user, doc).await,
        }
    }

    /// `secrets_redacted` and the texts of `value` (a string, or any JSON) redacted.
    fn redact(&self, value: &mut Value, imported: &mut Imported) {
        let wanted = |kind: &str| self.secret_kinds.iter().any(|k| k == kind);
        let found = match value {
            Value::String(text) => {
                let (redacted, kinds) = engram_language::secrets::redact_found(text, wanted);
                *text = redacted;
                kinds
            }
            other => engram_language::secrets::redact_json_found(other, &wanted),
        };
        if !found.is_empty() {
            imported.secrets_redacted += 1;
        }
    }
}

enum Kind {
    Engram,
    Mem0,
}

/// Which format `doc` is in: engram's names itself, Mem0's is `{"results": […]}` or a list.
fn kind_of(doc: &Value) -> Result<Kind, ValidationError> {
    match doc {
        Value::Array(_) => Ok(Kind::Mem0),
        // Mem0's answer may hold `relations` (its graph memory) beside `results`.
        Value::Object(o)
            if o.contains_key("results") && !o.contains_key("format") && !o.contains_key("format_version") =>
        {
            Ok(Kind::Mem0)
        }
        Value::Object(o) if o.contains_key("format_version") || o.keys().any(|k| tables::holds(k)) => {
            if let Some(format) = o.get("format").filter(|f| *f != FORMAT) {
                return Err(ValidationError::new("format", format!("is {format}, not {FORMAT}")));
            }
            match o.get("format_version") {
                None => Err(ValidationError::new(
                    "format_version",
                    format!("is missing: an export of this engram says format_version {FORMAT_VERSION}"),
                )),
                Some(v) if v.as_u64() == Some(FORMAT_VERSION) => Ok(Kind::Engram),
                Some(v) => Err(ValidationError::new(
                    "format_version",
                    format!("{v} is not a version this engram reads (it reads {FORMAT_VERSION})"),
                )),
            }
        }
        _ => Err(ValidationError::new(
            "body",
            "is neither an engram export (format_version and the tables) nor Mem0's get_all result (results, or a list)",
        )),
    }
}

/// The user the rows go to: `given`, or the one the document names at `field`.
fn target_user(given: Option<&UserId>, named: Option<&Value>, field: &str) -> Result<UserId, ValidationError> {
    match (given, named) {
        (Some(user), _) => Ok(user.clone()),
        (None, Some(Value::String(named))) => {
            UserId::parse(named.clone()).map_err(|e| ValidationError::new(field, e.message))
        }
        (None, _) => Err(ValidationError::new(field, "is missing, and no user was given to import into")),
    }
}

/// The id a row of `from` takes in `user`: its own when it stays with its user,
/// otherwise one derived from both, the same on every import.
fn mapped_id(user: &UserId, id: Uuid, same_user: bool) -> Uuid {
    match same_user {
        true => id,
        false => Uuid::new_v5(&IMPORT_NAMESPACE, format!("{user}\n{id}").as_bytes()),
    }
}

/// The namespace of derived ids.
const IMPORT_NAMESPACE: Uuid = Uuid::from_u128(0x6a1d_43f2_9a55_4a8e_8c1b_0e2f_5d3c_7b91);

/// A database's refusal of a value, named by `field`; other failures stay failures.
fn refused(err: sqlx::Error, field: &str) -> ImportError {
    if let Some(db) = err.as_database_error()
        && let Some(code) = db.code()
        && (code.starts_with("22") || code.starts_with("23"))
    {
        let why = match db.constraint() {
            Some(rule) => format!("holds a row that breaks the rule {rule}"),
            None => "holds a value the column cannot take".to_owned(),
        };
        return ValidationError::new(field, why).into();
    }
    err.into()
}

/// The audit-log row of an import: how much, never what.
async fn audit(
    conn: &mut sqlx::PgConnection,
    tenant: &TenantId,
    importer: &Importer<'_>,
    imported: &Imported,
) -> sqlx::Result<()> {
    let details = json!({"format": imported.format, "added": imported.added, "duplicates": imported.duplicates,
                         "secrets_redacted": imported.secrets_redacted});
    crate::users::audit(conn, tenant, &importer.actor, "import", &imported.user_id, details).await
}
