//! What every handler can reach.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::access::AccessRecorder;
use crate::feedback::Detector;
use crate::jobs::Definition;
use crate::memories::decay::DecayParams;
use crate::search::Lookups;
use engram_base::auth::KeyCache;
use engram_base::configuration::Settings;
use engram_base::db::Database;
use engram_base::metrics::Metrics;
use engram_base::models::{Embedder, Llm};

/// Remote model endpoints are probed at most this often by `/readyz`.
const MODEL_CHECK_TTL: Duration = Duration::from_secs(15);

pub struct AppState {
    pub db: Database,
    /// Connections for searches, preset for vector search.
    pub lookups: Lookups,
    pub settings: Settings,
    pub metrics: Metrics,
    pub embedder: Arc<Embedder>,
    pub llm: Option<Arc<Llm>>,
    /// The rerank stage's endpoint, when `rerank.url` names one.
    pub reranker: Option<engram_base::models::Reranker>,
    /// How lookups order their candidates (`search.ranker`), read once at start.
    pub ranker: crate::search::Ranker,
    pub access: Arc<AccessRecorder>,
    /// Embeds the events this process stores, in the background.
    pub vectors: crate::ingest::vectors::EventVectors,
    pub detector: Detector,
    pub decay: DecayParams,
    /// The graph's settings and aliases.
    pub graph: crate::graph::Graph,
    pub keys: KeyCache,
    /// Per-key request rates (`server.rate_limit`, or the key's own).
    pub limits: engram_base::auth::RateLimits,
    /// "Now" for lookups and ingestion (the system clock unless a replay sets one).
    pub clock: engram_base::clock::Clock,
    /// The job files, by job name.
    pub jobs: Arc<std::collections::BTreeMap<String, Definition>>,
    model_check: tokio::sync::Mutex<Option<(Instant, Vec<String>)>>,
}

impl AppState {
    pub fn new(
        db: Database,
        settings: Settings,
        metrics: Metrics,
        embedder: Arc<Embedder>,
        llm: Option<Arc<Llm>>,
        access: Arc<AccessRecorder>,
        jobs: Arc<std::collections::BTreeMap<String, Definition>>,
    ) -> anyhow::Result<Self> {
        let detector = Detector::new(&settings.corrections).map_err(anyhow::Error::msg)?;
        let keys = KeyCache::new(Duration::from_secs(settings.server.key_cache_secs));
        // The trust store is read from disk only when there is a rerank stage to reach.
        let reranker = match &settings.rerank.url {
            None => None,
            Some(_) => {
                let trust = engram_base::tls::Trust::from_settings(&settings.tls).map_err(anyhow::Error::msg)?;
                engram_base::models::Reranker::from_settings(&settings.rerank, &trust, &metrics)?
            }
        };
        Ok(Self {
            reranker,
            ranker: crate::search::Ranker::from_settings(&settings.search),
            limits: engram_base::auth::RateLimits::new(settings.server.rate_limit),
            graph: crate::graph::Graph::new(&settings.graph),
            vectors: crate::ingest::vectors::EventVectors::start(db.clone(), embedder.clone()),
            lookups: Lookups::new(&db.read_pool.connect_options(), &settings.search, settings.database.max_connections),
            keys,
            db,
            settings,
            metrics,
            embedder,
            llm,
            access,
            detector,
            decay: DecayParams::default(),
            clock: Default::default(),
            jobs,
            model_check: Default::default(),
        })
    }

    /// The lookup service as of now, on this process's read connections.
    pub fn lookup(&self) -> crate::search::Lookup<'_> {
        crate::search::Lookup {
            lookups: &self.lookups,
            embedder: &self.embedder,
            settings: &self.settings.search,
            decay: &self.decay,
            graph: &self.graph,
            access: &self.access,
            reranker: self.reranker.as_ref(),
            ranker: &self.ranker,
            now: self.clock.now(),
        }
    }

    /// Drops what this process holds in memory about a user just forgotten: buffered
    /// access counts (which would otherwise be written back) and the lookup's notes.
    pub fn forget_user(&self, tenant: &engram_base::domain::TenantId, user: &engram_base::domain::UserId) {
        self.access.forget_user(tenant, user);
        self.lookups.forget_user(tenant, user.as_str());
    }

    /// Why this process is not ready (empty when it is): the database must answer
    /// within two seconds and the model endpoints must answer. Also sets `engram_ready`.
    pub async fn readiness_problems(&self) -> Vec<String> {
        let ping = self.db.ping();
        let mut problems = match tokio::time::timeout(Duration::from_secs(2), ping).await {
            Ok(Ok(_)) => Vec::new(),
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "readiness: database error");
                let why = engram_base::tls::ConnectFailure::diagnose(&err);
                vec![format!("database: {}", why.map_or_else(|| "not reachable".to_owned(), |c| c.to_string()))]
            }
            Err(_) => vec!["database: no answer within 2 s".to_owned()],
        };
        problems.extend(self.model_problems().await);
        if !problems.is_empty() {
            tracing::warn!(?problems, "not ready");
        }
        self.metrics.ready.set(if problems.is_empty() { 1.0 } else { 0.0 });
        problems
    }

    /// Problems with the configured remote model endpoints (empty when all is well);
    /// the built-in local model was checked when it loaded.
    pub async fn model_problems(&self) -> Vec<String> {
        let mut cached = self.model_check.lock().await;
        if let Some((at, problems)) = cached.as_ref()
            && at.elapsed() < MODEL_CHECK_TTL
        {
            return problems.clone();
        }
        let mut problems = Vec::new();
        if self.embedder.is_remote()
            && let Err(err) = self.embedder.check().await
        {
            problems.push(format!("embeddings endpoint: {err}"));
        }
        if let Some(llm) = &self.llm
            && let Err(err) = llm.check().await
        {
            problems.push(format!("LLM endpoint: {err}"));
        }
        *cached = Some((Instant::now(), problems.clone()));
        problems
    }
}
