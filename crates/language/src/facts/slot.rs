//! The "slot" a sentence gives the value of: one thing of the user's and who or what
//! it is, by name ("my new manager is Priya"). The thing named becomes the fact's key.

use std::sync::LazyLock;

use regex::Regex;

/// One thing of the user's and who or what it is, by name: "my (new) manager is Priya", "Biscuit is our
/// new puppy", "我的新经理是王芳". The thing named becomes the key, so that a later value
/// for it is a knowledge update; what is already keyed elsewhere is left to its rule.
static SLOT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?x)
        ^(?:\p{L}+,?\s+)?(?i:my|our)\s+(?P<new1>(?i:new|current)\s+)?(?P<slot1>[a-z]+(?:\s+[a-z]+)?)\s+(?i:is|are|'s)\s+(?:now\s+|called\s+|named\s+)?(?P<value1>[\p{Lu}\d][\p{L}\d\x20'&.-]{0,40}?)\s*(?:[,.!;—–(]|$|\s+(?:and|but|since|who|which|because|now|if|when|so|for|though|too)\b)
      | ^(?P<value2>\p{Lu}[\p{L}\d'&.-]*(?:\s+\p{Lu}[\p{L}\d'&.-]*)?)\s+(?i:is)\s+(?i:my|our)\s+(?P<new2>(?i:new)\s+)?(?P<slot2>[a-z]+(?:\s+[a-z]+)?)\b
      | 我(?:的|们的)(?P<new3>新)?(?P<slot3>\p{Han}{1,4}?)(?:是|叫|换成了?)(?P<value3>[\p{Han}A-Za-z\d]{1,12})")
    .expect("a valid pattern")
});

/// Things the other rules key, and words that name no single-valued thing.
const NOT_SLOTS: &[&str] = &[
    "name",
    "names",
    "database",
    "db",
    "stack",
    "backend",
    "frontend",
    "framework",
    "language",
    "cloud",
    "hosting",
    "ci",
    "bundler",
    "store",
    "storage",
    "team",
    "job",
    "plan",
    "idea",
    "guess",
    "favourite",
    "favorite",
    "life",
    "day",
    "week",
    "weekend",
    "goal",
    "problem",
    "question",
    "point",
    "main",
    "only",
    "first",
    "last",
    "best",
    "worst",
    "whole",
    "go",
    "usual",
    "名字",
    "数据库",
    "后端",
    "前端",
    "框架",
    "语言",
    "问题",
    "想法",
    "计划",
];

/// The thing of the user's a sentence gives the value of, that value, and whether it
/// is called new; see [`SLOT`].
pub(super) fn slot(sentence: &str) -> Option<(String, String, bool)> {
    let caps = SLOT.captures(sentence)?;
    let group = |names: [&str; 3]| names.iter().find_map(|n| caps.name(n)).map(|m| m.as_str().trim().to_owned());
    let slot = group(["slot1", "slot2", "slot3"])?.to_lowercase();
    let value = group(["value1", "value2", "value3"])?.to_lowercase();
    let new = group(["new1", "new2", "new3"]).is_some();
    let named_elsewhere = NOT_SLOTS.contains(&slot.as_str()) || slot.split(' ').any(|w| NOT_SLOTS.contains(&w));
    if named_elsewhere
        || value.is_empty()
        || ["a", "an", "the", "not", "so", "very", "really"].contains(&value.as_str())
    {
        return None;
    }
    Some((slot.replace(' ', "_"), value, new))
}
