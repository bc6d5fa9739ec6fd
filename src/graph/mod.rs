//! Graph memory: each user's world as typed entities and the relations between them,
//! in the user's PostgreSQL rows (`entities`, `relations`, `graph_history`; this module
//! is their only writer).
//!
//! - **Extraction.** `extract_facts` reads every new user message once: the rules of
//!   [`extract`] (English and Chinese) find relations without an LLM; with one, the
//!   `extract_graph` prompt does ([`llm`]), its answers checked like facts'.
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

pub mod extract;
pub mod forget;
pub mod llm;
pub mod mention;
pub mod merge;
pub mod names;
mod patterns;
pub mod read;
mod relate;
mod resolve;
pub mod retrieve;
pub mod snapshot;
pub mod store;

pub use relate::kind_label;

use serde::{Deserialize, Serialize};

pub use names::Aliases;

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

/// The graph's settings with the alias table they make.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub settings: GraphSettings,
    pub aliases: Aliases,
}

impl Graph {
    pub fn new(settings: &GraphSettings) -> Self {
        Self { settings: settings.clone(), aliases: Aliases::new(&settings.aliases) }
    }
}

/// A relation as one line: `张伟 —colleague→ 李明`.
pub fn line(subject: &str, predicate: &str, object: &str) -> String {
    format!("{subject} —{predicate}→ {object}")
}

/// The graph's settings (`[graph]`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct GraphSettings {
    /// Extract entities and relations (with `extract_facts`).
    pub enabled: bool,
    /// More aliases: alias → canonical name (`"pay" = "payment service"`).
    pub aliases: std::collections::HashMap<String, String>,
    /// Two names of one type this similar (embeddings) are one entity.
    pub merge_similarity: f32,
    /// A query's words this similar to an entity's name (trigrams) name it.
    pub name_similarity: f32,
    /// A query this similar to an entity's name (embeddings) seeds the walk from it.
    pub seed_similarity: f32,
    /// How many hops a lookup walks from the entities it starts at (1..=3).
    pub max_depth: u8,
    /// Edges followed from each entity at the first hop, most recent first; half as many
    /// at each further hop.
    pub fan_out: i64,
    /// Relations a lookup reads at most.
    pub max_relations: i64,
    /// A user with at most this many relations (that hold) and entities has them kept in
    /// one row, read whole by a lookup and walked in memory; one with more is walked in
    /// the database, a statement per hop.
    pub scan_limit: i64,
    /// A relation's graph weight falls by this factor per hop beyond the first.
    pub hop_decay: f64,
    /// The tier weight of relations on search's scale.
    pub relation_weight: f64,
}

impl Default for GraphSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            aliases: Default::default(),
            merge_similarity: 0.9,
            name_similarity: 0.5,
            seed_similarity: 0.8,
            max_depth: 3,
            fan_out: 10,
            max_relations: 50,
            scan_limit: 1000,
            hop_decay: 0.8,
            relation_weight: 0.85,
        }
    }
}

impl GraphSettings {
    pub fn check(&self) -> Result<(), String> {
        if !(1..=3).contains(&self.max_depth) {
            return Err("graph.max_depth must be between 1 and 3".into());
        }
        if self.fan_out < 1 || self.max_relations < 1 {
            return Err("graph.fan_out and graph.max_relations must be at least 1".into());
        }
        if self.scan_limit < 0 {
            return Err("graph.scan_limit must not be negative".into());
        }
        for (name, value) in [
            ("merge_similarity", self.merge_similarity as f64),
            ("name_similarity", self.name_similarity as f64),
            ("seed_similarity", self.seed_similarity as f64),
            ("hop_decay", self.hop_decay),
            ("relation_weight", self.relation_weight),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(format!("graph.{name} must be between 0 and 1"));
            }
        }
        Ok(())
    }
}
