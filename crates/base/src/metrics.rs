//! Every metric engram exports, in one place. Names are a contract (DESIGN §5);
//! labels are bounded: route patterns, never raw paths, users or tenants. A job's name is
//! the label `job_name`: Prometheus overwrites a target's own `job` label with the
//! scrape job's name.

use prometheus::{Encoder, Gauge, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry, TextEncoder};

/// Request latencies from 1 ms to 10 s.
const HTTP_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Model call latencies from 1 ms to 2 min.
const MODEL_BUCKETS: &[f64] =
    &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

/// Job durations from 10 ms to 1 h.
const JOB_BUCKETS: &[f64] = &[0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0];

#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    pub http_requests: IntCounterVec,
    pub http_duration: HistogramVec,
    pub llm_requests: IntCounterVec,
    pub llm_tokens: IntCounterVec,
    pub llm_duration: HistogramVec,
    /// 1 for the response format a model's endpoint is asked in, 0 for the others.
    pub llm_response_format: GaugeVec,
    pub embeddings: IntCounterVec,
    pub embedding_duration: HistogramVec,
    pub lookups: IntCounterVec,
    pub lookup_duration: HistogramVec,
    /// Calls to the rerank stage's endpoint, by outcome (`ok`, `timeout`, `error`).
    pub rerank_calls: IntCounterVec,
    pub rerank_duration: HistogramVec,
    pub corrections: IntCounterVec,
    pub job_runs: IntCounterVec,
    pub job_duration: HistogramVec,
    pub job_items: IntCounterVec,
    pub job_last_success: GaugeVec,
    pub events_pending: Gauge,
    pub events_unembedded: Gauge,
    pub memories: GaugeVec,
    pub entities: GaugeVec,
    pub relations: GaugeVec,
    /// Graph walks (lookups with relations, `/context`, the graph endpoints).
    pub graph_walks: prometheus::IntCounter,
    /// Relations a walk reached.
    pub graph_reached: prometheus::Histogram,
    pub job_interval: GaugeVec,
    pub ready: Gauge,
    /// Webhook delivery attempts by outcome (`delivered`, `failed`, `expired`, `refused`).
    pub webhook_deliveries: IntCounterVec,
    /// The age of the oldest delivery still waiting in the outbox (0 when none waits).
    pub webhook_outbox_age: Gauge,
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let metric = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry.register(Box::new(metric.clone())).expect("registered once");
    metric
}

fn histogram(registry: &Registry, name: &str, help: &str, labels: &[&str], buckets: &[f64]) -> HistogramVec {
    let metric =
        HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets.to_vec()), labels).expect("valid metric");
    registry.register(Box::new(metric.clone())).expect("registered once");
    metric
}

fn gauge(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
    let metric = GaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry.register(Box::new(metric.clone())).expect("registered once");
    metric
}

