//! Every metric engram exports, in one place. Names are a contract (DESIGN §5);
//! labels are bounded: route patterns, never raw paths, users or tenants.

use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry, TextEncoder};

/// Request latencies from 1 ms to 10 s.
const HTTP_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    pub http_requests: IntCounterVec,
    pub http_duration: HistogramVec,
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let http_requests = IntCounterVec::new(
            Opts::new("engram_http_requests_total", "HTTP requests by method, route pattern and status"),
            &["method", "route", "status"],
        )
        .expect("valid metric");
        let http_duration = HistogramVec::new(
            HistogramOpts::new("engram_http_request_duration_seconds", "HTTP request duration by method and route pattern")
                .buckets(HTTP_BUCKETS.to_vec()),
            &["method", "route"],
        )
        .expect("valid metric");
        registry.register(Box::new(http_requests.clone())).expect("registered once");
        registry.register(Box::new(http_duration.clone())).expect("registered once");
        Self { registry, http_requests, http_duration }
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
