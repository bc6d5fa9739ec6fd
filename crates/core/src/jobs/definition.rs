//! `jobs/NAME.toml`: a job's schedule, switches, budgets and typed parameters, parsed
//! once at startup. A bad file stops startup with a message naming the file and key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Timelike, Utc};
use croner::parser::{CronParser, Seconds, Year};
use serde::Deserialize;

use std::sync::Arc;

use super::job::{AnyJob, Budget, Models};
use super::registry::REGISTRY;
use engram_base::models::{Embedder, Llm, Prompts};

/// A 6-field cron expression with seconds, evaluated in UTC.
#[derive(Debug, Clone)]
pub struct Cron {
    expression: String,
    parsed: croner::Cron,
}

impl Cron {
    pub fn parse(expression: &str) -> Result<Self, String> {
        let parsed = CronParser::builder()
            .seconds(Seconds::Required)
            .year(Year::Disallowed)
            .dom_and_dow(true)
            .build()
            .parse(expression)
            .map_err(|err| {
                format!("`{expression}` is not a 6-field cron expression (sec min hour day month weekday): {err}")
            })?;
        Ok(Self { expression: expression.to_owned(), parsed })
    }

    pub fn as_str(&self) -> &str {
        &self.expression
    }

    /// The first tick strictly after `at`.
    pub fn next_after(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.parsed.find_next_occurrence(&whole_second(at), false).ok()
    }

    /// Seconds between the next two ticks: how often the job is meant to run.
    pub fn interval_seconds(&self) -> f64 {
        let next = self.next_after(Utc::now());
        let after = next.and_then(|n| self.next_after(n));
        match (next, after) {
            (Some(a), Some(b)) => (b - a).num_milliseconds() as f64 / 1000.0,
            _ => 0.0,
        }
    }

    /// The latest tick at or before `at`: the identity of a tick that every replica
    /// computes the same way, however late its timer fired.
    pub fn latest_at_or_before(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.parsed.find_previous_occurrence(&whole_second(at), true).ok()
    }
}

/// Ticks fall on whole seconds; the search keeps any fraction it is given.
fn whole_second(at: DateTime<Utc>) -> DateTime<Utc> {
    at.with_nanosecond(0).unwrap_or(at)
}

#[derive(Debug, Clone)]
pub struct Definition {
    pub name: String,
    pub file: PathBuf,
    pub schedule: Cron,
    /// Whether the schedule runs it; admin and CLI runs work either way.
    pub enabled: bool,
    pub timeout: Duration,
    /// Users worked on at once, each in its own transaction on its own connection.
    pub concurrency: usize,
    pub budget: Budget,
    /// What the job does, with its typed parameters.
    pub job: Arc<dyn AnyJob>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobFile {
    schedule: String,
    #[serde(default = "enabled_by_default")]
    enabled: bool,
    #[serde(default = "default_timeout")]
    timeout: String,
    #[serde(default = "one")]
    concurrency: usize,
    #[serde(default)]
    budget: Budget,
    #[serde(default)]
    params: toml::Table,
}

fn enabled_by_default() -> bool {
    true
}

fn one() -> usize {
    1
}

fn default_timeout() -> String {
    "1h".into()
}

/// Each unit in flight holds a connection of the pool.
const MAX_CONCURRENCY: usize = 8;

/// Every job declared in `dir`, by name.
pub fn load_dir(dir: &Path) -> anyhow::Result<BTreeMap<String, Definition>> {
    let entries = std::fs::read_dir(dir).map_err(|err| anyhow::anyhow!("jobs.dir {}: {err}", dir.display()))?;
    let mut jobs = BTreeMap::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            let definition = load_file(&path).map_err(|message| anyhow::anyhow!("{}: {message}", path.display()))?;
            jobs.insert(definition.name.clone(), definition);
        }
    }
    Ok(jobs)
}

