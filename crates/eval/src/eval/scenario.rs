//! Scenario files (`eval/*.json`, schema in `eval/README.md`): users' conversations by
//! simulated day, the jobs run after each day and at the end, and questions with the
//! memories that must (`expected`), must not (`not_expected`) or cannot (`expect_no_hit`)
//! be found among the top `k`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Harness, Outcome};
use engram_base::configuration::Settings;
use engram_base::domain::TenantId;
use engram_core::jobs::Scope;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// The day-1 date of the simulated conversations.
    #[serde(default = "default_start")]
    pub start: DateTime<Utc>,
    /// Jobs run at the end of every day that has conversations.
    #[serde(default = "daily_jobs")]
    pub jobs_each_day: Vec<String>,
    /// Jobs run once after the last day, as of `ask_on_day` (e.g. `evict`).
    #[serde(default)]
    pub jobs_at_end: Vec<String>,
    pub days: Vec<Day>,
    /// The day the questions are asked (default: the day after the last one).
    pub ask_on_day: Option<i64>,
    pub questions: Vec<Question>,
}

fn default_start() -> DateTime<Utc> {
    "2026-01-05T00:00:00Z".parse().expect("a valid time")
}

fn daily_jobs() -> Vec<String> {
    ["extract_facts", "summarize_sessions", "dedup"].map(String::from).to_vec()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Day {
    pub day: i64,
    pub user: String,
    #[serde(default)]
    pub session: Option<String>,
    /// The user's messages, a minute apart from 09:00.
    pub messages: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    pub category: String,
    pub user: String,
    pub query: String,
    #[serde(default)]
    pub expected: Vec<String>,
    #[serde(default)]
    pub not_expected: Vec<String>,
    #[serde(default)]
    pub expect_no_hit: bool,
    /// What the lookup searches (`POST /v1/search`'s `kinds`); its default when absent.
    #[serde(default)]
    pub kinds: Option<Vec<String>>,
}

pub fn load(path: &Path) -> anyhow::Result<Scenario> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let scenario: Scenario =
        serde_json::from_str(&text).with_context(|| format!("{} is not a valid scenario", path.display()))?;
    for (i, q) in scenario.questions.iter().enumerate() {
        anyhow::ensure!(
            q.expect_no_hit == q.expected.is_empty(),
            "{}: questions[{i}] needs either `expected` or `expect_no_hit`",
            path.display()
        );
    }
    Ok(scenario)
}

/// Every scenario of `dir`; with `features`, every question's candidates written there
/// ([`super::features`]).
pub async fn run_all(settings: &Settings, dir: &Path, k: usize, features: Option<&Path>) -> anyhow::Result<Value> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    anyhow::ensure!(!paths.is_empty(), "no scenario files (*.json) in {}", dir.display());
    let scenarios: Vec<Scenario> = paths.iter().map(|p| load(p)).collect::<anyhow::Result<_>>()?;
    let harness = Harness::start(settings, "eval").await?;
    let mut features = features.map(super::features::Features::create).transpose()?;
    let mut by_category: BTreeMap<String, Vec<Outcome>> = BTreeMap::new();
    let mut details = Vec::new();
    for (n, scenario) in scenarios.iter().enumerate() {
        eprintln!("eval: {}", scenario.name);
        for (category, outcome, detail) in run_one(&harness, scenario, &format!("s{n}"), k, features.as_mut()).await? {
            by_category.entry(category).or_default().push(outcome);
            details.push(detail);
        }
    }
    if let Some(out) = features {
        out.finish()?;
    }
    let (events, kept) = harness.compression().await?;
    let extra = json!({
        "scenarios": scenarios.len(),
        "k": k,
        "raw_events": events,
        "memory_items": kept,
        "compression": if kept > 0 { events as f64 / kept as f64 } else { 0.0 },
        "llm": harness.executor.models.llm.is_some(),
        "questions": details,
    });
    Ok(super::report(&by_category, extra))
}

