//! The one place settings are read: compiled-in defaults, then an optional
//! `engram.toml`, then `ENGRAM_SECTION__KEY` environment variables.
//!
//! Unknown keys and mistyped values are startup errors that name the key.

mod graph;
mod ingest;
mod rerank;
mod search;
mod sections;
mod transport;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use graph::GraphSettings;
pub use ingest::{IngestSettings, SENSITIVE_KINDS};
pub use rerank::RerankSettings;
pub use search::{RankerChoice, SearchSettings};
pub use sections::*;
pub use transport::{TelemetrySettings, TlsSettings, WebhookSettings};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// The home directory (`--home`/`ENGRAM_HOME`), not a file setting.
    #[serde(skip)]
    pub home: PathBuf,
    pub server: ServerSettings,
    pub database: DatabaseSettings,
    pub ingest: IngestSettings,
    pub search: SearchSettings,
    pub rerank: RerankSettings,
    pub graph: GraphSettings,
    pub corrections: CorrectionSettings,
    pub log: LogSettings,
    pub embeddings: EmbeddingSettings,
    pub llm: LlmSettings,
    pub jobs: JobSettings,
    pub tls: TlsSettings,
    pub telemetry: TelemetrySettings,
    pub webhooks: WebhookSettings,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {0} does not exist")]
    MissingFile(PathBuf),
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

