//! The one scale every tier is scored on (see [`super`]): a result's parts, how they
//! combine into its score and its explanation, and the rule that every turn takes one slot.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::SearchResult;
use super::features::{Among, Asked, Features};
use super::ranker::{Contribution, Ranker};
use engram_base::configuration::SearchSettings;
use engram_base::domain::{ResultKind, Role};
use engram_language::when;

/// What a result's score is made of (see the module documentation).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Explanation {
    /// Cosine similarity of the query and the result.
    pub similarity: f64,
    /// The share of the query's terms the result contains, each weighing by its rarity.
    pub keyword: f64,
    /// 1 − (1 − max(similarity, 0)) × (1 − keyword).
    pub relevance: f64,
    /// How strongly the walk reached a relation: its seed's weight × graph.hop_decay^(hop − 1)
    /// (relations only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph: Option<f64>,
    /// Hops from the entity the walk started at (relations only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hop: Option<i32>,
    /// A memory's decay score (facts and insights only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decay: Option<f64>,
    /// The tier's weight: 0.8 + 0.2 × decay for memories, `search.event_weight` for the
    /// user's own turns (× `search.other_turn_weight` for other roles'), 1 for summaries,
    /// `graph.relation_weight × (1 + graph) / 2` for relations.
    pub tier: f64,
    /// 1, or `search.outside_window_weight` outside the query's time phrase window.
    pub time: f64,
    /// The time phrase window, when the query has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<[DateTime<Utc>; 2]>,
    /// The blend's score, `relevance × tier × time`.
    pub blend: f64,
    /// The ranker that made the result's score: `learned` or `blend`.
    pub ranker: &'static str,
    /// How the score is made.
    pub formula: &'static str,
    /// Every feature of the result, by name: what the learned ranker weighs.
    pub features: Features,
    /// The learned ranker's bias (its log-odds with every feature 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bias: Option<f64>,
    /// Each of the learned ranker's terms: its value, weight and contribution to the
    /// log-odds, the largest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contributions: Option<Vec<Contribution>>,
}

/// The blend's formula.
const BLEND: &str = "score = relevance × tier × time; relevance = 1 − (1 − max(similarity, 0)) × (1 − keyword)";

/// The learned ranker's formula.
const LEARNED: &str = "score = 1 / (1 + exp(−(bias + Σ weight × value)))";

/// The parts of a result's score as its tier's SQL returns them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Parts {
    pub similarity: f64,
    pub keyword: f64,
    /// The share of the query's terms the result holds itself: a turn's `keyword` also
    /// counts half of those only its neighbours hold.
    pub own_keyword: f64,
    /// Facts and insights: the decay score.
    pub decay: Option<f64>,
    /// Relations: how strongly the walk reached it, and in how many hops.
    pub graph: Option<(f64, i32)>,
    /// When it happened: a turn's time, a memory's `valid_from`, a summary's span.
    pub span: Option<(DateTime<Utc>, DateTime<Utc>)>,
    pub tier: Tier,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Tier {
    #[default]
    Memory,
    /// A raw turn; `own` when the user said it.
    Event {
        own: bool,
    },
    Summary,
    /// A relation of the user's graph, with `graph.relation_weight`.
    Relation {
        weight: f64,
    },
}

impl Parts {
    pub fn memory(similarity: f64, keyword: f64, decay: f64, valid_from: DateTime<Utc>) -> Self {
        let span = Some((valid_from, valid_from));
        Self { similarity, keyword, own_keyword: keyword, decay: Some(decay), graph: None, span, tier: Tier::Memory }
    }

    /// A turn: `keyword` counts its neighbours' terms, `own_keyword` only its own.
    pub fn event(similarity: f64, (keyword, own_keyword): (f64, f64), at: DateTime<Utc>, role: Role) -> Self {
        let tier = Tier::Event { own: role == Role::User };
        Self { similarity, keyword, own_keyword, decay: None, graph: None, span: Some((at, at)), tier }
    }

    pub fn relation(similarity: f64, keyword: f64, graph: f64, hop: i32, weight: f64, since: DateTime<Utc>) -> Self {
        let tier = Tier::Relation { weight };
        let graph = Some((graph, hop));
        Self { similarity, keyword, own_keyword: keyword, decay: None, graph, span: Some((since, since)), tier }
    }

    pub fn summary(similarity: f64, keyword: f64, span: Option<(DateTime<Utc>, DateTime<Utc>)>) -> Self {
        Self { similarity, keyword, own_keyword: keyword, decay: None, graph: None, span, tier: Tier::Summary }
    }

    /// The result's explanation, whose `relevance × tier × time` is its score.
    pub fn explain(&self, settings: &SearchSettings, window: Option<when::Window>) -> Explanation {
        let relevance = relevance(self.similarity, self.keyword);
        let tier = match self.tier {
            Tier::Memory => 0.8 + 0.2 * self.decay.unwrap_or(1.0).clamp(0.0, 1.0),
            Tier::Event { own: true } => settings.event_weight,
            Tier::Event { own: false } => settings.event_weight * settings.other_turn_weight,
            Tier::Summary => 1.0,
            Tier::Relation { weight } => weight * (1.0 + self.graph.map_or(0.0, |(g, _)| g)) / 2.0,
        };
        let inside = match (window, self.span) {
            (Some(window), Some((start, end))) => window.overlaps(start, end),
            (Some(_), None) => false,
            (None, _) => true,
        };
        Explanation {
            similarity: self.similarity,
            keyword: self.keyword,
            relevance,
            graph: self.graph.map(|(g, _)| g),
            hop: self.graph.map(|(_, hop)| hop),
            decay: self.decay,
            tier,
            time: if inside { 1.0 } else { settings.outside_window_weight },
            window: window.map(|w| [w.since, w.until]),
            blend: 0.0,
            ranker: "blend",
            formula: BLEND,
            features: Features::default(),
            bias: None,
            contributions: None,
        }
    }
}

