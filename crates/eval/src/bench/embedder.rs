//! The configured embedder: single-text latency and batch-of-64 throughput, on
//! distinct generated sentences with the cache off.

use std::time::{Duration, Instant};

use super::{Figure, Size, percentile_ms};
use engram_base::configuration::Settings;
use engram_base::metrics::Metrics;
use engram_base::models::Embedder;

const BATCH: usize = 64;

pub async fn run(settings: &Settings, size: Size) -> anyhow::Result<Vec<Figure>> {
    let mut config = settings.embeddings.clone();
    config.cache_entries = 0;
    let embedder = Embedder::from_settings(&config, &settings.home, &Default::default(), Metrics::new())?;
    embedder.embed(&sentences(0, 8)).await?; // warm-up

    let mut latencies = Vec::with_capacity(size.single_texts);
    for text in sentences(1_000, size.single_texts) {
        let started = Instant::now();
        embedder.embed_one(&text).await?;
        latencies.push(started.elapsed());
    }
    latencies.sort();

    let texts = sentences(100_000, size.batches * BATCH);
    let started = Instant::now();
    for batch in texts.chunks(BATCH) {
        embedder.embed(batch).await?;
    }
    let throughput = texts.len() as f64 / started.elapsed().as_secs_f64();

    let figure = |metric: &str, value, unit| Figure { scenario: "embedder", metric: metric.into(), value, unit };
    Ok(vec![
        figure("single_p50", percentile_ms(&latencies, 0.5), "ms"),
        figure("single_p99", percentile_ms(&latencies, 0.99), "ms"),
        figure("single_mean", mean_ms(&latencies), "ms"),
        figure("batch64_throughput", throughput, "texts/s"),
    ])
}

fn mean_ms(samples: &[Duration]) -> f64 {
    samples.iter().map(Duration::as_secs_f64).sum::<f64>() * 1000.0 / samples.len().max(1) as f64
}

/// Distinct, conversation-like sentences of 8–20 words.
fn sentences(seed: usize, n: usize) -> Vec<String> {
    const SUBJECTS: &[&str] = &["We", "I", "Our team", "The backend", "My manager", "The new service", "This project"];
    const VERBS: &[&str] =
        &["moved to", "decided on", "prefer", "switched from", "are evaluating", "deployed", "dropped"];
    const OBJECTS: &[&str] = &[
        "PostgreSQL for the main database",
        "Kubernetes on a managed cloud",
        "FastAPI with async workers",
        "a weekly release cadence",
        "GitHub Actions instead of Jenkins",
        "Vite for the frontend build",
        "dark mode in every editor",
    ];
    (seed..seed + n)
        .map(|i| {
            format!(
                "{} {} {} after sprint {} because of issue #{} in the {} region",
                SUBJECTS[i % SUBJECTS.len()],
                VERBS[(i / 7) % VERBS.len()],
                OBJECTS[(i / 49) % OBJECTS.len()],
                i % 97,
                i,
                ["eu", "us", "apac"][i % 3]
            )
        })
        .collect()
}