/// Replays one scenario in a tenant of its own (named `prefix`), so its jobs and clock
/// touch nothing of the others, and asks its questions.
pub async fn run_one(
    harness: &Harness,
    scenario: &Scenario,
    prefix: &str,
    k: usize,
    mut features: Option<&mut super::features::Features>,
) -> anyhow::Result<Vec<(String, Outcome, Value)>> {
    let tenant = format!("eval-{prefix}");
    let key = harness.key_for(&tenant).await?;
    let scope = Scope::tenant(TenantId::parse(tenant.as_str())?);
    let day_start = |day: i64| scenario.start + Duration::days(day - 1);
    let mut days: Vec<i64> = scenario.days.iter().map(|d| d.day).collect();
    days.sort_unstable();
    days.dedup();
    for day in &days {
        for (i, conversation) in scenario.days.iter().filter(|d| d.day == *day).enumerate() {
            let session = conversation.session.clone().unwrap_or_else(|| format!("d{day}-{i}"));
            let events: Vec<Value> = conversation
                .messages
                .iter()
                .enumerate()
                .map(|(m, text)| {
                    let at = day_start(*day) + Duration::hours(9) + Duration::minutes(m as i64);
                    json!({"user_id": format!("{prefix}-{}", conversation.user), "session_id": format!("{prefix}-{session}"),
                           "role": "user", "content": text, "created_at": at.to_rfc3339()})
                })
                .collect();
            harness.clock.set(day_start(*day) + Duration::hours(12));
            harness.post_as(&key, "/v1/events", &json!({"events": events})).await?;
        }
        harness.run_jobs(&scenario.jobs_each_day, &scope, day_start(*day) + Duration::hours(23)).await?;
    }
    let ask_day = scenario.ask_on_day.unwrap_or(days.last().copied().unwrap_or(1) + 1);
    let ask_at = day_start(ask_day) + Duration::hours(10);
    harness.run_jobs(&scenario.jobs_at_end, &scope, ask_at).await?;
    harness.clock.set(ask_at);
    let mut outcomes = Vec::new();
    for (n, q) in scenario.questions.iter().enumerate() {
        if let Some(out) = features.as_deref_mut() {
            let user = format!("{prefix}-{}", q.user);
            let question = super::features::Question {
                id: format!("{}/{n}", scenario.name),
                sample: &format!("scenario: {}", scenario.name),
                category: if q.expect_no_hit { 0 } else { -1 },
                user: &user,
                text: &q.query,
                evidence: super::features::Evidence::Texts(&q.expected),
            };
            out.write_as(harness, &key, &tenant, &question).await?;
        }
        // What an agent gets by default: facts and insights.
        let found = harness
            .post_as(
                &key,
                "/v1/search",
                &match &q.kinds {
                    Some(kinds) => {
                        json!({"user_id": format!("{prefix}-{}", q.user), "query": q.query, "limit": k, "kinds": kinds})
                    }
                    None => json!({"user_id": format!("{prefix}-{}", q.user), "query": q.query, "limit": k}),
                },
            )
            .await?;
        harness.flush_access().await?;
        let contents: Vec<String> = found["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["content"].as_str().map(str::to_lowercase))
            .collect();
        let outcome = if q.expect_no_hit {
            Outcome::NoHit { correct: found["hit"] == false }
        } else {
            score(&contents, &q.expected, &q.not_expected)
        };
        let detail = json!({"scenario": scenario.name, "category": q.category, "query": q.query, "hit": found["hit"],
                            "outcome": format!("{outcome:?}"), "returned": contents});
        outcomes.push((q.category.clone(), outcome, detail));
    }
    Ok(outcomes)
}

/// Recall: expected items found among the results. Precision: results that hold an
/// expected item. Stale: results that hold an outdated item.
pub fn score(contents: &[String], expected: &[String], not_expected: &[String]) -> Outcome {
    let holds = |c: &String, items: &[String]| items.iter().any(|e| c.contains(&e.to_lowercase()));
    let found = expected.iter().filter(|e| contents.iter().any(|c| c.contains(&e.to_lowercase()))).count();
    let recall = found as f64 / expected.len().max(1) as f64;
    let precision = (!contents.is_empty())
        .then(|| contents.iter().filter(|c| holds(c, expected)).count() as f64 / contents.len() as f64);
    let stale = (!contents.is_empty())
        .then(|| contents.iter().filter(|c| holds(c, not_expected)).count() as f64 / contents.len() as f64);
    Outcome::Recall { precision, recall, stale }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_count_expected_and_outdated_items() {
        let contents = vec!["we migrated to postgresql".to_owned(), "we use mysql".to_owned()];
        let Outcome::Recall { precision, recall, stale } = score(&contents, &["PostgreSQL".into()], &["MySQL".into()])
        else {
            panic!()
        };
        assert_eq!((precision, recall, stale), (Some(0.5), 1.0, Some(0.5)));
        let Outcome::Recall { precision, recall, .. } = score(&[], &["x".into()], &[]) else { panic!() };
        assert_eq!((precision, recall), (None, 0.0));
    }
}