/// One job file; the error names the offending key.
pub fn load_file(path: &Path) -> Result<Definition, String> {
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
    let Some((_, parse)) = REGISTRY.iter().find(|(known, _)| *known == name) else {
        let known: Vec<&str> = REGISTRY.iter().map(|(known, _)| *known).collect();
        return Err(format!("unknown job `{name}`; known jobs: {}", known.join(", ")));
    };
    let text = std::fs::read_to_string(path).map_err(|err| err.to_string())?;
    let file: JobFile = toml::from_str(&text).map_err(|err| err.to_string().trim_end().to_owned())?;
    let schedule = Cron::parse(&file.schedule).map_err(|err| format!("schedule: {err}"))?;
    let timeout = parse_duration(&file.timeout).map_err(|err| format!("timeout: {err}"))?;
    if !(1..=MAX_CONCURRENCY).contains(&file.concurrency) {
        return Err(format!("concurrency: must be between 1 and {MAX_CONCURRENCY}"));
    }
    let budget = file.budget;
    if !(0.0..=1.0).contains(&budget.max_removed_fraction) {
        return Err("budget.max_removed_fraction: must be between 0 and 1".into());
    }
    let job = parse(file.params)?;
    job.check(file.concurrency)?;
    Ok(Definition {
        name,
        file: path.to_owned(),
        schedule,
        enabled: file.enabled,
        timeout,
        concurrency: file.concurrency,
        budget,
        job,
    })
}

/// `90s`, `15m`, `2h`, `1d`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 =
        number.parse().map_err(|_| format!("`{text}`: expected a number and a unit, like 90s, 15m, 2h or 1d"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("`{text}`: the unit must be s, m, h or d")),
    };
    if number == 0 {
        return Err(format!("`{text}`: must be longer than zero"));
    }
    Ok(Duration::from_secs(number * seconds))
}

impl Models {
    /// The configured embedder and LLM, and the prompts of `jobs.dir` for `jobs`.
    pub fn from_settings(
        settings: &engram_base::configuration::Settings,
        metrics: &engram_base::metrics::Metrics,
        jobs: &BTreeMap<String, Definition>,
    ) -> anyhow::Result<Self> {
        let trust = engram_base::tls::Trust::from_settings(&settings.tls).map_err(anyhow::Error::msg)?;
        let llm = Llm::from_settings(&settings.llm, &trust, metrics.clone())?.map(Arc::new);
        Ok(Self {
            embedder: Arc::new(Embedder::from_settings(&settings.embeddings, &settings.home, &trust, metrics.clone())?),
            prompts: load_prompts(&settings.jobs.dir, llm.is_some(), jobs)?,
            llm,
            graph: Arc::new(crate::graph::Graph::for_jobs(settings)),
            secret_kinds: Arc::new(settings.ingest.redact.clone()),
        })
    }
}

/// The prompts in `<jobs_dir>/prompts`. With an LLM, every prompt one of `jobs` sends
/// must be there and well-formed, or startup stops naming the file.
pub fn load_prompts(jobs_dir: &Path, llm: bool, jobs: &BTreeMap<String, Definition>) -> anyhow::Result<Arc<Prompts>> {
    let prompts = Prompts::load_dir(&jobs_dir.join("prompts"))?;
    if llm {
        prompts.require(jobs.values().flat_map(|d| d.job.prompts().iter().copied()))?;
    }
    Ok(Arc::new(prompts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cron_needs_six_fields_with_seconds() {
        assert!(Cron::parse("0 30 3 * * *").is_ok());
        assert!(Cron::parse("30 3 * * *").unwrap_err().contains("6-field"));
        assert!(Cron::parse("0 0 30 3 * * 2030").is_err());
        assert!(Cron::parse("0 61 * * * *").is_err());
    }

    #[test]
    fn a_late_timer_still_names_the_tick_it_was_for() {
        let cron = Cron::parse("0 */5 * * * *").unwrap();
        let late = "2026-01-01T10:05:00.900Z".parse::<DateTime<Utc>>().unwrap();
        let tick = "2026-01-01T10:05:00Z".parse::<DateTime<Utc>>().unwrap();
        assert_eq!(cron.latest_at_or_before(late), Some(tick));
        assert_eq!(cron.next_after(tick), Some("2026-01-01T10:10:00Z".parse().unwrap()));
    }

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert!(parse_duration("15").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("m").is_err());
    }
}
