//! How engram reaches what it talks to and shows itself: the outgoing TLS trust and
//! the trace exporter.

use std::path::PathBuf;

use serde::Deserialize;

/// `[tls]`: what every outgoing TLS client trusts besides the public roots.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsSettings {
    /// A PEM bundle of CA certificates (a private CA): trusted by the model endpoints'
    /// clients, the rerank stage, the trace exporter and, unless its URL names an
    /// `sslrootcert`, PostgreSQL.
    pub ca_file: Option<PathBuf>,
}

/// `[telemetry]`: traces over OTLP/HTTP, off unless an endpoint is set.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// An OTLP/HTTP collector's base URL (`http://collector:4318`); spans go to
    /// `{otlp_endpoint}/v1/traces`.
    pub otlp_endpoint: Option<String>,
    /// The `service.name` the spans carry.
    pub service_name: String,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self { otlp_endpoint: None, service_name: "engram".into() }
    }
}
