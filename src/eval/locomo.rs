//! The LoCoMo loader. Each sample's two speakers become two users of one tenant: a
//! speaker's own turns are that user's `user` events and the other speaker's turns are
//! `assistant` events in the same session, so each user holds the whole conversation.
//! Sessions keep `session_N_date_time` as their time and every event its `dia_id` in
//! metadata. After the last session the consolidation jobs run, and each `qa` item of
//! categories 1–4 is asked of both users.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::Context;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use super::Harness;
use crate::configuration::Settings;

const JOBS: &[&str] = &["extract_facts", "summarize_sessions", "dedup"];

pub async fn run(settings: &Settings, file: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let samples: Vec<Value> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not LoCoMo JSON (an array of samples)", file.display()))?;
    let harness = Harness::start(settings, "locomo").await?;
    let mut per_category: BTreeMap<String, Vec<[f64; 4]>> = BTreeMap::new();
    let mut baseline: BTreeMap<String, Vec<[f64; 4]>> = BTreeMap::new();
    for (n, sample) in samples.iter().enumerate() {
        let id = sample["sample_id"].as_str().map(str::to_owned).unwrap_or_else(|| format!("sample{n}"));
        eprintln!("eval: LoCoMo {id}");
        let (users, last) = ingest(&harness, &id, &sample["conversation"]).await?;
        let turns = all_turns(&sample["conversation"]);
        let texts: Vec<String> = turns.iter().map(|(_, text)| text.clone()).collect();
        let turn_vectors = harness.executor.models.embedder.embed(&texts).await?;
        let end = last + Duration::days(1);
        let jobs: Vec<String> = JOBS.iter().map(|j| (*j).to_owned()).collect();
        harness.run_jobs(&jobs, &crate::jobs::Scope::all(), end).await?;
        harness.clock.set(end);
        for qa in sample["qa"].as_array().into_iter().flatten() {
            let Some(category) = qa["category"].as_i64().filter(|c| (1..=4).contains(c)) else { continue };
            let question = qa["question"].as_str().unwrap_or_default();
            let answer = match &qa["answer"] {
                Value::String(s) => s.clone(),
                Value::Null => continue,
                other => other.to_string(),
            };
            let evidence: Vec<String> =
                qa["evidence"].as_array().into_iter().flatten().filter_map(|e| e.as_str().map(str::to_owned)).collect();
            let scores = ask(&harness, &users, question, &answer, &evidence).await?;
            per_category.entry(category.to_string()).or_default().push(scores);
            let query = harness.executor.models.embedder.embed_one(question).await?;
            let mut ranked: Vec<(f32, usize)> =
                turn_vectors.iter().enumerate().map(|(i, v)| (v.cosine(&query), i)).collect();
            ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
            let order: Vec<&(String, String)> = ranked.iter().map(|(_, i)| &turns[*i]).collect();
            baseline.entry(category.to_string()).or_default().push(raw_turns_baseline(&order, &answer, &evidence));
        }
    }
    let summarize = |rows: &[[f64; 4]]| {
        let mean =
            |i: usize| if rows.is_empty() { 0.0 } else { rows.iter().map(|r| r[i]).sum::<f64>() / rows.len() as f64 };
        json!({"questions": rows.len(), "evidence_recall_at_5": mean(0), "evidence_recall_at_10": mean(1),
               "answer_in_context_256": mean(2), "answer_in_context_1024": mean(3)})
    };
    let all: Vec<[f64; 4]> = per_category.values().flatten().copied().collect();
    let categories: serde_json::Map<String, Value> =
        per_category.iter().map(|(c, rows)| (c.clone(), summarize(rows))).collect();
    let all_baseline: Vec<[f64; 4]> = baseline.values().flatten().copied().collect();
    let baseline_categories: serde_json::Map<String, Value> =
        baseline.iter().map(|(c, rows)| (c.clone(), summarize(rows))).collect();
    let (events, kept) = harness.compression().await?;
    Ok(json!({"locomo": {"samples": samples.len(), "categories": categories, "overall": summarize(&all),
                         "raw_turns_baseline": {"categories": baseline_categories, "overall": summarize(&all_baseline)}},
              "raw_events": events, "memory_items": kept,
              "storage_ratio": if events > 0 { kept as f64 / events as f64 } else { 0.0 }}))
}

