//! What a ranker knows of a candidate: one vector of named values, the same for every
//! tier, computed from what the tier's lookup returned and what the question asks
//! ([`Asked`]). The learned ranker ([`super::ranker`]) weighs them; `explain: true` shows
//! them; `engram eval --locomo FILE --features OUT.jsonl` writes them with a label for
//! fitting. Every value is 0 where it does not apply (a turn has no decay), so a weight
//! means the same for every tier it is multiplied with.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::SearchResult;
use super::score::Tier;
use engram_base::domain::ResultKind;
use engram_language::when::{self, Window};

/// One candidate's features. Names are those of the weights file.
#[derive(Debug, Clone, Copy, Default, Serialize, utoipa::ToSchema)]
pub struct Features {
    /// Cosine similarity of the query and the result (a turn's vector is made with the
    /// turn before it).
    pub similarity: f64,
    /// The weighted share of the query's terms the result holds, a turn's neighbours'
    /// counting half.
    pub keyword: f64,
    /// The share the result holds itself, without its neighbours.
    pub own_keyword: f64,
    /// 1 for a fact.
    pub fact: f64,
    /// 1 for an insight.
    pub insight: f64,
    /// 1 for a raw turn the user said.
    pub own_turn: f64,
    /// 1 for a raw turn of the assistant, a tool or the system.
    pub other_turn: f64,
    /// 1 for a session or period summary.
    pub summary: f64,
    /// 1 for a relation of the user's graph.
    pub relation: f64,
    /// A memory's decay score (0..1).
    pub decay: f64,
    /// How surely the graph walk reached a relation: 1 for an edge of an entity the
    /// question names, less for each further hop.
    pub graph: f64,
    /// How recent it is: 1 / (1 + its age in months).
    pub recency: f64,
    /// 1 when the question names a time and the result happened within it.
    pub inside_window: f64,
    /// 1 when the question names a time and the result happened outside it.
    pub outside_window: f64,
    /// The share of the names the question writes that the result holds.
    pub names: f64,
    /// 1 when the result says when something happened.
    pub says_when: f64,
    /// 1 when the question asks when and the result says when.
    pub answers_when: f64,
    /// How long it is: ln(1 + tokens) / ln(128), at most 1 ("Yes!" is short).
    pub length: f64,
    /// 1 / (1 + its place among the lookup's candidates by similarity, from 0).
    pub similarity_rank: f64,
    /// 1 / (1 + its place by keyword share, from 0); 0 when it holds no term.
    pub keyword_rank: f64,
    /// The best similarity among the candidates less its own.
    pub similarity_gap: f64,
    /// For a turn, the best similarity of the other candidate turns of its session: a
    /// session that talks about what the question asks.
    pub session_best: f64,
    /// For a turn, the other candidate turns of its session, by fives, at most 1.
    pub session_turns: f64,
}

/// A candidate's place among the lookup's others (the last five [`Features`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Among {
    similarity_rank: f64,
    keyword_rank: f64,
    similarity_gap: f64,
    session_best: f64,
    session_turns: f64,
}

/// Each of `results`' place among them.
pub fn among(results: &[SearchResult]) -> Vec<Among> {
    let descending = |values: Vec<f64>| {
        let mut sorted = values.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        (values, sorted)
    };
    let (similarity, by_similarity) = descending(results.iter().map(|r| r.parts.similarity).collect());
    let (keyword, by_keyword) = descending(results.iter().map(|r| r.parts.keyword).collect());
    let place = |sorted: &[f64], value: f64| sorted.iter().position(|v| *v == value).unwrap_or(0) as f64;
    let best = by_similarity.first().copied().unwrap_or(0.0);
    let mut sessions: HashMap<&str, Vec<(usize, f64)>> = HashMap::new();
    for (i, r) in results.iter().enumerate() {
        if let (ResultKind::Event, Some(session)) = (r.kind, r.session_id.as_deref()) {
            sessions.entry(session).or_default().push((i, r.parts.similarity));
        }
    }
    results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let session = r.session_id.as_deref().filter(|_| r.kind == ResultKind::Event);
            let others: Vec<f64> = session
                .and_then(|s| sessions.get(s))
                .into_iter()
                .flatten()
                .filter(|(j, _)| *j != i)
                .map(|(_, sim)| *sim)
                .collect();
            Among {
                similarity_rank: 1.0 / (1.0 + place(&by_similarity, similarity[i])),
                keyword_rank: if keyword[i] > 0.0 { 1.0 / (1.0 + place(&by_keyword, keyword[i])) } else { 0.0 },
                similarity_gap: best - similarity[i],
                session_best: others.iter().copied().fold(0.0, f64::max),
                session_turns: (others.len() as f64 / 5.0).min(1.0),
            }
        })
        .collect()
}

