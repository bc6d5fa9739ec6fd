//! The LoCoMo loader. Each sample's two speakers become two users of one tenant: a
//! speaker's own turns are that user's `user` events and the other speaker's turns are
//! `assistant` events in the same session, so each user holds the whole conversation.
//! Sessions keep `session_N_date_time` as their time and every event its `dia_id` in
//! metadata. After the last session the consolidation jobs run, and each `qa` item of
//! categories 1–4 is asked as a client would: one lookup and one context of the user the
//! question names. Beside engram, the same figures for search over the raw transcript
//! ([`super::transcript`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::Context;
use chrono::{DateTime, Duration, Utc};
use engram_language::when::written::spoken_time;
use serde_json::{Value, json};
use uuid::Uuid;

use super::score::{answer_in, recall};
use super::transcript::{RETRIEVERS, Transcript, Turn};
use super::{Harness, diagnose};
use engram_base::configuration::Settings;

const JOBS: &[&str] = &["embed_events", "extract_facts", "summarize_sessions", "dedup"];

/// The tenant the conversations are stored in.
pub const TENANT: &str = "locomo";

/// Every kind a lookup can return: a client's lookup asks for all of them.
pub const EVERY_KIND: [&str; 6] = ["fact", "insight", "event", "session_summary", "period_summary", "relation"];

/// Evidence recall at 5 and 10, answer in context at 256 and 1,024 tokens, evidence in
/// context at 256 and 1,024 tokens.
type Figures = [f64; 6];

/// With `diagnose`, also where each question's evidence is lost ([`diagnose`]); with
/// `features`, every question's candidates written there ([`super::features`]).
pub async fn run(settings: &Settings, file: &Path, diagnose: bool, features: Option<&Path>) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let samples: Vec<Value> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not LoCoMo JSON (an array of samples)", file.display()))?;
    let harness = Harness::start(settings, TENANT).await?;
    let mut engram: BTreeMap<String, Vec<Figures>> = BTreeMap::new();
    let mut transcript_figures: BTreeMap<&str, BTreeMap<String, Vec<Figures>>> = BTreeMap::new();
    let mut questions = Vec::new();
    let mut traces: BTreeMap<String, Vec<diagnose::Trace>> = BTreeMap::new();
    let mut features = features.map(super::features::Features::create).transpose()?;
    let mut previous: Option<(String, Vec<(String, String)>)> = None;
    for (n, sample) in samples.iter().enumerate() {
        let id = sample["sample_id"].as_str().map(str::to_owned).unwrap_or_else(|| format!("sample{n}"));
        eprintln!("eval: LoCoMo {id}");
        let (speakers, last) = ingest(&harness, &id, &sample["conversation"]).await?;
        let turns = all_turns(&sample["conversation"]);
        let texts: Vec<String> = turns.iter().map(|t| t.line.clone()).collect();
        let vectors = harness.executor.models.embedder.embed(&texts).await?;
        let transcript = Transcript::new(turns, vectors);
        let end = last + Duration::days(1);
        let jobs: Vec<String> = JOBS.iter().map(|j| (*j).to_owned()).collect();
        harness.run_jobs(&jobs, &engram_core::jobs::Scope::all(), end).await?;
        harness.clock.set(end);
        for (n, qa) in sample["qa"].as_array().into_iter().flatten().enumerate() {
            let question = qa["question"].as_str().unwrap_or_default();
            if let (Some(out), Some(category)) = (features.as_mut(), qa["category"].as_i64()) {
                let evidence: Vec<String> = qa["evidence"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e.as_str().map(str::to_owned))
                    .collect();
                let user = asked(&speakers, question);
                let question = super::features::Question {
                    id: format!("{id}/{n}"),
                    sample: &id,
                    category,
                    user,
                    text: question,
                    evidence: super::features::Evidence::Turns(&evidence),
                };
                out.write(&harness, &question).await?;
                // Asked of the conversation before, it has no answer there.
                if let Some((before, their_speakers)) = &previous
                    && (1..=4).contains(&category)
                {
                    let question = super::features::Question {
                        id: format!("{before}/elsewhere/{id}/{n}"),
                        sample: before,
                        category: 0,
                        user: &their_speakers[0].1,
                        text: question.text,
                        evidence: super::features::Evidence::Turns(&[]),
                    };
                    out.write(&harness, &question).await?;
                }
            }
            let Some(category) = qa["category"].as_i64().filter(|c| (1..=4).contains(c)) else { continue };
            let answer = match &qa["answer"] {
                Value::String(s) => s.clone(),
                Value::Null => continue,
                other => other.to_string(),
            };
            let evidence: Vec<String> =
                qa["evidence"].as_array().into_iter().flatten().filter_map(|e| e.as_str().map(str::to_owned)).collect();
            let user = asked(&speakers, question);
            let asked = ask(&harness, user, question, &answer, &evidence).await?;
            let figures = asked.figures;
            engram.entry(category.to_string()).or_default().push(figures);
            let mut row = json!({"sample": id, "category": category, "user": user, "question": question,
                                 "answer": answer, "evidence": evidence, "evidence_recall_at_5": figures[0],
                                 "evidence_recall_at_10": figures[1], "answer_in_context_256": figures[2],
                                 "answer_in_context_1024": figures[3], "evidence_in_context_256": figures[4],
                                 "evidence_in_context_1024": figures[5], "context_1024": asked.context});
            if diagnose {
                let served = diagnose::Served { top: &asked.top, context: &asked.items };
                let found =
                    diagnose::trace(&harness, user, question, &evidence, &served, settings.search.max_limit).await?;
                row["diagnosis"] = found.iter().map(diagnose::Trace::json).collect();
                traces.entry(category.to_string()).or_default().extend(found);
            }
            questions.push(row);
            let vector = harness.executor.models.embedder.embed_one(question).await?;
            for retriever in RETRIEVERS {
                let ranked = transcript.rank(retriever, question, &vector);
                let figures = transcript.score(&ranked, &answer, &evidence);
                transcript_figures.entry(retriever).or_default().entry(category.to_string()).or_default().push(figures);
            }
        }
        previous = Some((id.clone(), speakers.clone()));
    }
    if let Some(out) = features {
        out.finish()?;
    }
    let mut retrievers = serde_json::Map::new();
    retrievers.insert("engram".into(), summarize_categories(&engram));
    for (name, figures) in &transcript_figures {
        retrievers.insert(format!("transcript_{name}"), summarize_categories(figures));
    }
    let (events, kept) = harness.compression().await?;
    let storage = harness.event_storage().await?;
    let diagnosis = diagnose.then(|| diagnose::summarize(&traces));
    Ok(json!({"locomo": {"samples": samples.len(), "retrievers": retrievers, "questions": questions,
                         "diagnosis": diagnosis},
              "raw_events": events, "memory_items": kept,
              "storage_ratio": if events > 0 { kept as f64 / events as f64 } else { 0.0 },
              "event_storage": storage}))
}