/// Stores one conversation for both speakers; returns the users and the last session time.
async fn ingest(harness: &Harness, sample: &str, conversation: &Value) -> anyhow::Result<(Vec<String>, DateTime<Utc>)> {
    let speakers =
        [conversation["speaker_a"].as_str().unwrap_or("A"), conversation["speaker_b"].as_str().unwrap_or("B")];
    let user = |speaker: &str| format!("{sample}-{}", speaker.to_lowercase().replace(char::is_whitespace, "_"));
    let mut last = DateTime::<Utc>::MIN_UTC;
    for n in 1.. {
        let Some(turns) = conversation[format!("session_{n}")].as_array() else { break };
        let at = conversation[format!("session_{n}_date_time")]
            .as_str()
            .and_then(parse_date)
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
    Ok((speakers.iter().map(|s| user(s)).collect(), last))
}

/// Every turn of the conversation as (dia_id, text).
fn all_turns(conversation: &Value) -> Vec<(String, String)> {
    let mut turns = Vec::new();
    for n in 1.. {
        let Some(session) = conversation[format!("session_{n}")].as_array() else { break };
        for t in session {
            if let (Some(id), Some(text)) = (t["dia_id"].as_str(), t["text"].as_str()) {
                turns.push((id.to_owned(), format!("{}: {text}", t["speaker"].as_str().unwrap_or_default())));
            }
        }
    }
    turns
}

/// The same four numbers when memory is the raw turns only: the turns most similar to
/// the question, as many as fit in 256 and 1,024 tokens of context.
fn raw_turns_baseline(ranked: &[&(String, String)], answer: &str, evidence: &[String]) -> [f64; 4] {
    let recall_at = |k: usize| {
        if evidence.is_empty() {
            return 0.0;
        }
        evidence.iter().filter(|e| ranked.iter().take(k).any(|(id, _)| id == *e)).count() as f64 / evidence.len() as f64
    };
    let in_context = |budget: usize| {
        let mut text = String::new();
        for (_, turn) in ranked {
            if crate::text::estimate_tokens(&text) + crate::text::estimate_tokens(turn) > budget {
                break;
            }
            text.push_str(turn);
            text.push('\n');
        }
        if normalise(&text).contains(&normalise(answer)) { 1.0 } else { 0.0 }
    };
    [recall_at(5), recall_at(10), in_context(256), in_context(1024)]
}

/// "1:56 pm on 8 May, 2023".
fn parse_date(text: &str) -> Option<DateTime<Utc>> {
    let re = regex::Regex::new(r"(?i)(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})").ok()?;
    let c = re.captures(text)?;
    let (mut hour, minute): (u32, u32) = (c[1].parse().ok()?, c[2].parse().ok()?);
    if c[3].eq_ignore_ascii_case("pm") && hour < 12 {
        hour += 12;
    } else if c[3].eq_ignore_ascii_case("am") && hour == 12 {
        hour = 0;
    }
    let date = NaiveDate::parse_from_str(&format!("{} {} {}", &c[4], &c[5], &c[6]), "%d %B %Y").ok()?;
    Some(date.and_hms_opt(hour, minute, 0)?.and_utc())
}

/// Evidence recall at 5 and 10 over facts and insights of both speakers, and whether the
/// answer appears in their context at 256 and 1024 tokens.
async fn ask(
    harness: &Harness,
    users: &[String],
    question: &str,
    answer: &str,
    evidence: &[String],
) -> anyhow::Result<[f64; 4]> {
    let mut results: Vec<(f64, Vec<Uuid>)> = Vec::new();
    for user in users {
        let found = harness
            .post("/v1/search", &json!({"user_id": user, "query": question, "limit": 10, "min_score": 0.0}))
            .await?;
        for r in found["results"].as_array().into_iter().flatten() {
            let sources = r["source_event_ids"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str()?.parse().ok())
                .collect();
            results.push((r["score"].as_f64().unwrap_or(0.0), sources));
        }
    }
    results.sort_by(|a, b| b.0.total_cmp(&a.0));
    let ids: Vec<Uuid> = results.iter().take(10).flat_map(|(_, s)| s.clone()).collect();
    let dia: HashMap<Uuid, String> =
        sqlx::query_as::<_, (Uuid, Option<String>)>("SELECT id, metadata ->> 'dia_id' FROM events WHERE id = ANY($1)")
            .bind(&ids)
            .fetch_all(&harness.db.pool)
            .await?
            .into_iter()
            .filter_map(|(id, d)| Some((id, d?)))
            .collect();
    let recall_at = |k: usize| {
        let found: Vec<&String> =
            results.iter().take(k).flat_map(|(_, s)| s.iter().filter_map(|id| dia.get(id))).collect();
        if evidence.is_empty() {
            0.0
        } else {
            evidence.iter().filter(|e| found.contains(e)).count() as f64 / evidence.len() as f64
        }
    };
    let mut in_context = [0.0; 2];
    for (slot, tokens) in [256, 1024].into_iter().enumerate() {
        let mut text = String::new();
        for user in users {
            let query: String = url_encode(question);
            let context = harness.get(&format!("/v1/users/{user}/context?query={query}&max_tokens={tokens}")).await?;
            text.push_str(context["text"].as_str().unwrap_or_default());
        }
        in_context[slot] = if normalise(&text).contains(&normalise(answer)) { 1.0 } else { 0.0 };
    }
    Ok([recall_at(5), recall_at(10), in_context[0], in_context[1]])
}

fn normalise(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locomo_dates_parse() {
        assert_eq!(parse_date("1:56 pm on 8 May, 2023"), Some("2023-05-08T13:56:00Z".parse().unwrap()));
        assert_eq!(parse_date("12:09 am on 15 June, 2023"), Some("2023-06-15T00:09:00Z".parse().unwrap()));
        assert_eq!(normalise("Oct. 2023!"), "oct 2023");
    }
}
