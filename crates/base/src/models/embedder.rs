//! [`Embedder`]: the one interface for embeddings, local or remote, with a cache.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::embeddings::CreateEmbeddingRequestArgs;

use super::cache::EmbeddingCache;
use super::local::LocalModel;
use super::{Embedding, ModelError, openai};
use crate::configuration::{EmbeddingProvider, EmbeddingSettings};
use crate::metrics::Metrics;
use crate::tls::Trust;
use tracing::Instrument;

pub struct Embedder {
    backend: Backend,
    model: String,
    dims: usize,
    batch_size: usize,
    cache: EmbeddingCache,
    metrics: Metrics,
}

enum Backend {
    Local(Arc<LocalModel>),
    Remote { client: Box<Client<OpenAIConfig>>, send_dimensions: bool },
}

impl Embedder {
    /// The configured embedder; the local model is looked for in `embeddings.models_dir`,
    /// else `<home>/models`, else `./.engram/models`.
    pub fn from_settings(
        settings: &EmbeddingSettings,
        home: &Path,
        trust: &Trust,
        metrics: Metrics,
    ) -> Result<Self, ModelError> {
        let (backend, model, dims) = match settings.provider {
            EmbeddingProvider::Local => {
                let dir = models_dir(settings, home);
                let threads =
                    settings.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
                let choice = settings.local_model;
                let model = LocalModel::shared(choice, &dir, settings.local_sessions, threads)?;
                (Backend::Local(model), choice.model_name().to_owned(), choice.dims())
            }
            EmbeddingProvider::Openai => {
                let model = settings.model.clone().ok_or_else(|| {
                    ModelError::Config("embeddings.model is required with embeddings.provider = openai".into())
                })?;
                let dims = settings.dimensions.ok_or_else(|| {
                    ModelError::Config("embeddings.dimensions is required with embeddings.provider = openai".into())
                })? as usize;
                let deadline = Duration::from_secs(settings.timeout_secs);
                let client =
                    openai::client(settings.base_url.as_deref(), settings.api_key.as_deref(), deadline, trust)?;
                (Backend::Remote { client: Box::new(client), send_dimensions: settings.send_dimensions }, model, dims)
            }
        };
        Ok(Self {
            backend,
            model,
            dims,
            batch_size: settings.batch_size.max(1),
            cache: EmbeddingCache::new(settings.cache_entries),
            metrics,
        })
    }

    /// The model name recorded beside every stored vector.
    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn is_remote(&self) -> bool {
        matches!(self.backend, Backend::Remote { .. })
    }

    /// One embedding per text, in order; cached texts are not embedded again.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Embedding>, ModelError> {
        let mut out: Vec<Option<Embedding>> = texts.iter().map(|t| self.cache.get(&self.model, t)).collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        for chunk in missing.chunks(self.batch_size) {
            let batch: Vec<String> = chunk.iter().map(|&i| texts[i].clone()).collect();
            let started = Instant::now();
            let span = super::model_span("embeddings", &self.model, "embed");
            span.record("inputs", batch.len());
            let vectors = self.embed_uncached(batch).instrument(span.clone()).await;
            span.record("outcome", vectors.as_ref().map_or_else(ModelError::status_label, |_| "ok"));
            let vectors = vectors?;
            self.metrics.embedding_duration.with_label_values(&[&self.model]).observe(started.elapsed().as_secs_f64());
            self.metrics.embeddings.with_label_values(&[&self.model]).inc_by(chunk.len() as u64);
            for (&i, vector) in chunk.iter().zip(vectors) {
                let embedding = Embedding::new(vector, self.dims)?;
                self.cache.put(&self.model, &texts[i], &embedding);
                out[i] = Some(embedding);
            }
        }
        Ok(out.into_iter().map(|e| e.expect("every text is embedded")).collect())
    }

    pub async fn embed_one(&self, text: &str) -> Result<Embedding, ModelError> {
        Ok(self.embed(&[text.to_owned()]).await?.remove(0))
    }

    /// For readiness: the endpoint answers, with the configured dimension.
    pub async fn check(&self) -> Result<(), ModelError> {
        let vectors = self.embed_uncached(vec!["readiness probe".to_owned()]).await?;
        match vectors.first() {
            Some(v) if v.len() == self.dims => Ok(()),
            Some(v) => Err(ModelError::Dimension { expected: self.dims, got: v.len() }),
            None => Err(ModelError::Malformed("no embedding in the answer".into())),
        }
    }

    async fn embed_uncached(&self, batch: Vec<String>) -> Result<Vec<Vec<f32>>, ModelError> {
        match &self.backend {
            Backend::Local(model) => {
                let model = model.clone();
                tokio::task::spawn_blocking(move || model.embed_blocking(&batch))
                    .await
                    .map_err(|e| ModelError::Local(e.to_string()))?
            }
            Backend::Remote { client, send_dimensions } => {
                let expected = batch.len();
                let mut request = CreateEmbeddingRequestArgs::default();
                request.model(&self.model).input(batch);
                if *send_dimensions {
                    request.dimensions(self.dims as u32);
                }
                let request = request.build().map_err(openai::classify)?;
                let mut response = client.embeddings().create(request).await.map_err(openai::classify)?;
                if response.data.len() != expected {
                    return Err(ModelError::Malformed(format!(
                        "{} embeddings for {expected} inputs",
                        response.data.len()
                    )));
                }
                response.data.sort_by_key(|d| d.index);
                Ok(response.data.into_iter().map(|d| d.embedding).collect())
            }
        }
    }
}

/// Where the local models' files are: `embeddings.models_dir`, else `<home>/models`, else
/// the `models` folder next to the binary (a release), else `./.engram/models`.
pub fn models_dir(settings: &EmbeddingSettings, home: &Path) -> PathBuf {
    if let Some(dir) = &settings.models_dir {
        return dir.clone();
    }
    let in_home = home.join("models");
    if in_home.is_dir() {
        return in_home;
    }
    crate::configuration::beside_binary("models").unwrap_or_else(|| PathBuf::from(".engram/models"))
}
