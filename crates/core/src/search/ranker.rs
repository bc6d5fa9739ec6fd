//! How a lookup orders its candidates (`search.ranker`).
//!
//! - **learned**: a logistic model over each candidate's [`Features`],
//!   fitted on labelled evidence (`scripts/fit_ranker.py`, docs/evaluation.md) and read
//!   from `search.ranker_file` when the process starts. Its score is the probability
//!   that the candidate is evidence for the question,
//!   `1 / (1 + exp(−(bias + Σ weight × value)))`, where a term's value is one feature or
//!   the product of two (`similarity*own_turn`). The file also names the probability a
//!   lookup abstains below (`min_score`, chosen on questions that have no answer) and the
//!   floor of a context's lines.
//! - **blend** (the default): the hand-set `relevance × tier × time` of [`super::score`].
//!
//! A learned ranker whose file is missing or cannot be read is the blend, with a warning
//! that names the file and what is wrong with it: a lookup never fails for its ranker.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::features::{Features, NAMES};
use engram_base::configuration::{RankerChoice, SearchSettings};

/// What the blend drops below, and the floor of a context's lines, on its own scale.
const BLEND_MIN_SCORE: f64 = 0.3;
const BLEND_CONTEXT_MIN_SCORE: f64 = 0.2;

/// The weights file's `format`, and the versions of it this binary reads.
const FORMAT: &str = "engram-ranker";
const VERSION: u32 = 1;

#[derive(Debug, Clone)]
pub enum Ranker {
    Blend,
    Learned(Model),
}

/// A fitted logistic model.
#[derive(Debug, Clone)]
pub struct Model {
    bias: f64,
    terms: Vec<Term>,
    min_score: f64,
    context_min_score: f64,
}

#[derive(Debug, Clone)]
struct Term {
    name: String,
    factors: Vec<&'static str>,
    weight: f64,
}

/// The weights file as written by the fit.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WeightsFile {
    format: String,
    version: u32,
    /// The embedding model the similarities were measured with, and how the weights
    /// were fitted: for the reader, not the ranker.
    #[serde(default, rename = "embedding_model")]
    _embedding_model: Option<String>,
    #[serde(default, rename = "fitted")]
    _fitted: Option<serde_json::Value>,
    bias: f64,
    weights: BTreeMap<String, f64>,
    min_score: f64,
    context_min_score: f64,
}

/// One term's share of a learned score, in `explain`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Contribution {
    /// A feature, or two joined by `*`.
    pub term: String,
    pub value: f64,
    pub weight: f64,
    /// `weight × value`: what the term adds to the log-odds.
    pub contribution: f64,
}

impl Ranker {
    /// The ranker `settings` choose; the blend, with a warning, when the learned one's
    /// file cannot be read.
    pub fn from_settings(settings: &SearchSettings) -> Self {
        match settings.ranker {
            RankerChoice::Blend => Ranker::Blend,
            RankerChoice::Learned => match Model::read(&settings.ranker_file) {
                Ok(model) => Ranker::Learned(model),
                Err(problem) => {
                    tracing::warn!(
                        file = %settings.ranker_file.display(),
                        %problem,
                        "search.ranker is learned, but its weights file {} {problem}; ranking by the blend",
                        settings.ranker_file.display()
                    );
                    Ranker::Blend
                }
            },
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Ranker::Blend => "blend",
            Ranker::Learned(_) => "learned",
        }
    }

    /// What a lookup drops below unless the request says otherwise.
    pub fn min_score(&self, settings: &SearchSettings) -> f64 {
        settings.default_min_score.unwrap_or(match self {
            Ranker::Blend => BLEND_MIN_SCORE,
            Ranker::Learned(model) => model.min_score,
        })
    }

    /// The floor of a context's relevant lines.
    pub fn context_min_score(&self, settings: &SearchSettings) -> f64 {
        settings.context_min_score.unwrap_or(match self {
            Ranker::Blend => BLEND_CONTEXT_MIN_SCORE,
            Ranker::Learned(model) => model.context_min_score,
        })
    }
}

