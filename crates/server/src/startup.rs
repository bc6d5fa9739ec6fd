//! Wiring: builds the HTTP application, and for the worker role the scheduler, from
//! settings and a database, so that `engram serve` and the tests start exactly the
//! same thing.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::{Server, ServerHandle};
use actix_web::middleware::{Condition, from_fn};
use actix_web::{App, HttpServer, web};
use anyhow::Context;
use utoipa_actix_web::AppExt;

use crate::http::{self, state::AppState};
use engram_base::clock::Clock;
use engram_base::configuration::Settings;
use engram_base::db::Database;
use engram_base::metrics::Metrics;
use engram_base::models::{Embedder, Llm};
use engram_base::tls::Trust;
use engram_core::access::AccessRecorder;
use engram_core::jobs::{Models, definition, scheduler::Worker};
use engram_core::webhooks::deliver::Deliverer;

pub struct Application {
    port: u16,
    server: Server,
    /// `/metrics` on `server.metrics_bind`, when set: its port, and how to stop it.
    metrics_server: Option<(u16, ServerHandle)>,
    access: Arc<AccessRecorder>,
    db: Database,
    worker: Option<Worker>,
    deliverer: Option<Deliverer>,
}

impl Application {
    /// Loads the job files and models, binds `settings.server.bind` (port 0 picks a free
    /// port), builds the server and, unless the role is `api`, starts the worker.
    pub async fn build(settings: Settings, db: Database) -> anyhow::Result<Self> {
        Self::build_with_clock(settings, db, Clock::system()).await
    }

    /// Like [`Application::build`], with lookups and ingestion reading `clock`.
    pub async fn build_with_clock(settings: Settings, db: Database, clock: Clock) -> anyhow::Result<Self> {
        let jobs = Arc::new(definition::load_dir(&settings.jobs.dir)?);
        let listener = TcpListener::bind(&settings.server.bind)
            .with_context(|| format!("cannot listen on {}", settings.server.bind))?;
        let port = listener.local_addr()?.port();
        let workers =
            settings.server.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
        let metrics = Metrics::new();
        let trust = Trust::from_settings(&settings.tls).map_err(anyhow::Error::msg)?;
        let embedder =
            Arc::new(Embedder::from_settings(&settings.embeddings, &settings.home, &trust, metrics.clone())?);
        let llm = Llm::from_settings(&settings.llm, &trust, metrics.clone())?.map(Arc::new);
        let prompts = engram_core::jobs::load_prompts(&settings.jobs.dir, llm.is_some(), &jobs)?;
        let access = Arc::new(AccessRecorder::default());
        let flush_every = Duration::from_millis(settings.search.access_flush_ms.max(10));
        metrics.initialise(&jobs.keys().map(String::as_str).collect::<Vec<_>>());
        if let Some(llm) = &llm {
            metrics.initialise_llm(llm.model(), &prompts.names().map(str::to_owned).collect::<Vec<_>>());
        }
        let role = settings.server.role;
        let worker = match role.runs_jobs() {
            true => {
                let models = Models {
                    embedder: embedder.clone(),
                    llm: llm.clone(),
                    prompts,
                    graph: Arc::new(engram_core::graph::Graph::for_jobs(&settings)),
                    secret_kinds: Arc::new(settings.ingest.redact.clone()),
                };
                Some(
                    Worker::start(db.pool.clone(), jobs.clone(), metrics.clone(), models, settings.jobs.clone())
                        .await?,
                )
            }
            false => None,
        };
        let deliverer = match role.runs_jobs() {
            true => Some(Deliverer::start(db.pool.clone(), &trust, metrics.clone(), settings.webhooks.clone())?),
            false => None,
        };
        let state = api_state(db.clone(), settings, metrics, (embedder, llm), access.clone(), jobs.clone(), clock)?;
        let cors_origins = state.settings.server.cors_origins.clone();
        let console = state.settings.server.console;
        let (tls_cert, tls_key) = (state.settings.server.tls_cert.clone(), state.settings.server.tls_key.clone());
        let metrics_listener = match &state.settings.server.metrics_bind {
            Some(bind) => Some(
                TcpListener::bind(bind).with_context(|| format!("cannot listen on {bind} (server.metrics_bind)"))?,
            ),
            None => None,
        };
        let state = web::Data::new(state);
        let readiness_state = state.clone();
        let metrics_state = state.clone();
        let metrics_here = metrics_listener.is_none();
        let mcp_sessions = Arc::new(rmcp_actix_web::transport::LocalSessionManager::default());
        let server = HttpServer::new(move || {
            App::new()
                .into_utoipa_app()
                .openapi(http::openapi::base())
                .app_data(state.clone())
                .configure(if role.serves_api() { http::configure } else { http::configure_operations })
                .configure(|cfg| {
                    if metrics_here {
                        http::health::configure_metrics(cfg);
                    }
                })
                .openapi_service(http::openapi::serve)
                .map(|app| {
                    // The last wrap runs first: every request is counted, 401s and 429s
                    // included; CORS preflights are answered before authentication.
                    app.wrap(from_fn(http::auth::authenticate))
                        .wrap(Condition::new(!cors_origins.is_empty(), http::cors(&cors_origins)))
                        .wrap(from_fn(http::record_metrics))
                        .default_service(web::to(http::not_found))
                })
                .into_app()
                .configure(|cfg| {
                    if role.serves_api() {
                        cfg.service(crate::mcp::scope(state.clone(), mcp_sessions.clone()));
                        if console {
                            cfg.service(http::console::scope());
                        }
                    }
                })
        })
        .workers(workers);
        let server = match (&tls_cert, &tls_key) {
            (Some(cert), Some(key)) => {
                let config = engram_base::tls::server_config(cert, key).map_err(anyhow::Error::msg)?;
                server.listen_rustls_0_23(listener, config)?
            }
            _ => server.listen(listener)?,
        }
        .run();
        let metrics_server = match metrics_listener {
            Some(listener) => {
                let port = listener.local_addr()?.port();
                let server = HttpServer::new(move || {
                    App::new()
                        .app_data(metrics_state.clone())
                        .service(http::health::metrics)
                        .default_service(web::to(http::not_found))
                })
                .workers(1)
                .listen(listener)?
                .run();
                let handle = server.handle();
                tokio::spawn(server);
                Some((port, handle))
            }
            None => None,
        };
        tokio::spawn(flush_access_periodically(access.clone(), db.clone(), flush_every));
        tokio::spawn(check_readiness_periodically(readiness_state));
        Ok(Self { port, server, metrics_server, access, db, worker, deliverer })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port of the separate metrics listener, when `server.metrics_bind` is set.
    pub fn metrics_port(&self) -> Option<u16> {
        self.metrics_server.as_ref().map(|(port, _)| *port)
    }

    /// The buffer of access statistics, for flushing on demand.
    pub fn access(&self) -> Arc<AccessRecorder> {
        self.access.clone()
    }

    /// Serves until SIGINT/SIGTERM, finishes in-flight requests and runs' units in
    /// flight, then writes the access statistics still buffered.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let served = self.server.await;
        if let Some((_, metrics)) = self.metrics_server {
            metrics.stop(true).await;
        }
        if let Some(worker) = self.worker {
            worker.stop().await;
        }
        if let Some(deliverer) = self.deliverer {
            deliverer.stop().await;
        }
        if let Err(err) = self.access.flush(&self.db.pool).await {
            tracing::error!(error = %err, "cannot write access statistics at shutdown");
        }
        served
    }
}

