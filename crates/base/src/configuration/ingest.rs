//! `[ingest]`: what a turn may be, and which secrets never reach storage.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IngestSettings {
    /// A session without an explicit id ends after this many idle minutes.
    pub session_idle_minutes: u32,
    pub max_batch_events: usize,
    pub max_content_bytes: usize,
    pub max_metadata_bytes: usize,
    /// Kinds of sensitive data replaced by a marker (`[password]`) in every turn before it
    /// is stored: the original is kept nowhere. Kinds not listed (by default a phone
    /// number and an email, which a user may want remembered) are stored in the turn and
    /// kept out of facts and summaries. One of [`SENSITIVE_KINDS`].
    pub redact: Vec<String>,
}

/// The kinds of sensitive data engram recognises.
pub const SENSITIVE_KINDS: &[&str] = &[
    "private_key",
    "connection_string",
    "token",
    "api_key",
    "iban",
    "id_number",
    "card_number",
    "ssn",
    "passport",
    "password",
    "secret",
    "phone",
    "email",
];

impl Default for IngestSettings {
    fn default() -> Self {
        Self {
            session_idle_minutes: 30,
            max_batch_events: 1000,
            max_content_bytes: 32 * 1024,
            max_metadata_bytes: 16 * 1024,
            // Every kind but the two kept on purpose: a phone number or an e-mail address is
            // often what a user wants remembered.
            redact: SENSITIVE_KINDS
                .iter()
                .filter(|k| !matches!(**k, "phone" | "email"))
                .map(|k| (*k).to_owned())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_settings_list_every_kind_of_secret() {
        assert_eq!(super::SENSITIVE_KINDS.to_vec(), engram_language::secrets::kinds().collect::<Vec<_>>());
    }
}
