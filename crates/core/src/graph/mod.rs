//! Graph memory: each user's world as typed entities and the relations between them,
//! in the user's PostgreSQL rows (`entities`, `relations`, `graph_history`; this module
//! is their only writer).
//!
//! - **Extraction.** `extract_facts` reads every new user message once: the rules of
//!   [`extract`] (English and Chinese, clause by clause: `clauses`) find relations
//!   without an LLM, by their verbs (`patterns`) or else by the clause's shape
//!   (`frame`); [`introductions`] reads the user's own name; [`segmented`] cuts
//!   Chinese names where the segmenter says words end. With an LLM, the
//!   `extract_graph` prompt does too ([`llm`]), its answers checked like facts'.
//! - **Resolution** ([`resolve`]): a name is an entity already known by its
//!   normal form, then by an alias (shipped in [`names`], extended by `graph.aliases`),
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

mod clauses;
pub mod extract;
pub mod forget;
mod frame;
pub mod introductions;
pub mod llm;
pub mod mention;
pub mod merge;
pub mod names;
mod patterns;
pub mod read;
mod relate;
mod resolve;
pub mod retrieve;
pub mod segmented;
pub mod snapshot;
pub mod store;

pub use relate::kind_label;

use serde::{Deserialize, Serialize};

pub use engram_base::configuration::GraphSettings;

pub use names::Aliases;

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

/// What an entity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EntityType {
    Person,
    Project,
    Technology,
    Organization,
    Place,
    Product,
    Concept,
    Other,
}

impl EntityType {
    pub const ALL: [Self; 8] = [
        Self::Person,
        Self::Project,
        Self::Technology,
        Self::Organization,
        Self::Place,
        Self::Product,
        Self::Concept,
        Self::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Person => "person",
            Self::Project => "project",
            Self::Technology => "technology",
            Self::Organization => "organization",
            Self::Place => "place",
            Self::Product => "product",
            Self::Concept => "concept",
            Self::Other => "other",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// What a relation states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Predicate {
    Uses,
    WorksOn,
    Leads,
    Owns,
    PartOf,
    Colleague,
    ReportsTo,
    DependsOn,
    DeployedOn,
    LocatedIn,
    LivesIn,
    WorksAt,
    Prefers,
    Has,
}

/// Which edges a new one ends (see [`Predicate::exclusive`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusive {
    /// One object per subject at a time (lives in, works at, reports to, …).
    Object,
    /// One subject per object at a time: a project has one lead.
    Subject,
    /// One object per subject and kind of technology: a project's database, its framework.
    TechnologyKind,
}

impl Predicate {
    pub const ALL: [Self; 14] = [
        Self::Uses,
        Self::WorksOn,
        Self::Leads,
        Self::Owns,
        Self::PartOf,
        Self::Colleague,
        Self::ReportsTo,
        Self::DependsOn,
        Self::DeployedOn,
        Self::LocatedIn,
        Self::LivesIn,
        Self::WorksAt,
        Self::Prefers,
        Self::Has,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Uses => "uses",
            Self::WorksOn => "works_on",
            Self::Leads => "leads",
            Self::Owns => "owns",
            Self::PartOf => "part_of",
            Self::Colleague => "colleague",
            Self::ReportsTo => "reports_to",
            Self::DependsOn => "depends_on",
            Self::DeployedOn => "deployed_on",
            Self::LocatedIn => "located_in",
            Self::LivesIn => "lives_in",
            Self::WorksAt => "works_at",
            Self::Prefers => "prefers",
            Self::Has => "has",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Whether a new edge of this predicate ends others: see [`Exclusive`].
    pub fn exclusive(self) -> Option<Exclusive> {
        match self {
            Self::LivesIn | Self::WorksAt | Self::ReportsTo | Self::DeployedOn | Self::LocatedIn | Self::PartOf => {
                Some(Exclusive::Object)
            }
            Self::Leads => Some(Exclusive::Subject),
            Self::Uses => Some(Exclusive::TechnologyKind),
            _ => None,
        }
    }

    /// Whether an edge of this predicate can join these kinds of entity: who lives, works,
    /// leads and reports is a person, where one lives is a place, one works at an
    /// organisation, and what is worked on, led, used, depended or deployed on is not a
    /// person. `Other` fits anywhere: an unknown kind is no evidence against an edge.
    pub fn joins(self, subject: EntityType, object: EntityType) -> bool {
        use EntityType::{Organization, Other, Person, Place, Product, Project};
        let person = |kind| matches!(kind, Person | Other);
        match self {
            Self::LivesIn => person(subject) && matches!(object, Place | Other),
            Self::LocatedIn => matches!(object, Place | Other),
            Self::WorksAt => person(subject) && matches!(object, Organization | Project | Product | Other),
            Self::Colleague | Self::ReportsTo => person(subject) && person(object),
            Self::WorksOn | Self::Leads => person(subject) && object != Person,
            Self::Uses | Self::DependsOn => !matches!(object, Person | Place),
            Self::DeployedOn => object != Person,
            _ => true,
        }
    }

    /// Whether it reads the same both ways (A colleague B is B colleague A).
    pub fn symmetric(self) -> bool {
        self == Self::Colleague
    }

    /// Words a sentence would say it with, for matching questions to it.
    pub fn words(self) -> &'static str {
        match self {
            Self::Uses => "uses",
            Self::WorksOn => "works on",
            Self::Leads => "leads",
            Self::Owns => "owns, is responsible for",
            Self::PartOf => "is part of",
            Self::Colleague => "is a colleague of",
            Self::ReportsTo => "reports to",
            Self::DependsOn => "depends on",
            Self::DeployedOn => "is deployed on",
            Self::LocatedIn => "is located in",
            Self::LivesIn => "lives in",
            Self::WorksAt => "works at",
            Self::Prefers => "prefers, likes",
            Self::Has => "has",
        }
    }
}

/// One relation a sentence states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triple {
    pub subject: mention::Mention,
    pub predicate: Predicate,
    pub object: mention::Mention,
    /// What the subject moved away from ("from PostgreSQL to TiDB"): that edge ends.
    pub ended: Option<mention::Mention>,
}

/// What one sentence states: relations, and the user's name if it says it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Extracted {
    pub triples: Vec<Triple>,
    pub user_name: Option<String>,
}

/// The graph's settings with the alias table they make, and for the jobs that read
/// relations, the Chinese segmenter that cuts names at word boundaries ([`segmented`]).
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

#[cfg(test)]
mod tests {
    use super::{EntityType as T, Predicate as P};

    #[test]
    fn a_predicate_joins_only_the_kinds_it_can() {
        assert!(P::WorksAt.joins(T::Person, T::Organization));
        assert!(!P::WorksAt.joins(T::Person, T::Technology), "nobody works at a database");
        assert!(P::LivesIn.joins(T::Person, T::Place) && !P::LivesIn.joins(T::Person, T::Project));
        assert!(!P::Colleague.joins(T::Person, T::Technology));
        assert!(P::Uses.joins(T::Project, T::Technology) && !P::Uses.joins(T::Project, T::Person));
        assert!(P::WorksOn.joins(T::Person, T::Project) && !P::WorksOn.joins(T::Project, T::Technology));
        assert!(P::WorksAt.joins(T::Other, T::Other), "an unknown kind is no evidence against an edge");
    }

    #[test]
    fn the_lexicon_knows_a_technology_by_its_whole_name() {
        assert!(engram_base::technologies::is_named(" PostgreSQL "));
        assert!(!engram_base::technologies::is_named("PostgreSQL 17 cluster at Globex"));
        assert!(!engram_base::technologies::is_named("Globex"));
    }
}
