//! Graph memory: each user's world as typed entities and the relations between them,
//! in the user's PostgreSQL rows (`entities`, `relations`, `graph_history`; this module
//! is their only writer).
//!
//! - **Extraction.** `extract_facts` reads every new user message once: the rules of
//!   `engram_language::relations` (English and Chinese) find relations without an LLM.
//!   With an LLM, the `extract_graph` prompt does too ([`llm`]), its answers checked
//!   like facts'. The segmenter that cuts Chinese names at word boundaries is the jobs'
//!   ([`Graph::for_jobs`]).
//! - **Resolution** ([`resolve`]): a name is an entity already known by its
//!   normal form, then by an alias (shipped in `engram_language::relations::names`, extended by `graph.aliases`),
//!   then by embedding similarity within its type (`graph.merge_similarity`), never
//!   across two different technologies or names that differ in a letter or number
//!   ("Project A", "Project B"). `dedup` merges what resolution missed; a merge keeps
//!   its lineage (`merged_into`, `merged_from`, history) and is undone by restoring.
//! - **Knowledge updates on edges.** A predicate that holds one object at a time
//!   ([`Predicate::exclusive`]) ends the old edge when a new object comes: it becomes
//!   `superseded` with `valid_to` and its successor, never merged, so `as_of` still
//!   answers what held then.
//! - **Retrieval** ([`retrieve`]): the entities named in the query (by name, alias,
//!   trigram and embedding) and those of the best results' turns seed a breadth-first
//!   walk of at most `graph.max_depth` hops (`graph.fan_out` edges per entity, in
//!   memory from the user's graph row ([`snapshot`]) for a user with at most
//!   `graph.scan_limit` relations, else a statement per hop); each relation reached is
//!   scored on search's scale (see [`crate::search`]).

pub mod forget;
pub mod llm;
pub mod merge;
pub mod read;
mod relate;
pub use relate::remake_vectors as remake_relation_vectors;
mod resolve;
pub use resolve::VECTORS as ENTITY_VECTORS;
pub mod retrieve;
pub mod snapshot;
pub mod store;

pub use relate::kind_label;

use serde::{Deserialize, Serialize};

pub use engram_base::configuration::GraphSettings;

pub use engram_language::relations::{Aliases, EntityType, Exclusive, Extracted, Predicate, Triple};

/// Whether an entity stands, was merged into another, or was deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, sqlx::Type, utoipa::ToSchema)]
#[sqlx(type_name = "text", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum EntityStatus {
    Active,
    Merged,
    Deleted,
}

/// Whether a relation holds, was ended by a newer one, or was deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, sqlx::Type, utoipa::ToSchema)]
#[sqlx(type_name = "text", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum RelationStatus {
    Active,
    Superseded,
    Deleted,
}

/// What a `graph_history` row records of its entity or relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, sqlx::Type, utoipa::ToSchema)]
#[sqlx(type_name = "text", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
#[schema(as = GraphAction)]
pub enum Action {
    Created,
    Updated,
    Merged,
    Superseded,
    Restored,
    Deleted,
}

/// The graph's settings with the alias table they make, and for the jobs that read
/// relations, the Chinese segmenter that cuts names at word boundaries
/// (`engram_language::relations::segmented`).
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub settings: GraphSettings,
    pub aliases: Aliases,
    pub segmenter: Option<std::sync::Arc<engram_base::models::Segmenter>>,
}

impl Graph {
    pub fn new(settings: &GraphSettings) -> Self {
        Self { settings: settings.clone(), aliases: Aliases::new(&settings.aliases), segmenter: None }
    }

    /// The graph the jobs read relations with: the settings' and the segmenter beside the
    /// embedding models.
    pub fn for_jobs(settings: &engram_base::configuration::Settings) -> Self {
        Self::new(&settings.graph)
            .with_segmenter(&engram_base::models::models_dir(&settings.embeddings, &settings.home))
    }

    /// With the segmenter in `models_dir`; without one installed, Chinese is read by the rules alone.
    pub fn with_segmenter(mut self, models_dir: &std::path::Path) -> Self {
        match engram_base::models::Segmenter::shared(models_dir) {
            Ok(segmenter) => self.segmenter = Some(segmenter),
            Err(err) => tracing::warn!(error = %err, "no Chinese segmenter: Chinese names are cut by the rules alone"),
        }
        self
    }
}

/// A relation as one line: `张伟 —colleague→ 李明`.
pub fn line(subject: &str, predicate: &str, object: &str) -> String {
    format!("{subject} —{predicate}→ {object}")
}