impl Settings {
    /// Defaults, then `file` (if given, it must exist; otherwise `./engram.toml` if present),
    /// then the `ENGRAM_SECTION__KEY` variables in `env`.
    pub fn load(file: Option<&Path>, env: impl IntoIterator<Item = (String, String)>) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder();
        match file {
            Some(path) if !path.exists() => return Err(ConfigError::MissingFile(path.into())),
            Some(path) => builder = builder.add_source(config::File::from(path).format(config::FileFormat::Toml)),
            None => {
                builder = builder.add_source(config::File::new("engram.toml", config::FileFormat::Toml).required(false))
            }
        }
        builder = builder.add_source(
            config::Environment::default()
                .separator("__")
                .source(Some(sectioned_env(env)))
                .try_parsing(true)
                .list_separator(",")
                .with_list_parse_key("server.cors_origins")
                .with_list_parse_key("server.mcp_hosts")
                .with_list_parse_key("webhooks.allowed_hosts"),
        );
        let mut settings: Settings =
            builder.build().and_then(|c| c.try_deserialize()).map_err(|err| ConfigError::Invalid(err.to_string()))?;
        settings.validate()?;
        settings.database.ca_file = settings.tls.ca_file.clone();
        // A release reads the job files shipped next to its binary, wherever it is started.
        if settings.jobs.dir == JobSettings::default().dir
            && let Some(shipped) = beside_binary("jobs")
        {
            settings.jobs.dir = shipped;
        }
        // And its ranker's weights.
        if settings.search.ranker_file == SearchSettings::default().ranker_file
            && !settings.search.ranker_file.exists()
            && let Some(shipped) = beside_binary("ranker")
        {
            settings.search.ranker_file = shipped.join("learned.json");
        }
        Ok(settings)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, problem: &str| Err(ConfigError::Invalid(format!("{key}: {problem}")));
        if self.server.bind.parse::<std::net::SocketAddr>().is_err() {
            return invalid("server.bind", "expected an address like 127.0.0.1:8080");
        }
        if self.server.metrics_bind.as_ref().is_some_and(|b| b.parse::<std::net::SocketAddr>().is_err()) {
            return invalid("server.metrics_bind", "expected an address like 127.0.0.1:9100");
        }
        if self.webhooks.timeout_ms == 0 {
            return invalid("webhooks.timeout_ms", "must be at least 1");
        }
        if let Some(host) = self.webhooks.allowed_hosts.iter().find(|h| h.trim().is_empty() || h.contains('/')) {
            return invalid("webhooks.allowed_hosts", &format!("`{host}` is not a host name like hooks.example.com"));
        }
        for origin in &self.server.cors_origins {
            let scheme_ok = origin.starts_with("http://") || origin.starts_with("https://");
            if !scheme_ok || origin.ends_with('/') || origin[origin.find("//").map_or(0, |i| i + 2)..].contains('/') {
                return invalid(
                    "server.cors_origins",
                    &format!("`{origin}` is not an origin like https://app.example.com"),
                );
            }
        }
        if self.server.mcp_hosts.iter().all(|host| host.trim().is_empty()) {
            return invalid("server.mcp_hosts", "must name at least one host; an empty list would accept any Host");
        }
        let buffers = &self.database.embedded_shared_buffers;
        let digits = buffers.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        if buffers != "auto"
            && (digits.is_empty()
                || !digits.chars().all(|c| c.is_ascii_digit())
                || !["kB", "MB", "GB"].contains(&&buffers[digits.len()..]))
        {
            return invalid("database.embedded_shared_buffers", "expected `auto` or a size like 512MB or 2GB");
        }
        if let Some(kind) = self.ingest.redact.iter().find(|k| !SENSITIVE_KINDS.contains(&k.as_str())) {
            return invalid("ingest.redact", &format!("`{kind}` is not one of {}", SENSITIVE_KINDS.join(", ")));
        }
        if self.database.max_connections == 0 {
            return invalid("database.max_connections", "must be at least 1");
        }
        for (key, url) in [("database.url", &self.database.url), ("database.read_url", &self.database.read_url)] {
            if let Some(url) = url
                && !(url.starts_with("postgres://") || url.starts_with("postgresql://"))
            {
                return invalid(key, "expected a postgres:// URL");
            }
        }
        if self.database.read_url.is_some() && self.database.url.is_none() {
            return invalid("database.read_url", "needs database.url as well");
        }
        // pgvector refuses other values, and every lookup connection sets one of them.
        for (key, ef) in [
            ("search.ef_search", self.search.ef_search),
            ("search.user_index_ef_search", self.search.user_index_ef_search),
        ] {
            if !(1..=1000).contains(&ef) {
                return invalid(key, "must be between 1 and 1000");
            }
        }
        if let Err(problem) = self.graph.check().and_then(|()| self.rerank.check()) {
            return Err(ConfigError::Invalid(problem));
        }
        if self.ingest.session_idle_minutes == 0 {
            return invalid("ingest.session_idle_minutes", "must be at least 1");
        }
        if self.embeddings.provider == EmbeddingProvider::Openai {
            if self.embeddings.model.is_none() {
                return invalid("embeddings.model", "is required with embeddings.provider = openai");
            }
            if self.embeddings.dimensions.unwrap_or(0) == 0 {
                return invalid("embeddings.dimensions", "is required (and above 0) with embeddings.provider = openai");
            }
        }
        if self.llm.provider == LlmProvider::Openai && self.llm.model.is_none() {
            return invalid("llm.model", "is required with llm.provider = openai");
        }
        for (key, url) in [("embeddings.base_url", &self.embeddings.base_url), ("llm.base_url", &self.llm.base_url)] {
            if url.as_deref().is_some_and(|u| !(u.starts_with("http://") || u.starts_with("https://"))) {
                return invalid(key, "expected an http:// or https:// URL");
            }
        }
        if self.search.default_limit == 0 || self.search.default_limit > self.search.max_limit {
            return invalid("search.default_limit", "must be between 1 and search.max_limit");
        }
        for (key, value) in [
            ("search.event_weight", self.search.event_weight),
            ("search.other_turn_weight", self.search.other_turn_weight),
            ("search.outside_window_weight", self.search.outside_window_weight),
            ("search.context_working_share", self.search.context_working_share),
            ("search.context_profile_share", self.search.context_profile_share),
            ("search.context_relations_share", self.search.context_relations_share),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return invalid(key, "must be between 0 and 1");
            }
        }
        if self.search.context_working_share + self.search.context_profile_share > 1.0 {
            return invalid(
                "search.context_profile_share",
                "and search.context_working_share must add up to at most 1",
            );
        }
        for (key, value) in [
            ("search.default_min_score", self.search.default_min_score),
            ("search.context_min_score", self.search.context_min_score),
        ] {
            if value.is_some_and(|v| !(0.0..=1.0).contains(&v)) {
                return invalid(key, "must be between 0 and 1");
            }
        }
        if let Err(err) = engram_language::configured::Patterns::new(&self.corrections.patterns) {
            return invalid("corrections.patterns", &err);
        }
        if self.server.tls_cert.is_some() != self.server.tls_key.is_some() {
            return invalid("server.tls_cert", "and server.tls_key go together: set both to serve HTTPS, or neither");
        }
        if let Some(url) = &self.telemetry.otlp_endpoint
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return invalid("telemetry.otlp_endpoint", "expected an http:// or https:// URL");
        }
        if self.ingest.max_batch_events == 0 {
            return invalid("ingest.max_batch_events", "must be at least 1");
        }
        Ok(())
    }
}

/// The folder `name` next to the running binary, if there is one: where a release
/// (`scripts/package`) keeps its job files and models.
pub fn beside_binary(name: &str) -> Option<PathBuf> {
    let dir = std::env::current_exe().ok()?.parent()?.join(name);
    dir.is_dir().then_some(dir)
}

