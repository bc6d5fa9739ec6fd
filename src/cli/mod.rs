//! The command line (a contract: DESIGN §1). Each subcommand loads the settings,
//! opens the database (attaching to or starting the embedded one) and calls the same
//! functions the HTTP API uses.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use uuid::Uuid;

mod import;
mod jobs;

use engram_base::auth::{self, NewKey};
use engram_base::configuration::{RateLimit, Role, Settings};
use engram_base::db::Database;
use engram_base::domain::{NewEvent, TenantId, UserId, ValidationError};
use engram_base::telemetry;
use engram_base::tls::Trust;
use engram_core::ingest;
use engram_server::startup::Application;

#[derive(Debug, Parser)]
#[command(name = "engram", version, about = "Long-term memory for AI agents")]
pub struct Cli {
    /// Home directory: the embedded database and local state.
    #[arg(long, global = true, env = "ENGRAM_HOME", default_value = ".engram")]
    pub home: PathBuf,
    /// An engram.toml; without it ./engram.toml is read if present.
    #[arg(long, global = true, env = "ENGRAM_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the HTTP API.
    Serve {
        /// Listen address; overrides server.bind.
        #[arg(long)]
        bind: Option<String>,
        /// api: HTTP API only; worker: scheduler and jobs (plus health and metrics); all: both.
        #[arg(long, value_enum)]
        role: Option<Role>,
    },
    /// Serve the MCP tools (the same as `/mcp` of the API) over stdio, for the key in ENGRAM_API_KEY.
    Mcp {
        /// Speak MCP on stdin and stdout (the one transport of this command; over HTTP, MCP is at `/mcp`).
        #[arg(long)]
        stdio: bool,
    },
    /// Apply database migrations.
    Migrate,
    /// Manage API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Run and inspect consolidation jobs.
    #[command(subcommand)]
    Job(jobs::JobCommand),
    /// Import events from a JSON Lines file (one event object per line).
    Ingest {
        file: PathBuf,
        #[arg(long, default_value = "default")]
        tenant: String,
    },
    /// Import a user's data: an engram export, or Mem0's get_all output (JSON).
    Import {
        file: PathBuf,
        #[arg(long, default_value = "default")]
        tenant: String,
        /// The user to import into; without it, the user the document names.
        #[arg(long)]
        user: Option<String>,
    },
    /// Measure performance on this machine and print the figures.
    Bench {
        /// Scenarios to run (embedder, ingest, search, jobs, reembed, graph); all when none is named.
        scenarios: Vec<String>,
        /// A small size that finishes in well under two minutes.
        #[arg(long)]
        quick: bool,
        /// Also write the figures as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Concurrent clients of the search load test.
        #[arg(long, default_value_t = 5)]
        clients: usize,
    },
    /// Evaluate memory quality on the scenarios in eval/ (or a LoCoMo file).
    Eval {
        /// The folder of scenario files.
        #[arg(long, default_value = "eval")]
        scenarios: PathBuf,
        /// A LoCoMo dataset file (JSON) instead of the scenarios.
        #[arg(long)]
        locomo: Option<PathBuf>,
        /// With --locomo: where each question's evidence is lost (stored? a candidate of
        /// which tier, how deep? ranked out? in the context?), per category.
        #[arg(long, requires = "locomo")]
        diagnose: bool,
        /// Write every question's candidates (limit 50, every kind), their features and
        /// whether they are evidence, as JSON lines to this file, for fitting the learned
        /// ranker (scripts/fit_ranker.py).
        #[arg(long)]
        features: Option<PathBuf>,
        /// Results considered per question.
        #[arg(long, default_value_t = 5)]
        k: usize,
        /// Also write the results as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Also run with this OpenAI-compatible LLM (its base URL, e.g. http://127.0.0.1:8077/v1)
        /// and print the figures with and without it.
        #[arg(long, requires = "llm_model")]
        llm_url: Option<String>,
        /// The model to ask at --llm-url.
        #[arg(long, requires = "llm_url")]
        llm_model: Option<String>,
        /// The key sent to --llm-url, if it needs one.
        #[arg(long, env = "ENGRAM_EVAL_LLM_API_KEY")]
        llm_api_key: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key; its secret is printed once, alone on the last line.
    Create {
        #[arg(long)]
        tenant: String,
        /// Comma-separated: read, ingest, admin, operator (the installation's control plane).
        #[arg(long, default_value = "read,ingest")]
        scope: String,
        #[arg(long)]
        name: Option<String>,
        /// Requests per period for this key, per API replica: 50/s, 600/m or 10000/h.
        /// Without it the key has `server.rate_limit` (by default none).
        #[arg(long)]
        rate_limit: Option<String>,
        /// Bind the key to this one end user: it reaches no other, and MCP tools need no
        /// `user_id` with it. Such a key has only the read and ingest scopes.
        #[arg(long)]
        user: Option<String>,
    },
    /// List keys (never their secrets).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key by id.
    Revoke { id: Uuid },
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let mut settings = Settings::load(cli.config.as_deref(), std::env::vars())?;
    settings.home = cli.home.clone();
    if matches!(cli.command, Command::Bench { .. }) {
        // The benchmark's own statements are slow by design; warnings about them would bury its table.
        settings.log.filter.push_str(",sqlx::query=error");
    }
    let trust = Trust::from_settings(&settings.tls).map_err(anyhow::Error::msg)?;
    let telemetry = telemetry::init(&settings.log, &settings.telemetry, &trust);
    let outcome = run_command(cli, settings).await;
    telemetry.shutdown().await;
    outcome
}

async fn run_command(cli: Cli, mut settings: Settings) -> anyhow::Result<()> {
    if let Command::Serve { bind, role } = &cli.command {
        if let Some(bind) = bind {
            bind.parse::<std::net::SocketAddr>()
                .with_context(|| format!("--bind {bind}: expected an address like 127.0.0.1:8080"))?;
            settings.server.bind = bind.clone();
        }
        settings.server.role = role.unwrap_or(settings.server.role);
    }
    // Arguments are checked before the database is touched.
    let keys_create = match &cli.command {
        Command::Keys(KeysCommand::Create { tenant, scope, rate_limit, name, user }) => {
            let tenant = TenantId::parse(tenant.as_str()).map_err(|e| anyhow::anyhow!("--tenant: {}", e.message))?;
            let scopes = auth::parse_scopes(scope).map_err(|e| anyhow::anyhow!("--scope: {e}"))?;
            let mut key = NewKey::new(tenant, &scopes);
            key.name = name.clone();
            key.rate_limit = rate_limit
                .as_deref()
                .map(RateLimit::parse)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--rate-limit: {e}"))?;
            key.user =
                user.as_deref().map(UserId::parse).transpose().map_err(|e| anyhow::anyhow!("--user: {}", e.message))?;
            key.check().map_err(|e| anyhow::anyhow!("--user: {e}"))?;
            Some(key)
        }
        _ => None,
    };
    let job_command = match &cli.command {
        Command::Job(command) => Some(jobs::Prepared::new(command, &settings)?),
        _ => None,
    };
    let import = match &cli.command {
        Command::Import { file, tenant, user } => Some(import::read(file, tenant, user.as_deref())?),
        _ => None,
    };
    if matches!(cli.command, Command::Eval { .. } | Command::Bench { .. }) {
        return instruments(&cli.command, &settings).await;
    }
    if let Command::Mcp { stdio: false } = &cli.command {
        bail!("engram mcp serves over stdio: pass --stdio (over HTTP, `engram serve` has MCP at /mcp)");
    }
    let db = Database::open(&settings.database, &cli.home).await?;
    if (settings.database.auto_migrate || matches!(cli.command, Command::Migrate))
        && let Err(err) = db.migrate().await
    {
        db.close().await;
        return Err(err);
    }
    let outcome = match cli.command {
        Command::Serve { .. } => serve(settings, db.clone()).await,
        Command::Mcp { .. } => engram_server::startup::serve_mcp_stdio(settings, db.clone()).await,
        Command::Migrate => {
            println!("migrations applied");
            Ok(())
        }
        Command::Keys(KeysCommand::Create { .. }) => create_key(&db, &keys_create.expect("parsed above")).await,
        Command::Keys(KeysCommand::List { json }) => list_keys(&db, json).await,
        Command::Keys(KeysCommand::Revoke { id }) => match auth::revoke_key(&db.pool, id).await? {
            true => {
                println!("revoked {id}");
                Ok(())
            }
            false => Err(anyhow::anyhow!("no active key with id {id}")),
        },
        Command::Ingest { file, tenant } => ingest_file(&db, &settings, &file, &tenant).await,
        Command::Import { file, .. } => import::run(&db, &settings, &file, import.expect("read above")).await,
        Command::Job(_) => job_command.expect("prepared above").run(&db, &settings).await,
        Command::Bench { .. } | Command::Eval { .. } => unreachable!("handled before the database opens"),
    };
    db.close().await;
    outcome
}

async fn serve(settings: Settings, db: Database) -> anyhow::Result<()> {
    let bind = settings.server.bind.clone();
    let scheme = if settings.server.tls_cert.is_some() { "https" } else { "http" };
    let app = Application::build(settings, db).await?;
    let host = bind.rsplit_once(':').map_or(bind.as_str(), |(host, _)| host);
    tracing::info!("engram listening on {scheme}://{host}:{}", app.port());
    app.run_until_stopped().await?;
    tracing::info!("engram stopped");
    Ok(())
}

async fn create_key(db: &Database, new: &NewKey) -> anyhow::Result<()> {
    let key = auth::create_key(&db.pool, new).await?;
    let scopes: Vec<&str> = new.scopes.iter().map(|s| s.as_str()).collect();
    let limit = new.rate_limit.map_or_else(String::new, |r| format!(", limited to {r}"));
    let user = new.user.as_ref().map_or_else(String::new, |u| format!(", bound to user {u}"));
    println!("key {} for tenant {} with scopes {}{limit}{user}", key.id, new.tenant, scopes.join(","));
    println!("{}", key.secret);
    Ok(())
}

async fn list_keys(db: &Database, json: bool) -> anyhow::Result<()> {
    let keys = auth::list_keys(&db.pool).await?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &keys)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<36}  {:<16}  {:<18}  {:<16}  {:<10}  {:<16}  name",
        "id", "tenant", "scopes", "prefix", "status", "user"
    )?;
    for key in keys {
        let status = if key.revoked_at.is_some() { "revoked" } else { "active" };
        writeln!(
            out,
            "{:<36}  {:<16}  {:<18}  {:<16}  {:<10}  {:<16}  {}",
            key.id,
            key.tenant_id,
            key.scopes.join(","),
            key.prefix,
            status,
            key.user_id.as_deref().unwrap_or("-"),
            key.name.unwrap_or_default()
        )?;
    }
    Ok(())
}

