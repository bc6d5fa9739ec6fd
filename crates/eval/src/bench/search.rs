//! Search under load: an engram on loopback over the generated corpus, concurrent
//! clients sending client-side query vectors and text queries, and the recall@10 of
//! the large user's vector search against an exact scan.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use sqlx::PgPool;

use super::corpus::{self, CorpusSize, LARGE_USER, TENANT};
use super::{Figure, percentile_ms};
use engram_base::auth;
use engram_base::configuration::Settings;
use engram_base::db::Database;
use engram_base::domain::TenantId;
use engram_core::jobs::Scope;
use engram_core::user_indexes::Indexed;
use engram_server::startup::Application;

const QUESTIONS: &[&str] =
    &["what did we decide", "which database", "deployment plans", "favourite editor", "team size"];

pub async fn run(settings: &Settings, quick: bool, clients: usize) -> anyhow::Result<Vec<Figure>> {
    let size = CorpusSize::new(quick, &settings.embeddings);
    let (seconds, recall_queries) = if quick { (5, 20) } else { (20, 100) };
    let db = Database::open_named(&settings.database, &settings.home, Some(corpus::database(quick))).await?;
    db.migrate().await?;
    let build_seconds = corpus::ensure(&db.pool, size).await?;
    let graph_seconds = corpus::ensure_graph(&db.pool, size).await?
        + corpus::ensure_graph_rows(&db.pool, settings.graph.scan_limit).await?;
    // As a deployment would have it: the large user's own HNSW index, built once.
    let indexed = Instant::now();
    let executor = super::jobs::executor(&db.pool, settings)?;
    let tenant = TenantId::parse(TENANT)?;
    super::jobs::run_job(&executor, "index_large_users", &Scope::tenant(tenant.clone())).await?;
    let index_seconds = indexed.elapsed().as_secs_f64();
    let warm_seconds = corpus::warm(&db.pool).await?;
    let (centroids, noise) = corpus::vectors(&db.pool).await?;
    let vectors = Arc::new((centroids, noise));

    let mut config = settings.clone();
    config.server.bind = "127.0.0.1:0".into();
    config.server.key_cache_secs = 300;
    config.server.role = engram_base::configuration::Role::Api;
    config.database.max_connections = 32;
    let app = Application::build(config, db.clone()).await?;
    let base = format!("http://127.0.0.1:{}/v1/search", app.port());
    tokio::spawn(app.run_until_stopped());
    let new_key = auth::NewKey::new(tenant.clone(), &[auth::Scope::Read]).named("bench");
    let key = auth::create_key(&db.pool, &new_key).await?.secret;

    let users = size.users;
    // Vector lookups, one in ten for the large user: facts and insights, then facts and
    // raw turns in one lookup (the corpus holds as many turns as memories).
    let lookups = |kinds: &'static [&'static str]| {
        let vectors = vectors.clone();
        move |rng: &mut StdRng, _| {
            let user = if rng.random_ratio(1, 10) {
                LARGE_USER.to_owned()
            } else {
                format!("u{}", rng.random_range(0..users))
            };
            let question = QUESTIONS[rng.random_range(0..QUESTIONS.len())];
            json!({"user_id": user, "query": question, "embedding": query_vector(&vectors, rng), "limit": 10,
                   "min_score": 0.0, "kinds": kinds})
        }
    };
    let with_vectors =
        load(&base, &key, clients, Duration::from_secs(seconds), 256, lookups(&["fact", "insight"])).await?;
    let server_ms = server_side_mean_ms(&base).await?;
    // Lookups naming an entity of the user, without and then with relations: the walk's cost.
    let naming = |kinds: &'static [&'static str]| {
        let vectors = vectors.clone();
        move |rng: &mut StdRng, _| {
            let (user, entities) = match rng.random_ratio(1, 10) {
                true => (LARGE_USER.to_owned(), 20_000),
                false => (format!("u{}", rng.random_range(0..users)), 40),
            };
            let question = format!("which database does Entity {} use", rng.random_range(0..entities));
            json!({"user_id": user, "query": question, "embedding": query_vector(&vectors, rng), "limit": 10,
                   "min_score": 0.0, "kinds": kinds})
        }
    };
    let naming_facts =
        load(&base, &key, clients, Duration::from_secs(seconds), 256, naming(&["fact", "insight"])).await?;
    let with_relations =
        load(&base, &key, clients, Duration::from_secs(seconds), 256, naming(&["fact", "insight", "relation"])).await?;
    let with_turns =
        load(&base, &key, clients, Duration::from_secs(seconds), 256, lookups(&["fact", "insight", "event"])).await?;
    // Words in every memory of the corpus: the large user's keyword matches must not
    // cost a pass over all of them.
    let common_words = load(&base, &key, 1, Duration::from_secs(3), 64, {
        let vectors = vectors.clone();
        move |rng: &mut StdRng, _| {
            json!({"user_id": LARGE_USER, "query": "memory topic", "embedding": query_vector(&vectors, rng), "limit": 10})
        }
    })
    .await?;
    let with_text =
        load(&base, &key, clients.min(8), Duration::from_secs(seconds), 4096, move |rng: &mut StdRng, n| {
            let user = format!("u{}", rng.random_range(0..users));
            // Distinct texts, more than a run sends, so the embedding cache does not answer for the model.
            json!({"user_id": user, "query": format!("{} number {n}", QUESTIONS[n % QUESTIONS.len()]), "limit": 10})
        })
        .await?;
    let recall = recall_at_10(&db.pool, Indexed::Memories, &vectors, recall_queries, size.dims, settings).await?;
    let turn_recall = recall_at_10(&db.pool, Indexed::Events, &vectors, recall_queries, size.dims, settings).await?;

    let mut figures = vec![
        Figure {
            scenario: "search",
            metric: "corpus_memories".into(),
            value: corpus::count(&db.pool).await? as f64,
            unit: "memories",
        },
        Figure { scenario: "search", metric: "corpus_build".into(), value: build_seconds, unit: "s (0: reused)" },
        Figure { scenario: "search", metric: "large_user_index".into(), value: index_seconds, unit: "s (job run)" },
        Figure { scenario: "search", metric: "buffer_warmup".into(), value: warm_seconds, unit: "s" },
    ];
    figures.push(Figure {
        scenario: "search",
        metric: "corpus_events".into(),
        value: corpus::count_events(&db.pool).await? as f64,
        unit: "events",
    });
    figures.push(Figure {
        scenario: "search",
        metric: "graph_build".into(),
        value: graph_seconds,
        unit: "s (0: reused)",
    });
    figures.push(Figure {
        scenario: "search",
        metric: "corpus_relations".into(),
        value: corpus::count_relations(&db.pool).await? as f64,
        unit: "relations",
    });
    for (name, stats) in [
        ("vector", &with_vectors),
        ("naming_an_entity", &naming_facts),
        ("facts_and_relations", &with_relations),
        ("facts_and_turns", &with_turns),
        ("text", &with_text),
    ] {
        figures.extend(stats.figures(name));
    }
    figures.push(Figure { scenario: "search", metric: "vector_server_mean".into(), value: server_ms, unit: "ms" });
    let common_p50 = percentile_ms(&common_words.latencies, 0.5);
    figures.push(Figure {
        scenario: "search",
        metric: "large_user_common_words_p50".into(),
        value: common_p50,
        unit: "ms (1 client)",
    });
    figures.push(Figure { scenario: "search", metric: "large_user_recall_at_10".into(), value: recall, unit: "share" });
    figures.push(Figure {
        scenario: "search",
        metric: "large_user_turn_recall_at_10".into(),
        value: turn_recall,
        unit: "share",
    });
    Ok(figures)
}