/// `ENGRAM_DATABASE__URL=x` becomes `database__url=x`; variables without a section
/// (`ENGRAM_HOME`, `ENGRAM_CONFIG`) belong to the command line, not to the settings.
fn sectioned_env(env: impl IntoIterator<Item = (String, String)>) -> HashMap<String, String> {
    env.into_iter()
        .filter_map(|(name, value)| {
            let rest = name.strip_prefix("ENGRAM_")?;
            rest.contains("__").then(|| (rest.to_ascii_lowercase(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn server_limits_and_origins_parse_and_bad_ones_are_named() {
        let s = Settings::load(
            None,
            env(&[
                ("ENGRAM_SERVER__RATE_LIMIT", "50/s"),
                ("ENGRAM_SERVER__CORS_ORIGINS", "https://app.example.com,http://localhost:3000"),
            ]),
        )
        .unwrap();
        assert_eq!(s.server.rate_limit.unwrap().to_string(), "50/s");
        assert_eq!(s.server.cors_origins, vec!["https://app.example.com", "http://localhost:3000"]);
        for (key, value, named) in [
            ("ENGRAM_SERVER__RATE_LIMIT", "fast", "rate"),
            ("ENGRAM_SERVER__RATE_LIMIT", "0/s", "rate"),
            ("ENGRAM_SERVER__CORS_ORIGINS", "app.example.com", "server.cors_origins"),
            ("ENGRAM_SERVER__CORS_ORIGINS", "https://app.example.com/path", "server.cors_origins"),
            ("ENGRAM_SERVER__METRICS_BIND", "loopback", "server.metrics_bind"),
        ] {
            let err = Settings::load(None, env(&[(key, value)])).unwrap_err().to_string();
            assert!(err.contains(named), "{key}={value}: {err}");
        }
    }

    #[test]
    fn environment_overrides_defaults() {
        let s = Settings::load(
            None,
            env(&[("ENGRAM_DATABASE__URL", "postgres://x@h/db"), ("ENGRAM_INGEST__MAX_BATCH_EVENTS", "7")]),
        )
        .unwrap();
        assert_eq!(s.database.url.as_deref(), Some("postgres://x@h/db"));
        assert_eq!(s.ingest.max_batch_events, 7);
        assert_eq!(s.server.bind, "127.0.0.1:8080");
    }

    #[test]
    fn unknown_and_mistyped_keys_are_named() {
        let err = Settings::load(None, env(&[("ENGRAM_DATABASE__URLL", "x")])).unwrap_err();
        assert!(err.to_string().contains("urll"), "{err}");
        let err = Settings::load(None, env(&[("ENGRAM_INGEST__MAX_BATCH_EVENTS", "many")])).unwrap_err();
        assert!(err.to_string().contains("max_batch_events"), "{err}");
        let err = Settings::load(None, env(&[("ENGRAM_EMBEDDINGS__PROVIDER", "magic")])).unwrap_err();
        assert!(err.to_string().contains("provider"), "{err}");
        let err = Settings::load(None, env(&[("ENGRAM_DATABASE__EMBEDDED_SHARED_BUFFERS", "lots")])).unwrap_err();
        assert!(err.to_string().contains("embedded_shared_buffers"), "{err}");
        assert!(Settings::load(None, env(&[("ENGRAM_DATABASE__EMBEDDED_SHARED_BUFFERS", "2GB")])).is_ok());
        let err = Settings::load(None, env(&[("ENGRAM_SERVER__BIND", "nowhere")])).unwrap_err();
        assert!(err.to_string().contains("server.bind"), "{err}");
        let err = Settings::load(None, env(&[("ENGRAM_SEARCH__USER_INDEX_EF_SEARCH", "0")])).unwrap_err();
        assert!(err.to_string().contains("search.user_index_ef_search"), "{err}");
    }

    #[test]
    fn remote_models_need_a_model_and_a_dimension() {
        let err = Settings::load(None, env(&[("ENGRAM_EMBEDDINGS__PROVIDER", "openai")])).unwrap_err();
        assert!(err.to_string().contains("embeddings.model"), "{err}");
        let err =
            Settings::load(None, env(&[("ENGRAM_EMBEDDINGS__PROVIDER", "openai"), ("ENGRAM_EMBEDDINGS__MODEL", "m")]))
                .unwrap_err();
        assert!(err.to_string().contains("embeddings.dimensions"), "{err}");
        let err = Settings::load(None, env(&[("ENGRAM_LLM__PROVIDER", "openai")])).unwrap_err();
        assert!(err.to_string().contains("llm.model"), "{err}");
        let err = Settings::load(None, env(&[("ENGRAM_LLM__BASE_URL", "localhost:8000")])).unwrap_err();
        assert!(err.to_string().contains("llm.base_url"), "{err}");
    }

    #[test]
    fn variables_without_a_section_are_not_settings() {
        assert!(Settings::load(None, env(&[("ENGRAM_HOME", "/tmp/x"), ("ENGRAM_CONFIG", "")])).is_ok());
    }

    #[test]
    fn a_named_config_file_must_exist() {
        let err = Settings::load(Some(Path::new("/nonexistent/engram.toml")), env(&[])).unwrap_err();
        assert!(matches!(err, ConfigError::MissingFile(_)));
    }
}