/// Scores `results` by `ranker` for the question `asked`, each with its explanation.
pub fn rank(results: &mut [SearchResult], ranker: &Ranker, settings: &SearchSettings, asked: &Asked, explain: bool) {
    // The blend needs no features unless they are to be shown.
    let weighed = matches!(ranker, Ranker::Learned(_));
    let among = match weighed || explain {
        true => super::features::among(results),
        false => vec![Among::default(); results.len()],
    };
    for (result, among) in results.iter_mut().zip(among) {
        let mut explanation = result.parts.explain(settings, asked.window);
        explanation.blend = explanation.score();
        if weighed || explain {
            explanation.features = Features::of(result, asked, among);
        }
        result.score = match ranker {
            Ranker::Blend => explanation.blend,
            Ranker::Learned(model) => model.score(&explanation.features),
        };
        if explain {
            if let Ranker::Learned(model) = ranker {
                let (bias, contributions) = model.contributions(&explanation.features);
                explanation.ranker = "learned";
                explanation.formula = LEARNED;
                explanation.bias = Some(bias);
                explanation.contributions = Some(contributions);
            }
            result.explanation = Some(explanation);
        }
    }
}

/// Meaning and words as two pieces of evidence that a result is relevant, either of
/// which may be enough: `1 − (1 − similarity) × (1 − keyword)`, a negative similarity
/// counting as none. Never below either part
/// (a paraphrase scores its similarity, keywords only ever help), and every term of the
/// query found counts for more than any similarity short of it.
fn relevance(similarity: f64, keyword: f64) -> f64 {
    1.0 - (1.0 - similarity.max(0.0)) * (1.0 - keyword)
}

impl Explanation {
    /// The blend's score of these parts.
    pub fn score(&self) -> f64 {
        self.relevance * self.tier * self.time
    }
}

/// Every turn takes one slot: a result whose source turns all come with a better-ranked
/// result (a fact and the turn it came from, two facts of one turn) is dropped.
pub fn one_slot_per_turn(ranked: Vec<SearchResult>) -> Vec<SearchResult> {
    let mut covered: HashSet<Uuid> = HashSet::new();
    let mut out = Vec::with_capacity(ranked.len());
    for result in ranked {
        // A summary covers whole sessions; a relation says something its turn's fact does not.
        let summary =
            matches!(result.kind, ResultKind::SessionSummary | ResultKind::PeriodSummary | ResultKind::Relation);
        if !summary && !result.source_event_ids.is_empty() {
            if result.source_event_ids.iter().all(|id| covered.contains(id)) {
                continue;
            }
            covered.extend(result.source_event_ids.iter().copied());
        }
        out.push(result);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(similarity: f64, keyword: f64, decay: f64) -> f64 {
        let at = DateTime::<Utc>::UNIX_EPOCH;
        Parts::memory(similarity, keyword, decay, at).explain(&SearchSettings::default(), None).score()
    }

    #[test]
    fn keywords_only_help_and_decay_moves_a_score_by_at_most_a_fifth() {
        assert_eq!(score(0.8, 0.0, 1.0), 0.8);
        assert!(score(0.3, 1.0, 1.0) > score(0.3, 0.0, 1.0));
        let fresh = score(0.7, 0.5, 1.0);
        let stale = score(0.7, 0.5, 0.0);
        assert!((stale / fresh - 0.8).abs() < 1e-9);
    }

    #[test]
    fn relevance_is_never_below_either_part_and_grows_with_both() {
        for (s, k) in [(0.0, 0.0), (0.6, 0.0), (0.0, 0.7), (0.3, 0.5), (0.9, 0.9), (-0.1, 0.4)] {
            let r = relevance(s, k);
            assert!(r >= s - 1e-12 && r >= k - 1e-12, "{s} {k}: {r}");
            assert!(relevance(s, k + 0.05) > r, "{s} {k}");
            assert!(s < 0.0 || relevance(s + 0.05, k) > r, "{s} {k}: a negative similarity counts as none");
        }
        assert_eq!(relevance(0.2, 1.0), 1.0, "every term found");
        assert!(relevance(0.35, 0.5) > relevance(0.6, 0.0), "words and meaning beat meaning alone");
    }

    #[test]
    fn outside_a_time_phrase_window_a_result_weighs_less() {
        let settings = SearchSettings::default();
        let day =
            |d: u32| chrono::NaiveDate::from_ymd_opt(2026, 5, d).unwrap().and_hms_opt(12, 0, 0).unwrap().and_utc();
        let window = when::Window { since: day(10), until: day(17) };
        let inside = Parts::event(0.6, (0.5, 0.5), day(12), Role::User).explain(&settings, Some(window));
        let outside = Parts::event(0.6, (0.5, 0.5), day(3), Role::User).explain(&settings, Some(window));
        let theirs = Parts::event(0.6, (0.5, 0.5), day(12), Role::Assistant).explain(&settings, Some(window));
        assert!((theirs.score() / inside.score() - settings.other_turn_weight).abs() < 1e-9);
        assert_eq!(inside.time, 1.0);
        assert!((outside.score() / inside.score() - settings.outside_window_weight).abs() < 1e-9);
        let summary = Parts::summary(0.6, 0.5, Some((day(1), day(11)))).explain(&settings, Some(window));
        assert_eq!(summary.time, 1.0, "a summary whose span overlaps the window is inside it");
    }
}
