//! The names a question writes, and the question without them: what a lookup asks of
//! the people its user's sessions are between (see `engram-core`'s `search::names`).
//! Names are Latin words written with a capital, or any word of a question without
//! capitals; a name in a script without spaces is matched as written.

use chrono::{DateTime, Utc};

/// A word a sentence writes as a name after its start: a lowercase letter or a comma, a
/// space, then a capitalised word ("Thanks, Caroline!", "hey Mel"). A PostgreSQL
/// (POSIX) regular expression whose one group is the name.
pub const WRITTEN_AS_NAME: &str = "[[:lower:],] ([[:upper:]][[:lower:]]+)";

/// Whether `word` names a time: said after "on" or "in", it is a time phrase ("on
/// Friday", "in June").
pub fn is_time(word: &str, now: DateTime<Utc>) -> bool {
    ["on", "in"].iter().any(|before| crate::when::resolve(&format!("{before} {word}"), now).is_some())
}

/// The words of `text` that may name someone, lowercased: those it capitalises (but the
/// first), or, when it has no capital at all, every word.
pub fn candidates(text: &str) -> Vec<String> {
    let lowercase = !text.chars().any(char::is_uppercase);
    text.split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() >= 2)
        .skip(usize::from(!lowercase))
        .filter(|w| lowercase || w.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(str::to_ascii_lowercase)
        .collect()
}

/// `text` without the words of `names` (a possessive "'s" with them), or `None` when it
/// holds none of them or nothing would be left to search by. Latin words match whole and
/// case aside; a name in a script without spaces matches as written.
pub fn without(text: &str, names: &[String]) -> Option<String> {
    let mut left = text.to_owned();
    for word in names.iter().flat_map(|name| name.split_whitespace()) {
        left = if word.is_ascii() { without_word(&left, word) } else { left.replace(word, " ") };
    }
    if left == text || !crate::terms::asks_anything(&left) {
        return None;
    }
    Some(left.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `text` without the Latin `word` wherever it stands whole, case aside, with the
/// possessive that follows it.
fn without_word(text: &str, word: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, _) in lower.match_indices(word) {
        let end = start + word.len();
        if start < at
            || text[..start].chars().next_back().is_some_and(is_word)
            || text[end..].chars().next().is_some_and(is_word)
        {
            continue;
        }
        out.push_str(&text[at..start]);
        let rest = &lower[end..];
        at = end + ["'s", "’s", "'"].iter().find(|p| rest.starts_with(*p)).map_or(0, |p| p.len());
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::candidates;

    #[test]
    fn the_question_asks_what_it_asks_of_the_user() {
        let without = |text: &str, name: &str| super::without(text, &[name.to_owned()]);
        let cases = [
            ("What subject does Lena teach?", "lena", Some("What subject does teach?")),
            ("Where does LENA work these days?", "lena", Some("Where does work these days?")),
            ("What is Priya's favourite team?", "priya natarajan", Some("What is favourite team?")),
            ("王芳用什么数据库？", "王芳", Some("用什么数据库？")),
            ("张敏的女儿上几年级？", "张敏", Some("的女儿上几年级？")),
            ("小周开什么车？", "小周", Some("开什么车？")),
            ("小周是谁？", "小周", None),
            ("Who is Lena?", "lena", None),
            ("What does Magdalena teach?", "lena", None),
            ("What does she teach?", "lena", None),
        ];
        for (text, name, expected) in cases {
            assert_eq!(without(text, name).as_deref(), expected, "{text}");
        }
        let both = ["james".to_owned(), "john".to_owned()];
        assert_eq!(
            super::without("Do both James and John have pets?", &both).as_deref(),
            Some("Do both and have pets?")
        );
    }

    #[test]
    fn a_day_or_a_month_is_no_name() {
        let now = chrono::Utc::now();
        for word in ["friday", "monday", "june", "december"] {
            assert!(super::is_time(word, now), "{word}");
        }
        assert!(!super::is_time("caroline", now) && !super::is_time("maya", now));
    }

    #[test]
    fn a_name_is_looked_for_among_the_capitalised_words_or_every_word_of_a_lowercase_question() {
        assert_eq!(candidates("What martial arts has John done?"), ["john"]);
        assert_eq!(candidates("When did Caroline go to the LGBTQ support group?"), ["caroline", "lgbtq"]);
        assert_eq!(candidates("what did caroline paint"), ["what", "did", "caroline", "paint"]);
        assert_eq!(candidates("王芳用什么数据库？"), Vec::<String>::new());
    }
}
