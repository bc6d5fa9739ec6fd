//! Logs and traces.
//!
//! Logs go to stderr so stdout stays for command output: human-readable by default,
//! JSON by configuration, filtered by `RUST_LOG` or `log.filter`. Traces go to an
//! OpenTelemetry collector over OTLP/HTTP when `telemetry.otlp_endpoint` is set
//! ([`traces`]); off, they cost nothing.

pub mod traces;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::configuration::{LogFormat, LogSettings, TelemetrySettings};
use crate::tls::Trust;

/// What must outlive the process's work: the trace exporter, flushed by [`Telemetry::shutdown`].
#[must_use = "dropping it stops the trace exporter before its last spans are sent"]
pub struct Telemetry {
    traces: Option<traces::Exporter>,
}

impl Telemetry {
    /// Sends the spans still buffered; a no-op without traces.
    pub async fn shutdown(self) {
        if let Some(exporter) = self.traces {
            exporter.shutdown().await;
        }
    }
}

/// Installs the process's logging and, with an endpoint, its trace exporter. A second
/// call (tests build several apps in one process) keeps the first.
pub fn init(log: &LogSettings, telemetry: &TelemetrySettings, trust: &Trust) -> Telemetry {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&log.filter))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = match log.format {
        LogFormat::Text => logs.boxed(),
        LogFormat::Json => logs.json().boxed(),
    };
    let exporter = match traces::Exporter::start(telemetry, trust) {
        Ok(exporter) => exporter,
        Err(problem) => {
            eprintln!("engram: traces are off: {problem}");
            None
        }
    };
    let spans = exporter.as_ref().map(traces::Exporter::layer);
    let installed = tracing_subscriber::registry().with(logs.with_filter(filter)).with(spans).try_init();
    match installed {
        Ok(()) => Telemetry { traces: exporter },
        Err(_) => Telemetry { traces: None },
    }
}