/// Validates the whole file first, then stores it in batches; client ids make a
/// re-run after an interruption safe.
async fn ingest_file(db: &Database, settings: &Settings, file: &PathBuf, tenant: &str) -> anyhow::Result<()> {
    let tenant = TenantId::parse(tenant).map_err(|e| anyhow::anyhow!("--tenant: {}", e.message))?;
    let reader =
        std::io::BufReader::new(std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?);
    let now = chrono::Utc::now();
    let mut events: Vec<NewEvent> = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("cannot read {}", file.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str(&line)
            .map_err(|err| ValidationError::new("event", format!("is not valid JSON ({err})")))
            .and_then(|value| ingest::parse_event(value, &settings.ingest, now));
        match parsed {
            Ok(event) => events.push(event),
            Err(err) => bail!("{}:{}: {err}; nothing was imported", file.display(), n + 1),
        }
    }
    auth::add_tenant(&mut *db.pool.acquire().await?, &tenant).await?;
    let (mut accepted, mut duplicates) = (0, 0);
    for chunk in events.chunks(settings.ingest.max_batch_events) {
        let done = ingest::ingest(db, &tenant, chunk.to_vec(), &settings.ingest, None).await?;
        accepted += done.accepted;
        duplicates += done.duplicates;
    }
    println!("{accepted} events imported, {duplicates} already present");
    Ok(())
}

