//! Secrets a person pastes into a conversation, found so that none is ever stored:
//! cloud and SaaS keys, tokens, private keys, passwords in URLs and connection strings,
//! passwords and PINs said either way round, payment cards (Luhn), IBANs (mod 97),
//! national ids, social security and passport numbers, and random-looking values named
//! as secrets. Phone numbers and e-mail addresses are found too, and kept unless
//! configured otherwise (`ingest.redact`).
//!
//! Each kind is replaced by its own marker (`[password]`, `[card number]`, …); the words
//! around it stay. The rules are data ([`rules::RULES`]), compiled once.

mod checks;
mod rules;

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

pub use rules::LABELS;

struct Compiled {
    kind: &'static str,
    regex: Regex,
    check: fn(&str, &str) -> Option<(usize, usize)>,
}

static COMPILED: LazyLock<Vec<Compiled>> = LazyLock::new(|| {
    rules::RULES
        .iter()
        .map(|rule| Compiled {
            kind: rule.kind,
            regex: Regex::new(rule.pattern).unwrap_or_else(|e| panic!("the {} rule: {e}", rule.kind)),
            check: rule.check,
        })
        .collect()
});

/// Every kind, in the order the rules try them.
pub fn kinds() -> impl Iterator<Item = &'static str> {
    LABELS.iter().map(|(kind, _)| *kind)
}

/// How a secret of `kind` reads once redacted.
pub fn label(kind: &str) -> &'static str {
    LABELS.iter().find(|(k, _)| *k == kind).map_or("[redacted]", |(_, label)| label)
}

/// The secrets one rule finds in `text`: their byte ranges.
fn found(rule: &Compiled, text: &str) -> Vec<(usize, usize)> {
    rule.regex
        .captures_iter(text)
        .filter_map(|caps| {
            let part = caps.name("secret").unwrap_or_else(|| caps.get(0).expect("the whole match"));
            let before = &text[text.floor_char_boundary(part.start().saturating_sub(60))..part.start()];
            let (from, to) = (rule.check)(part.as_str(), before)?;
            // A marker already there ("my password is [password]") is not a secret.
            let span = &text[part.start() + from..part.start() + to];
            (!LABELS.iter().any(|(_, label)| span.trim_end_matches(['.', ',', '!', '?']) == *label))
                .then_some((part.start() + from, part.start() + to))
        })
        .collect()
}

/// The kinds of secret in `text` (empty when there is none).
pub fn sensitive_kinds(text: &str) -> Vec<&'static str> {
    let mut left = text.to_owned();
    let mut kinds = Vec::new();
    for rule in COMPILED.iter() {
        let spans = found(rule, &left);
        if !spans.is_empty() {
            add(&mut kinds, rule.kind);
            left = replace(&left, &spans, label(rule.kind));
        }
    }
    kinds
}

/// `text` with every secret replaced by its kind's marker.
pub fn redact(text: &str) -> String {
    redact_kinds(text, |_| true)
}

/// `text` with the secrets of the kinds `wanted` accepts replaced by their markers.
pub fn redact_kinds(text: &str, wanted: impl Fn(&str) -> bool) -> String {
    redact_found(text, wanted).0
}

/// `text` with the secrets of the kinds `wanted` accepts replaced by their markers, and
/// the kinds it held, each once.
pub fn redact_found(text: &str, wanted: impl Fn(&str) -> bool) -> (String, Vec<&'static str>) {
    let mut out = text.to_owned();
    let mut kinds = Vec::new();
    for rule in COMPILED.iter().filter(|rule| wanted(rule.kind)) {
        let spans = found(rule, &out);
        if !spans.is_empty() {
            out = replace(&out, &spans, label(rule.kind));
            add(&mut kinds, rule.kind);
        }
    }
    (out, kinds)
}

/// The rule set as text: the source of the rules, their checks and this module, so
/// that any change to a pattern, a check, a word list or a window changes a fingerprint
/// made of it (and a change to a comment too, which costs one needless pass).
pub fn rule_set() -> String {
    [include_str!("mod.rs"), include_str!("rules.rs"), include_str!("checks.rs")].concat()
}

fn replace(text: &str, spans: &[(usize, usize)], marker: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for &(from, to) in spans {
        if from >= at {
            out.push_str(&text[at..from]);
            out.push_str(marker);
            at = to;
        }
    }
    out.push_str(&text[at..]);
    out
}

/// Object keys whose value is a secret whatever it looks like (`{"password": "tulip"}`).
static SECRET_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:.*[_-])?(?:password|passwd|passphrase|passcode|pwd|pin|pw|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?|ssn|密码|口令|密钥)$")
        .expect("a valid pattern")
});

/// Redacts every string in a JSON value, at any depth, with the kinds `wanted` accepts;
/// a string under a key that names a secret is replaced whole. Whether anything changed.
pub fn redact_json(value: &mut Value, wanted: &impl Fn(&str) -> bool) -> bool {
    !redact_json_found(value, wanted).is_empty()
}

/// Like [`redact_json`]; the kinds the value held, each once.
pub fn redact_json_found(value: &mut Value, wanted: &impl Fn(&str) -> bool) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    json_found(value, wanted, &mut kinds);
    kinds
}

fn add(kinds: &mut Vec<&'static str>, kind: &'static str) {
    if !kinds.contains(&kind) {
        kinds.push(kind);
    }
}

fn json_found(value: &mut Value, wanted: &impl Fn(&str) -> bool, kinds: &mut Vec<&'static str>) {
    match value {
        Value::String(text) => {
            let (redacted, found) = redact_found(text, wanted);
            found.into_iter().for_each(|kind| add(kinds, kind));
            *text = redacted;
        }
        Value::Array(items) => items.iter_mut().for_each(|item| json_found(item, wanted, kinds)),
        Value::Object(fields) => {
            for (key, item) in fields.iter_mut() {
                let named = SECRET_KEY.is_match(key) && wanted("secret");
                match item {
                    Value::String(text) if named && !text.is_empty() && !text.starts_with('[') => {
                        *text = label("secret").to_owned();
                        add(kinds, "secret");
                    }
                    Value::Number(_) if named => {
                        *item = Value::String(label("secret").to_owned());
                        add(kinds, "secret");
                    }
                    _ => json_found(item, wanted, kinds),
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
