//! Relations read from the shape of a clause when no pattern's verb is in it: "Our
//! analytics service stores everything in ClickHouse", "The mobile app talks to
//! Firebase", "日志平台的数据都写进 Elasticsearch". Whatever the verb, a clause that names
//! a thing of software (a project or component, or the user's team) and, after it, a
//! technology says the one uses the other.
//!
//! - The subject is the component or project named last before the technology ("Every
//!   log line from the checkout service ends up in Datadog"), else the noun phrase a
//!   determiner opens the clause with ("The chat widget was built using Svelte"), else
//!   the user when the clause opens with "I" or "we" (我, 我们).
//! - A technology is a name the lexicon or the aliases know (a short one, which is an
//!   everyday word as often — "Go", "Next" — only after a component or project), or,
//!   after a component or project, a word written as a name (capitalised, or as a
//!   product is: BigQuery, S3) right after a preposition such as "in", "to", "with" —
//!   not "by", "at" or "for", which name people and employers. In Chinese, any name in
//!   Latin letters is one.
//!
//! It never invents a name: every entity is words of the clause, and a clause with no
//! such pair states nothing.

use std::sync::LazyLock;

use regex::Regex;

use super::Triple;
use super::mention::{Discourse, Mention, PRODUCT_WORDS, PROJECT_WORDS, is_chinese, looks_like, mention};
use super::names::Aliases;
use super::{EntityType, Predicate};
use crate::technologies::{is_named, technologies};

/// Words that open a noun phrase: what follows them up to a verb is a thing.
const DETERMINERS: &[&str] = &["the", "our", "my", "their", "your", "this", "that", "its", "his", "her"];
/// Words that end a component's name going leftwards: a determiner, a preposition, a verb's helper.
const PHRASE_BREAKS: &[&str] = &[
    "the", "our", "my", "their", "your", "this", "that", "its", "his", "her", "a", "an", "every", "each", "all", "of",
    "from", "in", "on", "to", "into", "for", "with", "by", "at", "and", "or", "is", "are", "was", "were", "we", "i",
    "you", "they", "it", "has", "have", "had", "be", "been", "line", "lines",
];
/// Prepositions a product's name follows: "ends up in Datadog", "talks to Firebase",
/// "generated with Docusaurus". Not "by", "at" or "for", which name people and employers.
const PREPOSITIONS: &[&str] =
    &["in", "on", "to", "into", "onto", "with", "using", "via", "through", "from", "atop", "behind", "inside"];

/// One word of a clause and where it is.
struct Word<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

fn words(clause: &str) -> Vec<Word<'_>> {
    static WORD: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[\p{L}\d][\p{L}\d.+#'’-]*[\p{L}\d+#]|[\p{L}\d]").expect("a valid pattern"));
    WORD.find_iter(clause).map(|m| Word { text: m.as_str(), start: m.start(), end: m.end() }).collect()
}

/// Whether a word is written as a product's name is: BigQuery, S3, AWS, Node.js.
fn product_shaped(word: &str) -> bool {
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    let inner_capital = word.chars().skip(1).any(char::is_uppercase) && word.chars().any(char::is_lowercase);
    let digit_beside_letters = letters > 0 && word.chars().any(|c| c.is_ascii_digit());
    let all_capitals = letters >= 2 && word.chars().filter(|c| c.is_alphabetic()).all(char::is_uppercase);
    let dotted = word.contains('.') && word.chars().next().is_some_and(char::is_alphabetic);
    inner_capital || digit_beside_letters || all_capitals || dotted
}

fn capitalised(word: &str) -> bool {
    word.chars().next().is_some_and(char::is_uppercase)
}

/// The relations one clause states by its shape; see the module's description.
pub(super) fn relations(clause: &str, aliases: &Aliases, discourse: &Discourse) -> Vec<Triple> {
    if is_chinese(clause) { chinese(clause, aliases, discourse) } else { english(clause, aliases, discourse) }
}

fn english(clause: &str, aliases: &Aliases, discourse: &Discourse) -> Vec<Triple> {
    let words = words(clause);
    if words.len() < 3 {
        return Vec::new();
    }
    let lower: Vec<String> = words.iter().map(|w| w.text.to_lowercase()).collect();
    // Components and projects: a head word ("service", "app") and the words before it
    // back to a determiner or preposition.
    let mut components: Vec<(usize, usize)> = Vec::new();
    for (i, word) in lower.iter().enumerate() {
        if !(looks_like(word, PROJECT_WORDS) || looks_like(word, PRODUCT_WORDS)) || i == 0 {
            continue;
        }
        let mut from = i;
        while from > 0
            && i - from < 3
            && !PHRASE_BREAKS.contains(&lower[from - 1].as_str())
            && !(lower[from - 1].len() > 3 && lower[from - 1].ends_with("ed"))
        {
            from -= 1;
        }
        if from < i {
            components.push((from, i));
        }
    }
    let user_first = matches!(lower[0].as_str(), "i" | "we") || (lower[0] == "our" && lower[1] == "team");
    // "The chat widget was …": the words a determiner opens, up to a verb, none a pronoun.
    let opening_phrase = DETERMINERS.contains(&lower[0].as_str()).then(|| {
        let end = (1..words.len().min(5)).find(|&i| verb_like(&lower[i])).unwrap_or(0);
        (1, end.saturating_sub(1))
    });
    let opening_phrase = opening_phrase
        .filter(|&(from, to)| (from..=to).all(|i| !matches!(lower[i].as_str(), "i" | "we" | "you" | "they")));
    let mut out = Vec::new();
    let mut i = 1;
    while i < words.len() {
        let start = words[i].start;
        let Some((object, next)) = technology_at(clause, &words, &lower, i, aliases, discourse, &components) else {
            i += 1;
            continue;
        };
        i = next;
        let subject = components
            .iter()
            .rev()
            .find(|(_, end)| words[*end].end <= start)
            .and_then(|&(from, to)| {
                mention(&clause[words[from].start..words[to].end], EntityType::Product, aliases, discourse)
            })
            .or_else(|| {
                opening_phrase.filter(|&(from, to)| to >= from && words[to].end <= start).map(|(from, to)| Mention {
                    name: clause[words[from].start..words[to].end].to_owned(),
                    kind: EntityType::Product,
                    is_user: false,
                })
            })
            .or_else(|| user_first.then(Mention::user));
        if let Some(subject) = subject
            && subject != object
        {
            out.push(Triple { subject, predicate: Predicate::Uses, object, ended: None });
        }
    }
    out
}

