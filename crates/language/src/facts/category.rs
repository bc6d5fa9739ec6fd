//! What a memory is about: the categories facts are sorted into, by the rules here, by
//! an LLM, or by the person who adds one.

use serde::{Deserialize, Serialize};

/// A memory's category; any other name is refused where it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Identity,
    Personal,
    Preference,
    Project,
    Technical,
    Decision,
    Event,
    Lesson,
    Statement,
    Relationship,
    Health,
    Finance,
    Other,
}

impl Category {
    pub const ALL: [Self; 13] = [
        Self::Identity,
        Self::Personal,
        Self::Preference,
        Self::Project,
        Self::Technical,
        Self::Decision,
        Self::Event,
        Self::Lesson,
        Self::Statement,
        Self::Relationship,
        Self::Health,
        Self::Finance,
        Self::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Identity => "identity",
            Self::Personal => "personal",
            Self::Preference => "preference",
            Self::Project => "project",
            Self::Technical => "technical",
            Self::Decision => "decision",
            Self::Event => "event",
            Self::Lesson => "lesson",
            Self::Statement => "statement",
            Self::Relationship => "relationship",
            Self::Health => "health",
            Self::Finance => "finance",
            Self::Other => "other",
        }
    }

    /// The category of that name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// Every name, for a message or a prompt: `identity, personal, …`.
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored category's name read back.
impl TryFrom<String> for Category {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        Self::parse(&name).ok_or_else(|| format!("`{name}` is no category"))
    }
}

#[cfg(test)]
mod tests {
    use super::Category;

    #[test]
    fn a_category_reads_back_as_it_is_written() {
        for category in Category::ALL {
            assert_eq!(Category::parse(category.as_str()), Some(category));
            assert_eq!(serde_json::to_value(category).unwrap(), category.as_str());
        }
        assert_eq!(Category::parse("Identity"), None);
        assert_eq!(Category::try_from("hobby".to_owned()), Err("`hobby` is no category".to_owned()));
    }
}
