//! The sections of `engram.toml`, each with its compiled-in defaults.

use std::path::PathBuf;

use engram_language::configured::CORRECTIONS;
use serde::Deserialize;

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
    /// What `engram serve` runs; `--role` overrides it.
    pub role: Role,
    /// Requests per key and replica for keys created without a limit of their own;
    /// unset: unlimited.
    pub rate_limit: Option<RateLimit>,
    /// Browser origins allowed to call the API (CORS); empty sends no CORS headers.
    pub cors_origins: Vec<String>,
    /// A listener of its own for `/metrics` (e.g. loopback or the cluster network); the
    /// API port then serves no metrics. Unset: `/metrics` on `bind`.
    pub metrics_bind: Option<String>,
    /// `Host` values `/mcp` answers to (names, or `host:port`); any other is refused, a
    /// defence against DNS rebinding. Add the names a deployment is reached under.
    pub mcp_hosts: Vec<String>,
    /// Whether the API listener serves the web console at `/console`.
    pub console: bool,
    /// With `tls_key`: serve HTTPS with this PEM certificate chain instead of HTTP.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8080".into(),
            max_body_bytes: 8 * 1024 * 1024,
            workers: None,
            key_cache_secs: 10,
            role: Role::All,
            rate_limit: None,
            cors_origins: Vec::new(),
            metrics_bind: None,
            mcp_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            console: true,
            tls_cert: None,
            tls_key: None,
        }
    }
}

/// A request rate: `50/s`, `600/m` or `10000/h` — at most that many requests in the
/// period, refilled evenly (a token bucket holding one period's worth).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct RateLimit {
    pub requests: std::num::NonZeroU32,
    pub per: std::time::Duration,
}

impl RateLimit {
    pub fn parse(text: &str) -> Result<Self, String> {
        let problem = || format!("`{text}` is not a rate: expected requests per period, like 50/s, 600/m or 10000/h");
        let (count, unit) = text.trim().split_once('/').ok_or_else(problem)?;
        let requests = count.trim().parse::<std::num::NonZeroU32>().map_err(|_| problem())?;
        let seconds = match unit.trim() {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            _ => return Err(problem()),
        };
        Ok(Self { requests, per: std::time::Duration::from_secs(seconds) })
    }
}

impl TryFrom<String> for RateLimit {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text)
    }
}

impl std::fmt::Display for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unit = match self.per.as_secs() {
            1 => "s",
            60 => "m",
            _ => "h",
        };
        write!(f, "{}/{unit}", self.requests)
    }
}

/// `api` serves the HTTP API and runs no jobs; `worker` runs the scheduler and jobs and
/// serves only health and metrics; `all` does both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    All,
    Api,
    Worker,
}

impl Role {
    pub fn serves_api(self) -> bool {
        self != Role::Worker
    }

    pub fn runs_jobs(self) -> bool {
        self != Role::Api
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
    /// The embedded server's `shared_buffers`: a size like `2GB`, or `auto` for a
    /// quarter of the machine's memory (128MB to 8GB), the usual PostgreSQL advice.
    pub embedded_shared_buffers: String,
    /// `tls.ca_file`, copied here when the settings load: PostgreSQL trusts it too.
    #[serde(skip)]
    pub ca_file: Option<PathBuf>,
}

impl DatabaseSettings {
    /// `embedded_shared_buffers` as PostgreSQL takes it, `auto` resolved for this machine.
    pub fn shared_buffers(&self) -> String {
        if self.embedded_shared_buffers != "auto" {
            return self.embedded_shared_buffers.clone();
        }
        let total_kb = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|info| {
                info.lines().find(|l| l.starts_with("MemTotal:"))?.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .unwrap_or(2 * 1024 * 1024);
        format!("{}MB", (total_kb / 4 / 1024).clamp(128, 8192))
    }
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: None,
            read_url: None,
            max_connections: 16,
            pg_bin_dir: None,
            auto_migrate: true,
            embedded_shared_buffers: "auto".into(),
            ca_file: None,
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
        Self { patterns: CORRECTIONS.iter().map(|p| (*p).to_owned()).collect(), window_minutes: 30 }
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

/// The built-in embedding models (`embeddings.local_model`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalModelChoice {
    /// all-MiniLM-L6-v2: English, 384 dimensions.
    Minilm,
    /// The Universal Sentence Encoder multilingual v3: 16 languages (Chinese among them),
    /// across languages, 512 dimensions.
    #[default]
    UseMultilingual,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingSettings {
    pub provider: EmbeddingProvider,
    /// Which built-in model `local` runs.
    pub local_model: LocalModelChoice,
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
            local_model: LocalModelChoice::default(),
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
    /// The folder of `NAME.toml` job files and their prompts; unset, a release's own
    /// (next to its binary), else `./jobs`.
    pub dir: PathBuf,
    /// How often a worker looks for queued runs (admin triggers, other replicas' ticks).
    pub poll_ms: u64,
    /// How often a running run records its progress.
    pub heartbeat_secs: u64,
    /// A run without a heartbeat this long is checked: if its job lock is free, its
    /// worker is gone and the run is marked abandoned.
    pub stale_secs: u64,
    /// Runs of different jobs one worker process executes at once.
    pub max_concurrent_runs: usize,
    /// On shutdown, how long runs may take to finish their unit in flight.
    pub shutdown_grace_secs: u64,
    /// How often the backlog and memory gauges are recomputed.
    pub gauge_refresh_secs: u64,
    /// LLM tokens one tenant's job units may spend per UTC day, across all jobs and
    /// runs; past it the tenant's units wait for the next day. Unset: no daily limit.
    pub tenant_daily_llm_tokens: Option<u64>,
}

impl Default for JobSettings {
    fn default() -> Self {
        Self {
            dir: PathBuf::from("jobs"),
            poll_ms: 1000,
            heartbeat_secs: 5,
            stale_secs: 30,
            max_concurrent_runs: 2,
            shutdown_grace_secs: 30,
            gauge_refresh_secs: 15,
            tenant_daily_llm_tokens: None,
        }
    }
}
