//! Wiring: builds the HTTP application from settings and a database, so that
//! `engram serve` and the tests start exactly the same thing.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use anyhow::Context;

use crate::configuration::Settings;
use crate::db::Database;
use crate::http::{self, state::AppState};
use crate::metrics::Metrics;
use crate::models::{Embedder, Llm};

pub struct Application {
    port: u16,
    server: Server,
}

impl Application {
    /// Loads the models, binds `settings.server.bind` (port 0 picks a free port) and
    /// builds the server.
    pub fn build(settings: Settings, db: Database) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(&settings.server.bind)
            .with_context(|| format!("cannot listen on {}", settings.server.bind))?;
        let port = listener.local_addr()?.port();
        let workers = settings.server.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
        let metrics = Metrics::new();
        let embedder = Arc::new(Embedder::from_settings(&settings.embeddings, &settings.home, metrics.clone())?);
        let llm = Llm::from_settings(&settings.llm, metrics.clone())?.map(Arc::new);
        let state = web::Data::new(AppState::new(db, settings, metrics, embedder, llm));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .wrap(from_fn(http::record_metrics))
                .configure(http::configure)
                .default_service(web::to(http::not_found))
        })
        .workers(workers)
        .listen(listener)?
        .run();
        Ok(Self { port, server })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until SIGINT/SIGTERM, then finishes in-flight requests.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}
