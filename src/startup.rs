//! Wiring: builds the HTTP application from settings and a database, so that
//! `engram serve` and the tests start exactly the same thing.

use std::net::TcpListener;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use anyhow::Context;

use crate::configuration::Settings;
use crate::db::Database;
use crate::http::{self, state::AppState};
use crate::metrics::Metrics;

pub struct Application {
    port: u16,
    server: Server,
}

impl Application {
    /// Binds `settings.server.bind` (port 0 picks a free port) and builds the server.
    pub fn build(settings: Settings, db: Database) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(&settings.server.bind)
            .with_context(|| format!("cannot listen on {}", settings.server.bind))?;
        let port = listener.local_addr()?.port();
        let workers = settings.server.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
        let state = web::Data::new(AppState { db, settings, metrics: Metrics::new() });
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