/// Per category and overall: questions and the four figures' means.
fn summarize_categories(per_category: &BTreeMap<String, Vec<Figures>>) -> Value {
    let summarize = |rows: &[Figures]| {
        let mean =
            |i: usize| if rows.is_empty() { 0.0 } else { rows.iter().map(|r| r[i]).sum::<f64>() / rows.len() as f64 };
        json!({"questions": rows.len(), "evidence_recall_at_5": mean(0), "evidence_recall_at_10": mean(1),
               "answer_in_context_256": mean(2), "answer_in_context_1024": mean(3),
               "evidence_in_context_256": mean(4), "evidence_in_context_1024": mean(5)})
    };
    let all: Vec<Figures> = per_category.values().flatten().copied().collect();
    let categories: serde_json::Map<String, Value> =
        per_category.iter().map(|(c, rows)| (c.clone(), summarize(rows))).collect();
    json!({"categories": categories, "overall": summarize(&all)})
}

/// The user a client would ask: the speaker the question names (when it names exactly
/// one), otherwise the first speaker. Either holds the whole conversation.
fn asked<'a>(speakers: &'a [(String, String)], question: &str) -> &'a str {
    let words: Vec<String> = question.split(|c: char| !c.is_alphanumeric()).map(str::to_lowercase).collect();
    let named: Vec<&(String, String)> = speakers
        .iter()
        .filter(|(name, _)| name.split_whitespace().next().is_some_and(|first| words.contains(&first.to_lowercase())))
        .collect();
    match named.as_slice() {
        [(_, user)] => user,
        _ => &speakers[0].1,
    }
}

/// Stores one conversation for both speakers; returns the speakers with their users, and
/// the last session's time.
async fn ingest(
    harness: &Harness,
    sample: &str,
    conversation: &Value,
) -> anyhow::Result<(Vec<(String, String)>, DateTime<Utc>)> {
    let speakers =
        [conversation["speaker_a"].as_str().unwrap_or("A"), conversation["speaker_b"].as_str().unwrap_or("B")];
    let user = |speaker: &str| format!("{sample}-{}", speaker.to_lowercase().replace(char::is_whitespace, "_"));
    let mut last = DateTime::<Utc>::MIN_UTC;
    for n in 1.. {
        let Some(turns) = conversation[format!("session_{n}")].as_array() else { break };
        let at = conversation[format!("session_{n}_date_time")]
            .as_str()
            .and_then(spoken_time)
            .unwrap_or(last + Duration::days(1));
        // Replayed as it happened: the session's turns arrive at its end, on the clock
        // that ingest checks `created_at` against.
        harness.clock.set(at + Duration::seconds(turns.len() as i64 * 30));
        for speaker in speakers {
            let events: Vec<Value> = turns
                .iter()
                .enumerate()
                .filter(|(_, t)| t["text"].as_str().is_some_and(|s| !s.trim().is_empty()))
                .map(|(i, t)| {
                    let role = if t["speaker"].as_str() == Some(speaker) { "user" } else { "assistant" };
                    json!({"user_id": user(speaker), "session_id": format!("session_{n}"), "role": role, "content": t["text"],
                           "created_at": (at + Duration::seconds(i as i64 * 30)).to_rfc3339(), "metadata": {"dia_id": t["dia_id"]}})
                })
                .collect();
            for chunk in events.chunks(500) {
                harness.post("/v1/events", &json!({"events": chunk})).await?;
            }
        }
        last = last.max(at + Duration::seconds(turns.len() as i64 * 30));
    }
    Ok((speakers.iter().map(|s| ((*s).to_owned(), user(s))).collect(), last))
}

