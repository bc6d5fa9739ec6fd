//! The one place settings are read: compiled-in defaults, then an optional
//! `engram.toml`, then `ENGRAM_SECTION__KEY` environment variables.
//!
//! Unknown keys and mistyped values are startup errors that name the key.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

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
    pub corrections: CorrectionSettings,
    pub log: LogSettings,
    pub embeddings: EmbeddingSettings,
    pub llm: LlmSettings,
    pub jobs: JobSettings,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSettings {
    /// Address `engram serve` listens on; `--bind` overrides it.
    pub bind: String,
    /// Largest request body accepted, in bytes; bigger bodies get 413.
    pub max_body_bytes: usize,
    pub workers: Option<usize>,
    /// How long a checked API key is trusted without asking the database again;
    /// a revoked key stops working within this time. 0 checks every request.
    pub key_cache_secs: u64,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self { bind: "127.0.0.1:8080".into(), max_body_bytes: 8 * 1024 * 1024, workers: None, key_cache_secs: 10 }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    /// Unset: engram runs its own PostgreSQL under the home directory.
    pub url: Option<String>,
    /// Unset: lookups use `url`.
    pub read_url: Option<String>,
    pub max_connections: u32,
    /// Where the embedded PostgreSQL binaries are; found automatically when unset.
    pub pg_bin_dir: Option<PathBuf>,
    /// Every command applies pending migrations before it starts.
    pub auto_migrate: bool,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: None,
            read_url: None,
            max_connections: 16,
            pg_bin_dir: None,
            auto_migrate: true,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IngestSettings {
    /// A session without an explicit id ends after this many idle minutes.
    pub session_idle_minutes: u32,
    pub max_batch_events: usize,
    pub max_content_bytes: usize,
    pub max_metadata_bytes: usize,
}

impl Default for IngestSettings {
    fn default() -> Self {
        Self {
            session_idle_minutes: 30,
            max_batch_events: 1000,
            max_content_bytes: 32 * 1024,
            max_metadata_bytes: 16 * 1024,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchSettings {
    pub default_limit: usize,
    pub max_limit: usize,
    /// Results below this score are dropped; a lookup with none left is a miss.
    pub default_min_score: f64,
    pub max_query_chars: usize,
    /// Candidates taken from each of the vector and the keyword search.
    pub candidates: usize,
    /// pgvector's `hnsw.ef_search` for lookups.
    pub ef_search: u32,
    /// How often buffered access statistics are written.
    pub access_flush_ms: u64,
    pub context_default_tokens: usize,
    pub context_max_tokens: usize,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            default_limit: 5,
            max_limit: 50,
            default_min_score: 0.3,
            max_query_chars: 2000,
            candidates: 40,
            ef_search: 200,
            access_flush_ms: 1000,
            context_default_tokens: 512,
            context_max_tokens: 8192,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CorrectionSettings {
    /// Case-insensitive regular expressions for user messages that correct the agent.
    pub patterns: Vec<String>,
    /// How long after memories were served a correction is linked to them.
    pub window_minutes: u32,
}

impl Default for CorrectionSettings {
    fn default() -> Self {
        Self { patterns: crate::feedback::default_patterns(), window_minutes: 30 }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    pub format: LogFormat,
    /// `RUST_LOG`-style filter; the `RUST_LOG` variable wins when set.
    pub filter: String,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self { format: LogFormat::Text, filter: "info,sqlx=warn".into() }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbeddingProvider {
    #[default]
    Local,
    Openai,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingSettings {
    pub provider: EmbeddingProvider,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    /// Required for `openai`: the dimension every returned vector must have.
    pub dimensions: Option<u32>,
    /// Send `dimensions` in requests (OpenAI's text-embedding-3 models shorten vectors).
    pub send_dimensions: bool,
    pub batch_size: usize,
    pub timeout_secs: u64,
    /// Embeddings kept in memory for repeated texts; 0 disables the cache.
    pub cache_entries: usize,
    /// Where the local model files are; found automatically when unset.
    pub models_dir: Option<PathBuf>,
    /// Threads per local inference; defaults to the number of CPUs.
    pub threads: Option<usize>,
    /// Local inference sessions that may run at once.
    pub local_sessions: usize,
}

impl Default for EmbeddingSettings {
    fn default() -> Self {
        Self {
            provider: EmbeddingProvider::Local,
            base_url: None,
            model: None,
            api_key: None,
            dimensions: None,
            send_dimensions: false,
            batch_size: 64,
            timeout_secs: 30,
            cache_entries: 10_000,
            models_dir: None,
            threads: None,
            local_sessions: 1,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmProvider {
    #[default]
    None,
    Openai,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSettings {
    pub provider: LlmProvider,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    /// The deadline of one call, retries included.
    pub timeout_secs: u64,
    pub max_tokens: u32,
    pub temperature: f32,
}

impl Default for LlmSettings {
    fn default() -> Self {
        Self {
            provider: LlmProvider::None,
            base_url: None,
            model: None,
            api_key: None,
            timeout_secs: 120,
            max_tokens: 1024,
            temperature: 0.0,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobSettings {
    pub dir: PathBuf,
}

impl Default for JobSettings {
    fn default() -> Self {
        Self { dir: PathBuf::from("jobs") }
    }
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
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
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
                .try_parsing(true),
        );
        let settings: Settings = builder
            .build()
            .and_then(|c| c.try_deserialize())
            .map_err(|err| ConfigError::Invalid(err.to_string()))?;
        settings.validate()?;
        Ok(settings)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, problem: &str| Err(ConfigError::Invalid(format!("{key}: {problem}")));
        if self.server.bind.parse::<std::net::SocketAddr>().is_err() {
            return invalid("server.bind", "expected an address like 127.0.0.1:8080");
        }
        if self.database.max_connections == 0 {
            return invalid("database.max_connections", "must be at least 1");
        }
        for (key, url) in [("database.url", &self.database.url), ("database.read_url", &self.database.read_url)] {
            if let Some(url) = url {
                if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                    return invalid(key, "expected a postgres:// URL");
                }
            }
        }
        if self.database.read_url.is_some() && self.database.url.is_none() {
            return invalid("database.read_url", "needs database.url as well");
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
        if !(0.0..=1.0).contains(&self.search.default_min_score) {
            return invalid("search.default_min_score", "must be between 0 and 1");
        }
        if let Err(problem) = crate::feedback::Detector::new(&self.corrections) {
            return Err(ConfigError::Invalid(problem));
        }
        if self.ingest.max_batch_events == 0 {
            return invalid("ingest.max_batch_events", "must be at least 1");
        }
        Ok(())
    }
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
        let err = Settings::load(None, env(&[("ENGRAM_SERVER__BIND", "nowhere")])).unwrap_err();
        assert!(err.to_string().contains("server.bind"), "{err}");
    }

    #[test]
    fn remote_models_need_a_model_and_a_dimension() {
        let err = Settings::load(None, env(&[("ENGRAM_EMBEDDINGS__PROVIDER", "openai")])).unwrap_err();
        assert!(err.to_string().contains("embeddings.model"), "{err}");
        let err = Settings::load(None, env(&[("ENGRAM_EMBEDDINGS__PROVIDER", "openai"), ("ENGRAM_EMBEDDINGS__MODEL", "m")])).unwrap_err();
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
