//! A bounded in-memory cache of embeddings keyed by (model, text), so repeated
//! queries and texts are embedded once.

use std::num::NonZeroUsize;
use std::sync::Mutex;

use lru::LruCache;

use super::Embedding;

pub struct EmbeddingCache {
    entries: Option<Mutex<LruCache<(String, String), Embedding>>>,
}

impl EmbeddingCache {
    /// `capacity` 0 disables the cache.
    pub fn new(capacity: usize) -> Self {
        Self { entries: NonZeroUsize::new(capacity).map(|n| Mutex::new(LruCache::new(n))) }
    }

    pub fn get(&self, model: &str, text: &str) -> Option<Embedding> {
        let entries = self.entries.as_ref()?;
        // The key is borrowed as a tuple of owned strings; texts are short, so the copy is cheap
        // next to an embedding.
        entries.lock().expect("cache lock").get(&(model.to_owned(), text.to_owned())).cloned()
    }

    pub fn put(&self, model: &str, text: &str, embedding: &Embedding) {
        if let Some(entries) = &self.entries {
            entries.lock().expect("cache lock").put((model.to_owned(), text.to_owned()), embedding.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_bounded_and_keyed_by_model() {
        let cache = EmbeddingCache::new(2);
        let e = Embedding::new(vec![1.0, 0.0], 2).unwrap();
        cache.put("m1", "a", &e);
        assert!(cache.get("m2", "a").is_none());
        cache.put("m1", "b", &e);
        cache.put("m1", "c", &e);
        assert!(cache.get("m1", "a").is_none(), "the least recently used entry is gone");
        assert_eq!(cache.get("m1", "c"), Some(e));
        assert!(EmbeddingCache::new(0).get("m1", "c").is_none());
    }
}
