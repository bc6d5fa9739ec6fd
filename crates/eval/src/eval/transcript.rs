//! What a user would pick instead of engram's memory: search over the raw transcript.
//! Three retrievers over a conversation's turns, each ranking every turn for a
//! question — BM25 (Okapi, k1 = 1.2, b = 0.75), dense (cosine of the built-in
//! embedder's vectors) and hybrid (both fused by reciprocal rank, k = 60) — scored
//! the way engram's lookups are: evidence recall in the top k, and whether the answer
//! is in the context the ranked turns make (dated lines, as `/context` writes them).

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use engram_base::models::Embedding;

/// One turn of the transcript.
pub struct Turn {
    pub dia_id: String,
    pub at: DateTime<Utc>,
    /// `Speaker: text`.
    pub line: String,
}

/// The retrievers' names, in report order.
pub const RETRIEVERS: [&str; 3] = ["bm25", "dense", "hybrid"];

/// The transcript of one conversation, indexed for BM25 and dense retrieval.
pub struct Transcript {
    pub turns: Vec<Turn>,
    vectors: Vec<Embedding>,
    /// Term frequencies per turn, and turn lengths in terms.
    bags: Vec<HashMap<String, u32>>,
    document_frequency: HashMap<String, u32>,
    mean_length: f64,
}

impl Transcript {
    pub fn new(turns: Vec<Turn>, vectors: Vec<Embedding>) -> Self {
        let bags: Vec<HashMap<String, u32>> = turns
            .iter()
            .map(|t| {
                let mut bag = HashMap::new();
                for word in words(&t.line) {
                    *bag.entry(word).or_insert(0) += 1;
                }
                bag
            })
            .collect();
        let mut document_frequency = HashMap::new();
        for bag in &bags {
            for word in bag.keys() {
                *document_frequency.entry(word.clone()).or_insert(0) += 1;
            }
        }
        let total: u32 = bags.iter().map(|b| b.values().sum::<u32>()).sum();
        let mean_length = total as f64 / bags.len().max(1) as f64;
        Self { turns, vectors, bags, document_frequency, mean_length }
    }

    /// Turn indexes best first, by `retriever` (one of [`RETRIEVERS`]).
    pub fn rank(&self, retriever: &str, question: &str, vector: &Embedding) -> Vec<usize> {
        match retriever {
            "bm25" => self.bm25(question),
            "dense" => self.dense(vector),
            _ => fuse(&[self.bm25(question), self.dense(vector)]),
        }
    }

    fn bm25(&self, question: &str) -> Vec<usize> {
        let (k1, b) = (1.2, 0.75);
        let n = self.bags.len() as f64;
        let query: Vec<String> = words(question);
        let mut scored: Vec<(f64, usize)> = self
            .bags
            .iter()
            .enumerate()
            .map(|(i, bag)| {
                let length: u32 = bag.values().sum();
                let score = query
                    .iter()
                    .filter_map(|w| {
                        let tf = *bag.get(w)? as f64;
                        let df = *self.document_frequency.get(w)? as f64;
                        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                        Some(idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * length as f64 / self.mean_length)))
                    })
                    .sum::<f64>();
                (score, i)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().map(|(_, i)| i).collect()
    }

    fn dense(&self, vector: &Embedding) -> Vec<usize> {
        let mut scored: Vec<(f32, usize)> =
            self.vectors.iter().enumerate().map(|(i, v)| (v.cosine(vector), i)).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().map(|(_, i)| i).collect()
    }

    /// Evidence recall at 5 and 10, the answer within 256 and 1,024 tokens of the ranked
    /// turns as dated lines, and the evidence within them.
    pub fn score(&self, ranked: &[usize], answer: &str, evidence: &[String]) -> [f64; 6] {
        let recall_at = |k: usize| {
            let top: Vec<&str> = ranked.iter().take(k).map(|&i| self.turns[i].dia_id.as_str()).collect();
            super::score::recall(evidence, &top)
        };
        let in_context = |budget: usize| {
            let mut text = String::new();
            let mut shown = Vec::new();
            let mut used = 0;
            for &i in ranked {
                let line = format!("- {}", engram_language::text::dated(self.turns[i].at, &self.turns[i].line));
                let tokens = engram_language::text::estimate_tokens(&line) + 1;
                if used + tokens > budget {
                    break;
                }
                used += tokens;
                text.push_str(&line);
                text.push('\n');
                shown.push(self.turns[i].dia_id.as_str());
            }
            (super::score::answer_in(&text, answer), super::score::recall(evidence, &shown))
        };
        let ((answer_256, evidence_256), (answer_1024, evidence_1024)) = (in_context(256), in_context(1024));
        [recall_at(5), recall_at(10), answer_256, answer_1024, evidence_256, evidence_1024]
    }
}

/// Reciprocal rank fusion: Σ 1 / (60 + rank) over the rankings.
fn fuse(rankings: &[Vec<usize>]) -> Vec<usize> {
    let mut scores: HashMap<usize, f64> = HashMap::new();
    for ranking in rankings {
        for (rank, &i) in ranking.iter().enumerate() {
            *scores.entry(i).or_default() += 1.0 / (60.0 + rank as f64 + 1.0);
        }
    }
    let mut scored: Vec<(f64, usize)> = scores.into_iter().map(|(i, s)| (s, i)).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, i)| i).collect()
}

/// Lowercased words without stopwords, as search's keyword half sees them.
fn words(text: &str) -> Vec<String> {
    engram_language::terms::words(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reciprocal_rank_fusion_prefers_what_both_rank_high() {
        let fused = fuse(&[vec![0, 1, 2], vec![2, 1, 0], vec![1, 2, 0]]);
        assert_eq!(fused[0], 1);
    }

    #[test]
    fn bm25_prefers_rare_words() {
        let at = DateTime::<Utc>::UNIX_EPOCH;
        let turn = |i: usize, line: &str| Turn { dia_id: format!("D1:{i}"), at, line: line.into() };
        let lines = ["we like hiking", "we like hiking and pottery", "we like tea", "we like cats"];
        let turns: Vec<Turn> = lines.iter().enumerate().map(|(i, l)| turn(i, l)).collect();
        let vectors = (0..4).map(|_| Embedding::new(vec![1.0, 0.0], 2).unwrap()).collect();
        let transcript = Transcript::new(turns, vectors);
        assert_eq!(transcript.bm25("pottery, like")[0], 1);
    }
}
