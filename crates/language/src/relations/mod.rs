//! Relations read from sentences without a model, English and Chinese: the kinds of
//! entity and the predicates a relation states, and the rules that find them.
//!
//! [`extract`] reads a sentence clause by clause ([`clauses`]): by its verbs
//! ([`patterns`]) or else by the clause's shape ([`frame`]). A name is a [`mention`]
//! with a kind (the lexicon of technologies, the words' shape, the words around it);
//! [`names`] knows a name's other spellings; [`introductions`] reads the user's own
//! name; [`segmented`] cuts Chinese names where a segmenter says words end.

pub mod clauses;
pub mod extract;
mod frame;
pub mod introductions;
pub mod mention;
pub mod names;
mod patterns;
pub mod segmented;

pub use names::Aliases;

use serde::{Deserialize, Serialize};

/// What an entity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
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

/// A stored type's name read back.
impl TryFrom<String> for EntityType {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        Self::parse(&name).ok_or_else(|| format!("`{name}` is no entity type"))
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

#[cfg(test)]
mod tests {
    use super::{EntityType as T, Predicate as P};

    #[test]
    fn a_predicate_joins_only_the_kinds_it_can() {
        let cases = [
            (P::WorksAt, T::Person, T::Organization, true),
            (P::WorksAt, T::Person, T::Technology, false),
            (P::LivesIn, T::Person, T::Place, true),
            (P::LivesIn, T::Person, T::Project, false),
            (P::Colleague, T::Person, T::Technology, false),
            (P::Uses, T::Project, T::Technology, true),
            (P::Uses, T::Project, T::Person, false),
            (P::WorksOn, T::Person, T::Project, true),
            (P::WorksOn, T::Project, T::Technology, false),
            // An unknown kind is no evidence against an edge.
            (P::WorksAt, T::Other, T::Other, true),
        ];
        for (predicate, subject, object, joins) in cases {
            assert_eq!(predicate.joins(subject, object), joins, "{predicate:?} {subject:?} {object:?}");
        }
    }

    #[test]
    fn the_lexicon_knows_a_technology_by_its_whole_name() {
        for (name, named) in [(" PostgreSQL ", true), ("PostgreSQL 17 cluster at Globex", false), ("Globex", false)] {
            assert_eq!(crate::technologies::is_named(name), named, "{name}");
        }
    }
}