/// Whether a word reads as a verb after a subject: a helper, or a third-person or past form.
fn verb_like(word: &str) -> bool {
    matches!(word, "is" | "are" | "was" | "were" | "has" | "have" | "had" | "will" | "can" | "runs" | "gets")
        || (word.len() > 3 && (word.ends_with("ed") || (word.ends_with('s') && !word.ends_with("ss"))))
}

/// The technology named at word `i`, if one is, and the word after it.
fn technology_at(
    clause: &str,
    words: &[Word<'_>],
    lower: &[String],
    i: usize,
    aliases: &Aliases,
    discourse: &Discourse,
    components: &[(usize, usize)],
) -> Option<(Mention, usize)> {
    let in_component = components.iter().any(|&(from, to)| (from..=to).contains(&i));
    let after_component = components.iter().any(|&(_, to)| to < i);
    // The lexicon and the aliases, over one to three words. A short name is an everyday
    // word as often ("Go", "Next", "Rust"): it counts after a component only.
    for span in (1..=3).rev() {
        let end = i + span;
        if end > words.len() {
            continue;
        }
        let text = &clause[words[i].start..words[end - 1].end];
        // Not a name's part ("CS:GO") nor one after a determiner the aliases would drop ("my next").
        let glued = clause[..words[i].start].ends_with([':', '/', '-']);
        if glued || DETERMINERS.contains(&lower[i].as_str()) {
            return None;
        }
        let written_as_name =
            span > 1 || product_shaped(text) || (capitalised(text) && (text.chars().count() >= 5 || after_component));
        if written_as_name && (aliases.canonical(text).is_some() || is_named(text)) {
            let found = mention(text, EntityType::Technology, aliases, discourse)?;
            return (found.kind == EntityType::Technology).then_some((found, end));
        }
    }
    let word = words[i].text;
    let before = lower[i - 1].as_str();
    let after_preposition = PREPOSITIONS.contains(&before) && !clause[..words[i].start].trim_end().ends_with(',');
    if !capitalised(word) && !product_shaped(word) || !after_preposition || word.contains(['\'', '’']) {
        return None;
    }
    let mut end = i + 1;
    while end < words.len() && capitalised(words[end].text) && end - i < 3 {
        end += 1;
    }
    let text = &clause[words[i].start..words[end - 1].end];
    if in_component || !after_component || !technologies(text).is_empty() {
        return None;
    }
    let found = mention(text, EntityType::Technology, aliases, discourse)?;
    (found.kind == EntityType::Technology).then_some((found, end))
}

fn chinese(clause: &str, aliases: &Aliases, discourse: &Discourse) -> Vec<Triple> {
    static LATIN_NAME: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"[A-Za-z][A-Za-z0-9.+#-]*(?:\s+[A-Z][A-Za-z0-9.+#-]*)*").expect("a valid pattern")
    });
    // The subject: the clause's opening words up to a component or project word.
    let head = PROJECT_WORDS
        .iter()
        .chain(PRODUCT_WORDS)
        .filter(|w| !w.is_ascii())
        .filter_map(|w| clause.find(w).map(|at| at + w.len()));
    let Some(end) = head.min() else {
        return Vec::new();
    };
    let opening = ["我们的", "咱们的", "我的", "他们的", "公司的"]
        .iter()
        .find_map(|p| clause[..end].strip_prefix(p))
        .unwrap_or(&clause[..end]);
    if opening.chars().count() > 12 || opening.contains(['在', '是', '用']) {
        return Vec::new();
    }
    let Some(subject) = mention(opening, EntityType::Product, aliases, discourse) else {
        return Vec::new();
    };
    let rest = &clause[end..];
    let mut objects: Vec<Mention> = LATIN_NAME
        .find_iter(rest)
        .filter_map(|m| mention(m.as_str(), EntityType::Technology, aliases, discourse))
        .collect();
    for (_, name) in technologies(rest) {
        if let Some(found) = mention(&name, EntityType::Technology, aliases, discourse) {
            objects.push(found);
        }
    }
    let mut seen = Vec::new();
    objects.retain(|o| {
        !seen.contains(&o.name) && {
            seen.push(o.name.clone());
            true
        }
    });
    objects
        .into_iter()
        .filter(|o| o.kind == EntityType::Technology && *o != subject)
        .map(|object| Triple { subject: subject.clone(), predicate: Predicate::Uses, object, ended: None })
        .collect()
}
