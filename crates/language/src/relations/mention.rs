//! How a slot's words become an entity: the user's own ("I", "we", "我"), the project a
//! reference ("it", "the project", "项目") points back to, a technology the lexicon knows,
//! or a name whose shape ("… project", "…模块", "… Inc") or slot gives its type; words
//! that are no name give none.

use super::EntityType;
use super::names::Aliases;
use crate::technologies::technologies;

/// An entity as a sentence names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub name: String,
    pub kind: EntityType,
    /// The user's own entity ("I", "we", "我").
    pub is_user: bool,
}

impl Mention {
    pub fn user() -> Self {
        Self { name: String::new(), kind: EntityType::Person, is_user: true }
    }
}

/// What the sentences of one batch have said so far: what "it" and "项目" refer to.
#[derive(Debug, Default)]
pub struct Discourse {
    pub(super) last_project: Option<Mention>,
}

const USER_WORDS: &[&str] =
    &["i", "we", "me", "us", "myself", "our team", "my team", "the team", "我", "我们", "我们团队", "我自己", "本人"];
/// English words no name holds: pronouns, forms of "be", "do" and "have", modal verbs,
/// and a conjunction or negation at its start. A sentence's first word has a capital, so
/// without them "It is" or "I am ready to offer" would pass for names.
const NO_NAME_WORDS: &[&str] = &[
    "i", "i'm", "it", "it's", "he", "she", "they", "we", "you", "me", "him", "them", "us", "this", "that", "these",
    "those", "there", "here", "what", "who", "which", "is", "am", "are", "was", "were", "be", "been", "being", "do",
    "does", "did", "have", "has", "had", "will", "would", "can", "could", "should", "must", "might", "may", "not",
    "don't", "really", "so", "just", "very",
];
const NO_NAME_START: &[&str] = &["and", "or", "but", "because", "if", "then", "also", "too"];

/// Whether an English phrase could be a name (see [`NO_NAME_WORDS`]).
fn may_be_a_name(text: &str) -> bool {
    let mut words =
        text.split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'').to_lowercase());
    let first = words.next().unwrap_or_default();
    !NO_NAME_START.contains(&first.as_str())
        && std::iter::once(first).chain(words).all(|w| !NO_NAME_WORDS.contains(&w.as_str()))
}

const REFERENCES: &[&str] = &[
    "it",
    "this",
    "the project",
    "our project",
    "my project",
    "this project",
    "项目",
    "这个项目",
    "该项目",
    "它",
    "这个",
];
pub(super) const PROJECT_WORDS: &[&str] = &[
    "project",
    "app",
    "application",
    "website",
    "site",
    "platform",
    "system",
    "项目",
    "系统",
    "平台",
    "应用",
    "网站",
    "工程",
    "小程序",
];
pub(super) const PRODUCT_WORDS: &[&str] = &[
    "module",
    "service",
    "component",
    "api",
    "library",
    "sdk",
    "backend",
    "frontend",
    "pipeline",
    "模块",
    "服务",
    "组件",
    "接口",
    "后端",
    "前端",
    "库",
];
const ORG_WORDS: &[&str] =
    &["inc", "ltd", "corp", "company", "bank", "university", "gmbh", "llc", "公司", "集团", "银行", "大学", "研究院"];
/// The entity a slot's words name, or `None` when they are not a name.
pub fn mention(text: &str, default: EntityType, aliases: &Aliases, discourse: &Discourse) -> Option<Mention> {
    let text = text.trim().trim_matches(|c: char| c.is_ascii_punctuation() && c != '+' && c != '#' && c != '.');
    let lower = text.to_lowercase();
    if text.is_empty() {
        return None;
    }
    if USER_WORDS.contains(&lower.as_str()) {
        return Some(Mention::user());
    }
    if REFERENCES.contains(&lower.as_str()) {
        return discourse.last_project.clone();
    }
    let chinese = is_chinese(text);
    let words = text.split_whitespace().count();
    if words > 5 || text.chars().count() > 40 || (chinese && text.chars().count() > 12) {
        return None;
    }
    let display = strip_article(text);
    if let Some(canonical) = aliases.canonical(display) {
        return Some(Mention { name: canonical.to_owned(), kind: EntityType::Technology, is_user: false });
    }
    let techs = technologies(display);
    // A short lower-case word inside a phrase is an everyday word ("my next adventure").
    let everyday = |name: &str| {
        let written = spelled(display, name);
        written.len() < 6 && written.chars().all(|c| c.is_lowercase()) && !written.eq_ignore_ascii_case(display)
    };
    if techs.len() == 1 && words <= 3 && !everyday(&techs[0].1) {
        let (_, name) = &techs[0];
        let name = aliases.canonical(name).map(str::to_owned).unwrap_or_else(|| spelled(display, name));
        return Some(Mention { name, kind: EntityType::Technology, is_user: false });
    }
    let shaped = if looks_like(display, PROJECT_WORDS) {
        Some(EntityType::Project)
    } else if looks_like(display, PRODUCT_WORDS) {
        Some(EntityType::Product)
    } else if looks_like(display, ORG_WORDS) {
        Some(EntityType::Organization)
    } else {
        None
    };
    // English words that are no name (no capital, no project or component word) are a
    // phrase, not an entity; a preference may be one.
    let capitalised = display.chars().next().is_some_and(char::is_uppercase);
    if !(chinese || capitalised || shaped.is_some() || default == EntityType::Concept) {
        return None;
    }
    if !chinese && !may_be_a_name(display) {
        return None;
    }
    let kind = shaped.unwrap_or(default);
    if kind == EntityType::Person && chinese && !(2..=4).contains(&display.chars().count()) {
        return None;
    }
    Some(Mention { name: display.to_owned(), kind, is_user: false })
}

/// How the user spelled a technology the lexicon knows in lower case.
fn spelled(text: &str, canonical: &str) -> String {
    let lower = text.to_lowercase();
    match lower.find(canonical) {
        Some(at) if text.is_char_boundary(at) && text.is_char_boundary(at + canonical.len()) => {
            text[at..at + canonical.len()].to_owned()
        }
        _ => canonical.to_owned(),
    }
}

fn strip_article(text: &str) -> &str {
    let mut rest = text.trim();
    for article in ["the ", "our ", "my ", "a ", "an ", "their ", "his ", "her "] {
        if rest.len() > article.len()
            && rest.is_char_boundary(article.len())
            && rest[..article.len()].eq_ignore_ascii_case(article)
        {
            rest = rest[article.len()..].trim_start();
        }
    }
    rest
}

pub(super) fn looks_like(text: &str, words: &[&str]) -> bool {
    let lower = text.to_lowercase();
    words.iter().any(|w| {
        if w.is_ascii() {
            lower.split(|c: char| !c.is_alphanumeric()).any(|token| token == *w)
        } else {
            lower.contains(w)
        }
    })
}

pub fn is_chinese(text: &str) -> bool {
    text.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}