/// Every turn of the conversation, on its session's clock as ingest stores it.
fn all_turns(conversation: &Value) -> Vec<Turn> {
    let mut turns = Vec::new();
    let mut last = DateTime::<Utc>::MIN_UTC;
    for n in 1.. {
        let Some(session) = conversation[format!("session_{n}")].as_array() else { break };
        let at = conversation[format!("session_{n}_date_time")]
            .as_str()
            .and_then(spoken_time)
            .unwrap_or(last + Duration::days(1));
        last = last.max(at + Duration::seconds(session.len() as i64 * 30));
        for (i, t) in session.iter().enumerate() {
            if let (Some(id), Some(text)) = (t["dia_id"].as_str(), t["text"].as_str()) {
                let line = format!("{}: {text}", t["speaker"].as_str().unwrap_or_default());
                turns.push(Turn { dia_id: id.to_owned(), at: at + Duration::seconds(i as i64 * 30), line });
            }
        }
    }
    turns
}

/// What a question found.
struct Asked {
    figures: Figures,
    /// The 1,024-token context.
    context: String,
    /// Its items' ids and kinds.
    items: Vec<(String, String)>,
    /// The sources of the lookup's results, best first (none for a summary).
    top: Vec<Vec<Uuid>>,
}

/// One lookup of `user` as a client makes it: evidence recall in its top 5 and 10 (a
/// result's sources count, except a summary's, which cover a whole session), and whether
/// the answer is in the user's context at 256 and 1,024 tokens; and the latter context.
async fn ask(
    harness: &Harness,
    user: &str,
    question: &str,
    answer: &str,
    evidence: &[String],
) -> anyhow::Result<Asked> {
    let found = harness
        .post(
            "/v1/search",
            &json!({"user_id": user, "query": question, "limit": 10, "min_score": 0.0, "kinds": EVERY_KIND}),
        )
        .await?;
    let results: Vec<Vec<Uuid>> = found["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let summary = r["kind"].as_str().is_some_and(|k| k.ends_with("_summary"));
            let sources = r["source_event_ids"].as_array().into_iter().flatten();
            sources.filter(|_| !summary).filter_map(|s| s.as_str()?.parse().ok()).collect()
        })
        .collect();
    let ids: Vec<Uuid> = results.iter().flatten().copied().collect();
    let dia = dia_ids(harness, &ids).await?;
    let recall_at = |k: usize| {
        let found: Vec<&str> =
            results.iter().take(k).flat_map(|s| s.iter().filter_map(|id| dia.get(id).map(String::as_str))).collect();
        recall(evidence, &found)
    };
    let (mut in_context, mut evidence_in, mut text, mut items) = ([0.0; 2], [0.0; 2], String::new(), Vec::new());
    for (slot, tokens) in [256, 1024].into_iter().enumerate() {
        let query = url_encode(question);
        let context = harness.get(&format!("/v1/users/{user}/context?query={query}&max_tokens={tokens}")).await?;
        text = context["text"].as_str().unwrap_or_default().to_owned();
        items = context["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| {
                (i["id"].as_str().unwrap_or_default().to_owned(), i["kind"].as_str().unwrap_or_default().to_owned())
            })
            .collect();
        in_context[slot] = answer_in(&text, answer);
        evidence_in[slot] = evidence_shown(harness, &items, evidence).await?;
    }
    harness.flush_access().await?;
    let figures = [recall_at(5), recall_at(10), in_context[0], in_context[1], evidence_in[0], evidence_in[1]];
    Ok(Asked { figures, context: text, items, top: results })
}

/// The share of `evidence` (dia ids) a context's `items` show, as turns or as what was
/// taken from them.
async fn evidence_shown(harness: &Harness, items: &[(String, String)], evidence: &[String]) -> anyhow::Result<f64> {
    let shown: Vec<Uuid> = diagnose::shown(harness, items).await?.into_iter().collect();
    let dia = dia_ids(harness, &shown).await?;
    let found: Vec<&str> = dia.values().map(String::as_str).collect();
    Ok(recall(evidence, &found))
}

/// The dia ids of the turns `ids`, by id (a turn without one is left out).
pub(super) async fn dia_ids(harness: &Harness, ids: &[Uuid]) -> anyhow::Result<HashMap<Uuid, String>> {
    Ok(sqlx::query!("SELECT id, metadata ->> 'dia_id' AS dia_id FROM events WHERE id = ANY($1)", ids)
        .map(|row| (row.id, row.dia_id))
        .fetch_all(&harness.db.pool)
        .await?
        .into_iter()
        .filter_map(|(id, d)| Some((id, d?)))
        .collect())
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