impl Metrics {
    pub fn new() -> Self {
        let r = Registry::new();
        Self {
            http_requests: counter(
                &r,
                "engram_http_requests_total",
                "HTTP requests by method, route pattern and status",
                &["method", "route", "status"],
            ),
            http_duration: histogram(
                &r,
                "engram_http_request_duration_seconds",
                "HTTP request duration by method and route pattern",
                &["method", "route"],
                HTTP_BUCKETS,
            ),
            llm_requests: counter(
                &r,
                "engram_llm_requests_total",
                "LLM calls by purpose, model and outcome",
                &["purpose", "model", "status"],
            ),
            llm_tokens: counter(
                &r,
                "engram_llm_tokens_total",
                "LLM tokens by purpose, model and kind (prompt|completion)",
                &["purpose", "model", "kind"],
            ),
            llm_duration: histogram(
                &r,
                "engram_llm_request_duration_seconds",
                "LLM call duration, retries included",
                &["purpose", "model"],
                MODEL_BUCKETS,
            ),
            llm_response_format: gauge(
                &r,
                "engram_llm_response_format",
                "1 for the response format (json_schema|json_object|prompt) the model's endpoint accepts",
                &["model", "format"],
            ),
            embeddings: counter(&r, "engram_embeddings_total", "Texts embedded (cache misses) by model", &["model"]),
            embedding_duration: histogram(
                &r,
                "engram_embedding_duration_seconds",
                "Duration of one embedding batch by model",
                &["model"],
                MODEL_BUCKETS,
            ),
            lookups: counter(
                &r,
                "engram_lookups_total",
                "Memory lookups by endpoint and result (hit|miss)",
                &["endpoint", "result"],
            ),
            lookup_duration: histogram(
                &r,
                "engram_lookup_duration_seconds",
                "Memory lookup duration by endpoint",
                &["endpoint"],
                HTTP_BUCKETS,
            ),
            corrections: counter(
                &r,
                "engram_memory_corrections_total",
                "Corrections of served memories by source (feedback|detected)",
                &["source"],
            ),
            job_runs: counter(
                &r,
                "engram_job_runs_total",
                "Finished job runs by job and status",
                &["job_name", "status"],
            ),
            job_duration: histogram(
                &r,
                "engram_job_duration_seconds",
                "Job run duration by job",
                &["job_name"],
                JOB_BUCKETS,
            ),
            job_items: counter(
                &r,
                "engram_job_items_total",
                "Items handled by jobs, by job and action",
                &["job_name", "action"],
            ),
            job_last_success: gauge(
                &r,
                "engram_job_last_success_timestamp_seconds",
                "When each job last succeeded (Unix time); for a job that never did, when the installation first scheduled it",
                &["job_name"],
            ),
            events_pending: {
                let metric =
                    Gauge::new("engram_events_pending", "Raw events not yet consolidated into a session summary")
                        .expect("valid metric");
                r.register(Box::new(metric.clone())).expect("registered once");
                metric
            },
            events_unembedded: {
                let metric =
                    Gauge::new("engram_events_unembedded", "Raw events not yet searchable by meaning (no vector)")
                        .expect("valid metric");
                r.register(Box::new(metric.clone())).expect("registered once");
                metric
            },
            webhook_deliveries: counter(
                &r,
                "engram_webhook_deliveries_total",
                "Webhook delivery attempts by outcome (delivered|failed|expired|refused)",
                &["outcome"],
            ),
            webhook_outbox_age: {
                let metric = Gauge::new(
                    "engram_webhook_outbox_age_seconds",
                    "Age of the oldest webhook delivery still waiting, 0 when none waits",
                )
                .expect("valid metric");
                r.register(Box::new(metric.clone())).expect("registered once");
                metric
            },
            rerank_calls: counter(
                &r,
                "engram_rerank_calls_total",
                "Calls to the rerank endpoint, by outcome; any but ok kept engram's own order",
                &["outcome"],
            ),
            rerank_duration: histogram(
                &r,
                "engram_rerank_duration_seconds",
                "Time of one call to the rerank endpoint",
                &[],
                &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0],
            ),
            memories: gauge(&r, "engram_memories", "Memories by status", &["status"]),
            entities: gauge(&r, "engram_entities", "Graph entities by status", &["status"]),
            relations: gauge(&r, "engram_relations", "Graph relations by status", &["status"]),
            graph_walks: {
                let metric = prometheus::IntCounter::new(
                    "engram_graph_walks_total",
                    "Graph walks by lookups and the graph endpoints",
                )
                .expect("valid metric");
                r.register(Box::new(metric.clone())).expect("registered once");
                metric
            },
            graph_reached: {
                let opts = prometheus::HistogramOpts::new(
                    "engram_graph_relations_reached",
                    "Relations one graph walk of a lookup reached",
                )
                .buckets(vec![0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0]);
                let metric = prometheus::Histogram::with_opts(opts).expect("valid metric");
                r.register(Box::new(metric.clone())).expect("registered once");
                metric
            },
            job_interval: gauge(
                &r,
                "engram_job_interval_seconds",
                "Seconds between a job's scheduled ticks; 0 while disabled or paused",
                &["job_name"],
            ),
            ready: {
                let metric =
                    Gauge::new("engram_ready", "1 while /readyz would answer ready, else 0 (checked every 15 s)")
                        .expect("valid metric");
                r.register(Box::new(metric.clone())).expect("registered once");
                metric
            },
            registry: r,
        }
    }

    /// Creates the series of known label values at zero, so rates and ratios have data
    /// from the first scrape rather than from the first event.
    pub fn initialise(&self, jobs: &[&str]) {
        for endpoint in ["search", "context"] {
            for result in ["hit", "miss"] {
                self.lookups.with_label_values(&[endpoint, result]);
            }
        }
        for source in ["feedback", "detected"] {
            self.corrections.with_label_values(&[source]);
        }
        for outcome in ["delivered", "failed", "expired", "refused"] {
            self.webhook_deliveries.with_label_values(&[outcome]);
        }
        for job in jobs {
            for status in ["succeeded", "failed", "cancelled"] {
                self.job_runs.with_label_values(&[job, status]);
            }
            self.job_items.with_label_values(&[job, "failed"]);
        }
    }

    /// Creates the LLM series of `model` for each prompt engram can send, at zero.
    pub fn initialise_llm(&self, model: &str, purposes: &[String]) {
        for purpose in purposes {
            for status in ["ok", "rejected", "rate_limited", "unavailable", "malformed", "error"] {
                self.llm_requests.with_label_values(&[purpose.as_str(), model, status]);
            }
            for kind in ["prompt", "completion"] {
                self.llm_tokens.with_label_values(&[purpose.as_str(), model, kind]);
            }
            self.llm_duration.with_label_values(&[purpose.as_str(), model]);
        }
    }

    /// Counts one lookup and its duration.
    pub fn lookup(&self, endpoint: &str, hit: bool, seconds: f64) {
        self.lookups.with_label_values(&[endpoint, if hit { "hit" } else { "miss" }]).inc();
        self.lookup_duration.with_label_values(&[endpoint]).observe(seconds);
    }

    /// The name of every metric engram defines, whether or not it has a series yet
    /// (the text exposition leaves out families without any).
    pub fn names(&self) -> Vec<String> {
        use prometheus::core::Collector;
        let collectors: [&dyn Collector; 27] = [
            &self.http_requests,
            &self.http_duration,
            &self.llm_requests,
            &self.llm_tokens,
            &self.llm_duration,
            &self.embeddings,
            &self.embedding_duration,
            &self.lookups,
            &self.lookup_duration,
            &self.rerank_calls,
            &self.rerank_duration,
            &self.corrections,
            &self.job_runs,
            &self.job_duration,
            &self.job_items,
            &self.job_last_success,
            &self.events_pending,
            &self.events_unembedded,
            &self.memories,
            &self.entities,
            &self.relations,
            &self.graph_walks,
            &self.graph_reached,
            &self.job_interval,
            &self.ready,
            &self.webhook_deliveries,
            &self.webhook_outbox_age,
        ];
        collectors.iter().flat_map(|c| c.desc()).map(|d| d.fq_name.clone()).collect()
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut buffer = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut buffer).expect("text encoding cannot fail");
        String::from_utf8(buffer).expect("the text format is UTF-8")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