/// The server's own mean lookup time so far, from its `/metrics`: what the
/// load generator's latency adds to it is HTTP and client time.
async fn server_side_mean_ms(search_url: &str) -> anyhow::Result<f64> {
    let text = reqwest::get(search_url.replace("/v1/search", "/metrics")).await?.text().await?;
    let value = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let sum = value(r#"engram_lookup_duration_seconds_sum{endpoint="search"}"#);
    let count = value(r#"engram_lookup_duration_seconds_count{endpoint="search"}"#);
    Ok(if count > 0.0 { sum / count * 1000.0 } else { 0.0 })
}

fn query_vector(vectors: &(Vec<Vec<f32>>, Vec<Vec<f32>>), rng: &mut StdRng) -> Vec<f32> {
    let (centroids, noise) = vectors;
    let c = &centroids[rng.random_range(0..centroids.len())];
    let n = &noise[rng.random_range(0..noise.len())];
    c.iter().zip(n).map(|(a, b)| a + b).collect()
}

struct LoadStats {
    latencies: Vec<Duration>,
    errors: usize,
    seconds: f64,
    concurrency: usize,
}

impl LoadStats {
    fn figures(&self, name: &str) -> Vec<Figure> {
        let metric = |suffix: &str| format!("{name}_{suffix}");
        vec![
            Figure {
                scenario: "search",
                metric: metric("concurrency"),
                value: self.concurrency as f64,
                unit: "clients",
            },
            Figure {
                scenario: "search",
                metric: metric("p50"),
                value: percentile_ms(&self.latencies, 0.5),
                unit: "ms",
            },
            Figure {
                scenario: "search",
                metric: metric("p95"),
                value: percentile_ms(&self.latencies, 0.95),
                unit: "ms",
            },
            Figure {
                scenario: "search",
                metric: metric("p99"),
                value: percentile_ms(&self.latencies, 0.99),
                unit: "ms",
            },
            Figure {
                scenario: "search",
                metric: metric("throughput"),
                value: self.latencies.len() as f64 / self.seconds,
                unit: "req/s",
            },
            Figure { scenario: "search", metric: metric("errors"), value: self.errors as f64, unit: "requests" },
        ]
    }
}

/// `concurrency` clients send requests for `duration`, each cycling through `per_client`
/// bodies built by `body` and serialised beforehand, so the clients spend their time on HTTP.
async fn load<F>(
    url: &str,
    key: &str,
    concurrency: usize,
    duration: Duration,
    per_client: usize,
    body: F,
) -> anyhow::Result<LoadStats>
where
    F: Fn(&mut StdRng, usize) -> serde_json::Value,
{
    let client = reqwest::Client::builder().pool_max_idle_per_host(concurrency).build()?;
    let bodies: Vec<Vec<String>> = (0..concurrency)
        .map(|worker| {
            let mut rng = StdRng::seed_from_u64(worker as u64);
            (0..per_client).map(|i| body(&mut rng, i * concurrency + worker).to_string()).collect()
        })
        .collect();
    eprintln!("bench: {concurrency} clients for {} s", duration.as_secs());
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for bodies in bodies {
        let (client, url, key) = (client.clone(), url.to_owned(), key.to_owned());
        tasks.push(tokio::spawn(async move {
            let (mut latencies, mut errors) = (Vec::new(), 0);
            for body in bodies.iter().cycle() {
                if Instant::now() >= deadline {
                    break;
                }
                let sent = Instant::now();
                let request =
                    client.post(&url).bearer_auth(&key).header("content-type", "application/json").body(body.clone());
                match request.send().await {
                    Ok(response) if response.status().is_success() => {
                        let _ = response.bytes().await;
                        latencies.push(sent.elapsed());
                    }
                    _ => errors += 1,
                }
            }
            (latencies, errors)
        }));
    }
    let mut stats = LoadStats { latencies: Vec::new(), errors: 0, seconds: 0.0, concurrency };
    for task in tasks {
        let (latencies, errors) = task.await?;
        stats.latencies.extend(latencies);
        stats.errors += errors;
    }
    stats.seconds = started.elapsed().as_secs_f64();
    stats.latencies.sort();
    Ok(stats)
}

/// The share of the exact 10 nearest neighbours of the large user's rows in `table` that
/// the index scan search uses finds, with the `ef_search` search uses for them.
async fn recall_at_10(
    pool: &PgPool,
    table: Indexed,
    vectors: &(Vec<Vec<f32>>, Vec<Vec<f32>>),
    queries: usize,
    dims: i64,
    settings: &Settings,
) -> anyhow::Result<f64> {
    let tenant = TenantId::parse(TENANT)?;
    let own_index = engram_core::search::has_own_index(pool, table, &tenant, LARGE_USER, dims as usize).await?;
    let ef_search = if own_index { settings.search.user_index_ef_search } else { settings.search.ef_search };
    let mut rng = StdRng::seed_from_u64(42);
    // As the service does: `candidates` nearest from the index, the best 10 of them.
    let candidates = engram_core::search::candidates(10, &settings.search);
    let (vector, active) = match table {
        Indexed::Memories => (format!("embedding::vector({dims})"), "AND status = 'active'"),
        Indexed::Events => (format!("embedding::halfvec({dims})"), ""),
    };
    let sql = format!(
        "SELECT id FROM (SELECT id, {vector} <=> $1::vector::{vector_type} AS distance FROM {table}
                          WHERE tenant_id = 'bench' AND user_id = 'large' {active} AND embedding_dims = {dims}
                          ORDER BY {vector} <=> $1::vector::{vector_type} LIMIT {candidates}) nearest
          ORDER BY distance LIMIT 10",
        vector_type = vector.split("::").nth(1).unwrap_or_default(),
        table = table.table(),
    );
    let mut found = 0;
    for _ in 0..queries {
        let q = pgvector::Vector::from(query_vector(vectors, &mut rng));
        let mut tx = pool.begin().await?;
        let settings =
            format!("SET LOCAL hnsw.iterative_scan = 'relaxed_order'; SET LOCAL hnsw.ef_search = {ef_search}");
        sqlx::raw_sql(sqlx::AssertSqlSafe(settings)).execute(&mut *tx).await?;
        let approx: Vec<uuid::Uuid> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone())).bind(&q).fetch_all(&mut *tx).await?;
        sqlx::raw_sql("SET LOCAL enable_indexscan = off").execute(&mut *tx).await?;
        let exact: Vec<uuid::Uuid> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone())).bind(&q).fetch_all(&mut *tx).await?;
        tx.rollback().await?;
        found += approx.iter().filter(|id| exact.contains(id)).count();
    }
    Ok(found as f64 / (queries * 10) as f64)
}
