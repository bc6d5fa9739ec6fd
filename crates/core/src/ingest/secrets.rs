//! Secrets kept out of every tier: before a turn is stored, the secrets of the kinds
//! `ingest.redact` lists (every kind but phone numbers and e-mail addresses by default)
//! are replaced by a marker such as `[password]`, in its content and in every string of
//! its metadata. The turn's other words stay searchable; the original is kept nowhere,
//! so no vector, summary, fact, graph row, export or log can hold it.

use engram_base::domain::NewEvent;
use engram_language::secrets::{redact_json, redact_kinds};

/// Redacts `kinds` in every event's content and metadata; returns how many events changed.
pub fn redact_events(events: &mut [NewEvent], kinds: &[String]) -> usize {
    if kinds.is_empty() {
        return 0;
    }
    let wanted = |kind: &str| kinds.iter().any(|k| k == kind);
    let mut changed = 0;
    for event in events {
        let redacted = redact_kinds(&event.content, wanted);
        let mut metadata = serde_json::Value::Object(std::mem::take(&mut event.metadata));
        let metadata_changed = redact_json(&mut metadata, &wanted);
        if let serde_json::Value::Object(map) = metadata {
            event.metadata = map;
        }
        if redacted != event.content || metadata_changed {
            event.content = redacted;
            changed += 1;
        }
    }
    changed
}

/// `text` with `kinds` redacted, as a turn would be stored.
pub fn redact(text: &str, kinds: &[String]) -> String {
    redact_kinds(text, |kind| kinds.iter().any(|k| k == kind))
}

/// The fingerprint of the rules that redact `kinds`: the rule set's text and the kinds,
/// hashed. Any change to a rule, a check or `ingest.redact` changes it.
pub fn fingerprint(kinds: &[String]) -> String {
    use sha2::{Digest, Sha256};
    let mut kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let digest =
        Sha256::new().chain_update(engram_language::secrets::rule_set()).chain_update(kinds.join(",")).finalize();
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
