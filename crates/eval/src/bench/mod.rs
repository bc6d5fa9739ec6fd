//! `engram bench`: performance figures measured on this machine, printed as a table
//! and optionally written as JSON. Figures are reported, never asserted.

mod corpus;
mod embedder;
mod graph;
mod ingest;
mod jobs;
mod reembed;
mod search;

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use engram_base::configuration::Settings;

/// How much work each scenario does.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub single_texts: usize,
    pub batches: usize,
}

impl Size {
    pub fn new(quick: bool) -> Self {
        if quick { Self { single_texts: 100, batches: 5 } } else { Self { single_texts: 1000, batches: 30 } }
    }
}

/// One measured figure.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    pub scenario: &'static str,
    pub metric: String,
    pub value: f64,
    pub unit: &'static str,
}

pub const SCENARIOS: &[&str] = &["embedder", "ingest", "search", "jobs", "reembed", "graph"];

pub async fn run(
    settings: &Settings,
    scenarios: &[String],
    quick: bool,
    clients: usize,
    json: Option<&Path>,
) -> anyhow::Result<()> {
    if let Some(unknown) = scenarios.iter().find(|s| !SCENARIOS.contains(&s.as_str())) {
        anyhow::bail!("unknown scenario `{unknown}` (expected {})", SCENARIOS.join(", "));
    }
    let wanted = |name: &str| scenarios.is_empty() || scenarios.iter().any(|s| s == name);
    let size = Size::new(quick);
    let mut figures = Vec::new();
    if wanted("embedder") {
        figures.extend(embedder::run(settings, size).await?);
    }
    if wanted("ingest") {
        figures.extend(ingest::run(settings, quick).await?);
    }
    if wanted("search") {
        figures.extend(search::run(settings, quick, clients).await?);
    }
    if wanted("jobs") {
        figures.extend(jobs::run(settings, quick).await?);
    }
    if wanted("graph") {
        figures.extend(graph::run(quick));
    }
    if wanted("reembed") {
        figures.extend(reembed::run(settings, quick).await?);
    }
    print_table(&figures);
    if let Some(path) = json {
        let report = serde_json::json!({"quick": quick, "clients": clients, "figures": figures});
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
        println!("figures written to {}", path.display());
    }
    Ok(())
}

fn print_table(figures: &[Figure]) {
    println!("{:<20} {:<28} {:>12}  unit", "scenario", "metric", "value");
    for f in figures {
        println!("{:<20} {:<28} {:>12.2}  {}", f.scenario, f.metric, f.value, f.unit);
    }
}

/// The `q`-quantile (0..=1) of durations, in milliseconds.
pub fn percentile_ms(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[rank].as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_ranked_sample() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile_ms(&samples, 0.5), 51.0);
        assert_eq!(percentile_ms(&samples, 0.99), 99.0);
        assert_eq!(percentile_ms(&samples, 1.0), 100.0);
        assert_eq!(percentile_ms(&[], 0.5), 0.0);
    }
}