impl Model {
    /// Reads and checks a weights file; the error says what is wrong with it.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|err| format!("cannot be read ({err})"))?;
        Self::parse(&text)
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let file: WeightsFile = serde_json::from_str(text).map_err(|err| format!("is not a weights file ({err})"))?;
        if file.format != FORMAT {
            return Err(format!("has format {:?}, not {FORMAT:?}", file.format));
        }
        if file.version != VERSION {
            return Err(format!("is version {}, and this engram reads version {VERSION}", file.version));
        }
        for (key, value) in [("min_score", file.min_score), ("context_min_score", file.context_min_score)] {
            if !(0.0..=1.0).contains(&value) {
                return Err(format!("has {key} {value}, outside 0..1"));
            }
        }
        let mut terms = Vec::new();
        for (name, weight) in file.weights {
            if !weight.is_finite() {
                return Err(format!("has a weight for {name} that is not a number"));
            }
            let factors = name
                .split('*')
                .map(|factor| {
                    NAMES.iter().find(|known| **known == factor).copied().ok_or_else(|| {
                        format!("weighs {factor:?}, which is not a feature (the features are {})", NAMES.join(", "))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            terms.push(Term { name, factors, weight });
        }
        if !file.bias.is_finite() || terms.is_empty() {
            return Err("has no weights".to_owned());
        }
        Ok(Self { bias: file.bias, terms, min_score: file.min_score, context_min_score: file.context_min_score })
    }

    fn value(term: &Term, features: &Features) -> f64 {
        term.factors.iter().map(|f| features.get(f).unwrap_or(0.0)).product()
    }

    /// The probability that a candidate with `features` is evidence.
    pub fn score(&self, features: &Features) -> f64 {
        let z = self.bias + self.terms.iter().map(|t| t.weight * Self::value(t, features)).sum::<f64>();
        1.0 / (1.0 + (-z).exp())
    }

    /// Each term's share of the score, the largest first, and the bias.
    pub fn contributions(&self, features: &Features) -> (f64, Vec<Contribution>) {
        let mut parts: Vec<Contribution> = self
            .terms
            .iter()
            .map(|t| {
                let value = Self::value(t, features);
                Contribution { term: t.name.clone(), value, weight: t.weight, contribution: t.weight * value }
            })
            .collect();
        parts.sort_by(|a, b| b.contribution.abs().total_cmp(&a.contribution.abs()));
        (self.bias, parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(weights: &str) -> String {
        format!(
            r#"{{"format": "engram-ranker", "version": 1, "bias": -2.0, "weights": {weights},
                "min_score": 0.2, "context_min_score": 0.1}}"#
        )
    }

    #[test]
    fn a_learned_score_is_the_logistic_of_its_terms() {
        let model = Model::parse(&file(r#"{"similarity": 4.0, "similarity*own_turn": 1.0}"#)).unwrap();
        let features = Features { similarity: 0.5, own_turn: 1.0, ..Default::default() };
        let expected = 1.0 / (1.0 + (-(-2.0 + 4.0 * 0.5 + 1.0 * 0.5f64)).exp());
        assert!((model.score(&features) - expected).abs() < 1e-12);
        let (bias, parts) = model.contributions(&features);
        assert_eq!(bias, -2.0);
        assert_eq!(parts[0].term, "similarity");
        assert!((parts[0].contribution - 2.0).abs() < 1e-12);
        assert!((parts[1].contribution - 0.5).abs() < 1e-12);
    }

    #[test]
    fn a_bad_file_says_what_is_wrong() {
        let cases = [
            ("{", "is not a weights file"),
            (&file(r#"{"colour": 1.0}"#), "\"colour\", which is not a feature"),
            (&file("{}"), "has no weights"),
            (&file(r#"{"similarity": 1.0}"#).replace("\"version\": 1", "\"version\": 9"), "is version 9"),
            (&file(r#"{"similarity": 1.0}"#).replace("0.2", "1.5"), "min_score 1.5"),
        ];
        for (text, problem) in cases {
            let err = Model::parse(text).unwrap_err();
            assert!(err.contains(problem), "{err}");
        }
    }

    #[test]
    fn a_missing_file_ranks_by_the_blend() {
        let settings = SearchSettings {
            ranker: RankerChoice::Learned,
            ranker_file: "/nonexistent/learned.json".into(),
            ..SearchSettings::default()
        };
        let ranker = Ranker::from_settings(&settings);
        assert_eq!(ranker.name(), "blend");
        assert_eq!(ranker.min_score(&settings), BLEND_MIN_SCORE);
    }
}