/// `engram mcp --stdio`: the MCP tools on stdin and stdout, on the state the API's
/// handlers share, with the access statistics written as `serve` writes them.
pub async fn serve_mcp_stdio(settings: Settings, db: Database) -> anyhow::Result<()> {
    let flush_every = Duration::from_millis(settings.search.access_flush_ms.max(10));
    let state = web::Data::new(standalone_state(settings, db.clone())?);
    let access = state.access.clone();
    let flusher = tokio::spawn(flush_access_periodically(access.clone(), db.clone(), flush_every));
    let served = crate::mcp::serve_stdio(state).await;
    flusher.abort();
    access.flush(&db.pool).await?;
    served
}

/// What the API's handlers share: the state of [`Application::build`] without a
/// listener or a worker. It runs no jobs: without a `jobs.dir` (started from another
/// folder), lookups rank by the default decay.
fn standalone_state(settings: Settings, db: Database) -> anyhow::Result<AppState> {
    let jobs = match settings.jobs.dir.is_dir() {
        true => definition::load_dir(&settings.jobs.dir)?,
        false => {
            tracing::warn!(dir = %settings.jobs.dir.display(), "no jobs.dir here: lookups rank by the default decay");
            Default::default()
        }
    };
    let jobs = Arc::new(jobs);
    let metrics = Metrics::new();
    let trust = Trust::from_settings(&settings.tls).map_err(anyhow::Error::msg)?;
    let embedder = Arc::new(Embedder::from_settings(&settings.embeddings, &settings.home, &trust, metrics.clone())?);
    let llm = Llm::from_settings(&settings.llm, &trust, metrics.clone())?.map(Arc::new);
    let access = Arc::new(AccessRecorder::default());
    api_state(db, settings, metrics, (embedder, llm), access, jobs, Clock::system())
}

fn api_state(
    db: Database,
    settings: Settings,
    metrics: Metrics,
    (embedder, llm): (Arc<Embedder>, Option<Arc<Llm>>),
    access: Arc<AccessRecorder>,
    jobs: Arc<std::collections::BTreeMap<String, engram_core::jobs::Definition>>,
    clock: Clock,
) -> anyhow::Result<AppState> {
    let mut state = AppState::new(db, settings, metrics, embedder, llm, access, jobs.clone())?;
    state.clock = clock;
    // Search ranks by the same decay the evict job scores with.
    if let Some(decay) = jobs.values().find_map(|d| d.job.ranking_decay()) {
        state.decay = decay.clone();
    }
    Ok(state)
}

/// Writes the buffered access statistics every `every`, for as long as the process runs.
async fn flush_access_periodically(access: Arc<AccessRecorder>, db: Database, every: Duration) {
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if access.pending() > 0
            && let Err(err) = access.flush(&db.pool).await
        {
            tracing::warn!(error = %err, "cannot write access statistics; keeping them for the next flush");
        }
    }
}

/// Keeps `engram_ready` current for alerting, whether or not anything calls `/readyz`.
async fn check_readiness_periodically(state: web::Data<AppState>) {
    let mut ticker = tokio::time::interval(Duration::from_secs(15));
    loop {
        ticker.tick().await;
        state.readiness_problems().await;
    }
}
