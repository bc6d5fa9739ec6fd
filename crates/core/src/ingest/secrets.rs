//! Secrets kept out of every tier: before a turn is stored, the sensitive data of the
//! kinds `ingest.redact` lists (passwords, API keys, card and national id numbers by
//! default) is replaced by a marker such as `[password]`. The turn's other words stay
//! searchable; the original is kept nowhere, so no vector, summary, fact, graph row,
//! export or log can hold it.

use engram_base::domain::NewEvent;
use engram_base::text::redact_kinds;

/// Redacts `kinds` in every event's content; returns how many events changed.
pub fn redact_events(events: &mut [NewEvent], kinds: &[String]) -> usize {
    if kinds.is_empty() {
        return 0;
    }
    let mut changed = 0;
    for event in events {
        let redacted = redact_kinds(&event.content, |kind| kinds.iter().any(|k| k == kind));
        if redacted != event.content {
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