/// The names of [`Features`], in the order [`Features::get`] knows them.
pub const NAMES: [&str; 23] = [
    "similarity",
    "keyword",
    "own_keyword",
    "fact",
    "insight",
    "own_turn",
    "other_turn",
    "summary",
    "relation",
    "decay",
    "graph",
    "recency",
    "inside_window",
    "outside_window",
    "names",
    "says_when",
    "answers_when",
    "length",
    "similarity_rank",
    "keyword_rank",
    "similarity_gap",
    "session_best",
    "session_turns",
];

/// What a question asks, worked out once per lookup.
pub struct Asked {
    pub window: Option<Window>,
    /// The words the question writes as names, lowercased.
    pub names: Vec<String>,
    pub asks_when: bool,
    pub now: DateTime<Utc>,
}

impl Asked {
    pub fn new(question: &str, window: Option<Window>, now: DateTime<Utc>) -> Self {
        let names = engram_language::question_names::candidates(question);
        Self { window, names, asks_when: when::asks_when(question), now }
    }
}

impl Features {
    /// The features of `result` for the question `asked`, `among` the lookup's candidates.
    pub fn of(result: &SearchResult, asked: &Asked, among: Among) -> Self {
        let parts = &result.parts;
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let (start, end) = parts.span.unzip();
        let inside = match (asked.window, parts.span) {
            (Some(window), Some((start, end))) => Some(window.overlaps(start, end)),
            (Some(_), None) => Some(false),
            (None, _) => None,
        };
        let age_days = end.map(|end| (asked.now - end).num_seconds().max(0) as f64 / 86_400.0);
        let lower = result.content.to_lowercase();
        let names = if asked.names.is_empty() {
            0.0
        } else {
            let held = asked.names.iter().filter(|n| engram_language::terms::holds(&lower, n)).count();
            held as f64 / asked.names.len() as f64
        };
        let said = start.unwrap_or(asked.now);
        let says_when = when::says_when(&result.content, said);
        let tokens = engram_language::text::estimate_tokens(&result.content) as f64;
        Self {
            similarity: parts.similarity,
            keyword: parts.keyword,
            own_keyword: parts.own_keyword,
            fact: flag(result.kind == ResultKind::Fact),
            insight: flag(result.kind == ResultKind::Insight),
            own_turn: flag(parts.tier == Tier::Event { own: true }),
            other_turn: flag(parts.tier == Tier::Event { own: false }),
            summary: flag(parts.tier == Tier::Summary),
            relation: flag(matches!(parts.tier, Tier::Relation { .. })),
            decay: parts.decay.unwrap_or(0.0).clamp(0.0, 1.0),
            graph: parts.graph.map_or(0.0, |(g, _)| g),
            recency: age_days.map_or(0.0, |days| 1.0 / (1.0 + days / 30.0)),
            inside_window: flag(inside == Some(true)),
            outside_window: flag(inside == Some(false)),
            names,
            says_when: flag(says_when),
            answers_when: flag(says_when && asked.asks_when),
            length: ((1.0 + tokens).ln() / 128f64.ln()).min(1.0),
            similarity_rank: among.similarity_rank,
            keyword_rank: among.keyword_rank,
            similarity_gap: among.similarity_gap,
            session_best: among.session_best,
            session_turns: among.session_turns,
        }
    }

    /// The feature called `name`.
    pub fn get(&self, name: &str) -> Option<f64> {
        Some(match name {
            "similarity" => self.similarity,
            "keyword" => self.keyword,
            "own_keyword" => self.own_keyword,
            "fact" => self.fact,
            "insight" => self.insight,
            "own_turn" => self.own_turn,
            "other_turn" => self.other_turn,
            "summary" => self.summary,
            "relation" => self.relation,
            "decay" => self.decay,
            "graph" => self.graph,
            "recency" => self.recency,
            "inside_window" => self.inside_window,
            "outside_window" => self.outside_window,
            "names" => self.names,
            "says_when" => self.says_when,
            "answers_when" => self.answers_when,
            "length" => self.length,
            "similarity_rank" => self.similarity_rank,
            "keyword_rank" => self.keyword_rank,
            "similarity_gap" => self.similarity_gap,
            "session_best" => self.session_best,
            "session_turns" => self.session_turns,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_a_feature_and_every_feature_has_a_name() {
        let features = Features { length: 0.5, ..Default::default() };
        for name in NAMES {
            assert!(features.get(name).is_some(), "{name}");
        }
        let json = serde_json::to_value(features).unwrap();
        assert_eq!(json.as_object().unwrap().len(), NAMES.len(), "{json}");
        assert_eq!(features.get("length"), Some(0.5));
        assert_eq!(features.get("colour"), None);
    }
}
