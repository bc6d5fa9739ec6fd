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

/// `[webhooks]`: where deliveries may go, and how long one may take.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookSettings {
    /// The hosts a subscription's URL may name (`hooks.example.com`, or `*.example.com`
    /// for its subdomains); empty allows any.
    pub allowed_hosts: Vec<String>,
    /// How long one delivery may take, connecting included.
    pub timeout_ms: u64,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self { allowed_hosts: Vec::new(), timeout_ms: 10_000 }
    }
}

impl WebhookSettings {
    /// Whether a URL naming `host` may be subscribed or delivered to.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.allowed_hosts.is_empty()
            || self.allowed_hosts.iter().any(|allowed| {
                let allowed = allowed.trim().to_ascii_lowercase();
                match allowed.strip_prefix("*.") {
                    Some(parent) => host.ends_with(&format!(".{parent}")),
                    None => host == allowed,
                }
            })
    }
}
