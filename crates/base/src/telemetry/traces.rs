//! OpenTelemetry traces over OTLP/HTTP (protobuf), batched on the tokio runtime.
//!
//! Spans are engram's `tracing` spans: a request (its method, route and status), the
//! handler and service spans below it, each model call (model, purpose, tokens,
//! outcome), each job run and unit. The statements a request or unit runs are events
//! on its span, with their rows and time (sqlx's `sqlx::query` events: the SQL text,
//! never the values bound to it). No span or event carries a turn's content, a prompt,
//! an embedding or a key.
//!
//! An incoming request's W3C `traceparent` makes its span a child of the caller's, and
//! model calls send theirs on ([`continue_trace`], [`inject`]).

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::propagation::Injector;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::runtime::Tokio;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use tracing::Level;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;

use crate::configuration::TelemetrySettings;
use crate::tls::Trust;

/// The running exporter.
pub struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// The exporter `telemetry` configures, on the current tokio runtime; `None` without
    /// an endpoint.
    pub fn start(telemetry: &TelemetrySettings, trust: &Trust) -> Result<Option<Self>, String> {
        let Some(endpoint) = &telemetry.otlp_endpoint else { return Ok(None) };
        let http = trust.http_client(Duration::from_secs(5))?;
        let exporter = SpanExporter::builder()
            .with_http()
            .with_http_client(http)
            .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
            .with_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("telemetry.otlp_endpoint {endpoint}: {e}"))?;
        let resource = Resource::builder().with_service_name(telemetry.service_name.clone()).build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(BatchSpanProcessor::builder(exporter, Tokio).build())
            .with_resource(resource)
            .build();
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        Ok(Some(Self { provider }))
    }

    /// The `tracing` layer that turns engram's spans into OpenTelemetry spans: engram's
    /// own at info and above, and the statements' events.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        let filter = Targets::new().with_target("engram", Level::INFO).with_target("sqlx::query", Level::DEBUG);
        tracing_opentelemetry::layer().with_tracer(self.provider.tracer("engram")).with_filter(filter)
    }

    /// Sends what is buffered and stops; the processor blocks while it flushes, so off
    /// the async workers.
    pub async fn shutdown(self) {
        let provider = self.provider;
        let done = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(err)) = done {
            eprintln!("engram: the last spans could not be sent: {err}");
        }
    }
}

/// Makes `span` a child of the trace a caller's `traceparent` (and `tracestate`) names.
/// Without traces the propagator is a no-op and so is this.
pub fn continue_trace(span: &tracing::Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    let Some(traceparent) = traceparent else { return };
    let mut carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    if let Some(state) = tracestate {
        carrier.insert("tracestate".to_owned(), state.to_owned());
    }
    let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&carrier));
    let _ = span.set_parent(parent);
}

/// Adds the current span's `traceparent` (and `tracestate`) to an outgoing request.
pub fn inject(headers: &mut reqwest::header::HeaderMap) {
    struct Headers<'a>(&'a mut reqwest::header::HeaderMap);
    impl Injector for Headers<'_> {
        fn set(&mut self, key: &str, value: String) {
            if let (Ok(name), Ok(value)) = (
                reqwest::header::HeaderName::from_bytes(key.as_bytes()),
                reqwest::header::HeaderValue::from_str(&value),
            ) {
                self.0.insert(name, value);
            }
        }
    }
    let context = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&context, &mut Headers(headers)));
}
