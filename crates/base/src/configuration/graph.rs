//! The graph's settings (`[graph]`).

use serde::{Deserialize, Serialize};

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
