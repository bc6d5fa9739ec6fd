//! `engram eval --locomo FILE --features OUT.jsonl`: the labelled candidates the learned
//! ranker is fitted on (`scripts/fit_ranker.py`). For every question (categories 1–5),
//! one lookup as a client makes it but deeper (`limit` 50, every kind, `explain`), and
//! one JSON line for the question and one for each candidate. Each question of categories
//! 1–4 is also asked of the conversation before, which does not answer it (category 0,
//! no evidence): a question whose best candidates are no evidence at all.
//!
//! - `{"type": "question", "id", "sample", "category", "question", "evidence": [dia ids]}`
//! - `{"type": "candidate", "question": id, "rank", "kind", "score", "blend", "features",
//!   "dia": [dia ids of its sources], "evidence": whether one of them is the question's}`
//!
//! A summary's sources are its whole session, so it names none (as the figures count it).
//! `engram eval --features OUT.jsonl` does the same for the scenarios (`eval/`): a
//! candidate is evidence when it holds one of the question's `expected` texts (a summary
//! never is), and a question that expects no hit has none.
//! The lookups are made to look, not to serve: they leave no access statistics.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Harness;
use super::locomo::{EVERY_KIND, TENANT};

/// How deep each question's candidates are read.
const DEPTH: usize = 50;

/// The open file.
pub struct Features(std::io::BufWriter<std::fs::File>);

/// One question as the file records it.
pub struct Question<'a> {
    pub id: String,
    /// The conversation (or scenario) it is asked in: the folds of the fit.
    pub sample: &'a str,
    /// LoCoMo's category; 0 for a question with no answer in what is asked.
    pub category: i64,
    pub user: &'a str,
    pub text: &'a str,
    /// What answers it: the dia ids of its evidence turns (LoCoMo), or texts one of which
    /// an answering candidate holds (a scenario's `expected`).
    pub evidence: Evidence<'a>,
}

#[derive(Clone, Copy)]
pub enum Evidence<'a> {
    Turns(&'a [String]),
    Texts(&'a [String]),
}

impl Features {
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        let file = std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Self(std::io::BufWriter::new(file)))
    }

    /// Looks `question` up (in LoCoMo's tenant) and writes it and its candidates.
    pub async fn write(&mut self, harness: &Harness, question: &Question<'_>) -> anyhow::Result<()> {
        self.write_as(harness, &harness.key, TENANT, question).await
    }

    /// Looks `question` up with `key` (of `tenant`) and writes it and its candidates.
    pub async fn write_as(
        &mut self,
        harness: &Harness,
        key: &str,
        tenant: &str,
        question: &Question<'_>,
    ) -> anyhow::Result<()> {
        let found = harness
            .post_as(
                key,
                "/v1/search",
                &json!({"user_id": question.user, "query": question.text, "limit": DEPTH, "min_score": 0.0,
                        "kinds": EVERY_KIND, "explain": true}),
            )
            .await?;
        harness.discard_access(tenant, question.user)?;
        let results = found["results"].as_array().cloned().unwrap_or_default();
        let sources = |r: &Value| -> Vec<Uuid> {
            if r["kind"].as_str().is_some_and(|k| k.ends_with("_summary")) {
                return Vec::new();
            }
            r["source_event_ids"].as_array().into_iter().flatten().filter_map(|s| s.as_str()?.parse().ok()).collect()
        };
        let ids: Vec<Uuid> = results.iter().flat_map(sources).collect();
        let dia = super::locomo::dia_ids(harness, &ids).await?;
        let turns = match question.evidence {
            Evidence::Turns(turns) => turns,
            Evidence::Texts(_) => &[],
        };
        let line = json!({"type": "question", "id": question.id, "sample": question.sample,
                          "category": question.category, "question": question.text, "evidence": turns});
        writeln!(self.0, "{line}")?;
        for (rank, r) in results.iter().enumerate() {
            let named: Vec<&String> = sources(r).iter().filter_map(|id| dia.get(id)).collect();
            let summary = r["kind"].as_str().is_some_and(|k| k.ends_with("_summary"));
            let content = r["content"].as_str().unwrap_or_default().to_lowercase();
            let evidence = match question.evidence {
                Evidence::Turns(turns) => named.iter().any(|d| turns.contains(d)),
                Evidence::Texts(texts) => !summary && texts.iter().any(|t| content.contains(&t.to_lowercase())),
            };
            let explanation = &r["explanation"];
            let line = json!({"type": "candidate", "question": question.id, "rank": rank + 1, "kind": r["kind"],
                              "score": r["score"], "blend": explanation["blend"], "features": explanation["features"],
                              "dia": named, "evidence": evidence});
            writeln!(self.0, "{line}")?;
        }
        Ok(())
    }

    pub fn finish(mut self) -> anyhow::Result<()> {
        self.0.flush()?;
        Ok(())
    }
}