/// `engram eval` and `engram bench`, in their own databases.
#[cfg(feature = "instruments")]
async fn instruments(command: &Command, settings: &Settings) -> anyhow::Result<()> {
    match command {
        Command::Eval { scenarios, locomo, diagnose, features, k, json, llm_url, llm_model, llm_api_key } => {
            let llm = llm_url.as_ref().map(|url| engram_base::configuration::LlmSettings {
                provider: engram_base::configuration::LlmProvider::Openai,
                base_url: Some(url.clone()),
                model: llm_model.clone(),
                api_key: Some(llm_api_key.clone().unwrap_or_else(|| "unused".into())),
                ..settings.llm.clone()
            });
            let run = engram_eval::eval::Run {
                dir: scenarios,
                locomo: locomo.as_ref(),
                diagnose: *diagnose,
                features: features.as_deref(),
                k: (*k).max(1),
                json: json.as_deref(),
            };
            engram_eval::eval::run(settings, &run, llm).await
        }
        Command::Bench { scenarios, quick, json, clients } => {
            engram_eval::bench::run(settings, scenarios, *quick, (*clients).max(1), json.as_deref()).await
        }
        other => bail!("{other:?} is no instrument"),
    }
}

/// A release build carries no instruments: it says where they are.
#[cfg(not(feature = "instruments"))]
async fn instruments(_: &Command, _: &Settings) -> anyhow::Result<()> {
    bail!(
        "this engram is a release build, without `engram eval` and `engram bench`: build engram from source \
         (`cargo build --release`, whose default features carry them) to measure"
    )
}
