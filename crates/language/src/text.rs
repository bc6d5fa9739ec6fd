//! Plain-text helpers for the consolidation jobs: sentences, small talk, token
//! estimates. Secrets are [`crate::secrets`]'.

use std::sync::LazyLock;

use regex::Regex;

/// The sentences of `text`, trimmed, in order (Latin and CJK sentence ends, new lines).
pub fn sentences(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let ends = match c {
            '。' | '！' | '？' | '\n' | '!' | '?' | ';' | '；' => true,
            // A full stop ends a sentence only before a space or the end ("v1.2", "node.js" do
            // not), and not after a title ("Dr. Anita Kowalczyk").
            '.' => chars.peek().is_none_or(|(_, next)| next.is_whitespace()) && !after_title(&text[..i]),
            _ => false,
        };
        if ends {
            let end = i + c.len_utf8();
            push_trimmed(&mut found, &text[start..end]);
            start = end;
        }
    }
    push_trimmed(&mut found, &text[start..]);
    found
}

/// Whether `before` ends in a title that a full stop abbreviates.
fn after_title(before: &str) -> bool {
    let word = before.rsplit(|c: char| !c.is_alphabetic()).next().unwrap_or("");
    ["Dr", "Mr", "Mrs", "Ms", "Mx", "Prof", "St", "Jr", "Sr"].contains(&word)
}

fn push_trimmed<'a>(found: &mut Vec<&'a str>, sentence: &'a str) {
    let sentence = sentence.trim();
    if sentence.chars().any(|c| c.is_alphanumeric()) {
        found.push(sentence);
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xac00..=0xd7af)
}

/// Words, counting each CJK character as one.
pub fn word_count(text: &str) -> usize {
    let cjk = text.chars().filter(|c| is_cjk(*c)).count();
    let latin =
        text.split(|c: char| c.is_whitespace() || is_cjk(c)).filter(|w| w.chars().any(char::is_alphanumeric)).count();
    cjk + latin
}

static ACKNOWLEDGEMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(ok(ay)?|k|sure|thanks?( you)?( so much| a lot)?|thx|ty|cool|great|nice|perfect|awesome|got it|sounds good|yes|yeah|yep|no|nope|hi|hello|hey|bye|good (morning|night|evening)|lol|haha|👍|好的?|好吧|谢谢(你)?|多谢|嗯+|哦+|对|是的|没问题|你好|再见|明白了?|知道了)[\s!.。！~～]*$",
    )
    .expect("a valid pattern")
});

static QUESTION_START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(what|which|who|whom|whose|when|where|why|how|can you|could you|would you|will you|do you|does|did|is it|are there|please|吗|什么|怎么|为什么|哪|谁|能不能|可以帮|请)")
        .expect("a valid pattern")
});

/// Chinese questions need no question mark: a question word anywhere makes one.
static CJK_QUESTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(怎么|什么|为什么|为何|哪里|哪个|哪些|多少|是否|吗|呢)").expect("a valid pattern"));

/// Small talk, acknowledgements and questions: nothing to remember about the user.
pub fn is_small_talk(sentence: &str) -> bool {
    let s = sentence.trim();
    s.ends_with('?')
        || s.ends_with('？')
        || ACKNOWLEDGEMENT.is_match(s)
        || QUESTION_START.is_match(s)
        || CJK_QUESTION.is_match(s)
}

/// What a stored turn says once something it stated was forgotten.
pub const DELETED: &str = "[deleted]";

/// A marker a redaction or a deletion left: `[deleted]`, `[password]`, `[card number]`.
static MARKER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[[a-z ]{2,24}\]").expect("a valid pattern"));

/// A turn as an agent should read it: without the `[deleted]` markers of what was
/// forgotten, or `None` when nothing worth reading is left — only markers, punctuation,
/// or an acknowledgement that followed what is gone. Nothing here says something was
/// removed, and nothing is spent on it.
pub fn visible(turn: &str) -> Option<String> {
    let edited = turn.contains(DELETED);
    if !edited {
        // A turn nothing was taken from is shown exactly as it was said.
        return MARKER.replace_all(turn, " ").chars().any(char::is_alphanumeric).then(|| turn.to_owned());
    }
    let text = turn.split(DELETED).map(str::trim).filter(|part| !part.is_empty()).collect::<Vec<_>>().join(" ");
    let text = text.trim_start_matches(|c: char| c.is_ascii_punctuation() && c != '[' || c.is_whitespace()).to_owned();
    let words = MARKER.replace_all(&text, " ");
    let words = words.trim();
    if !words.chars().any(char::is_alphanumeric) || (edited && ACKNOWLEDGEMENT.is_match(words)) {
        return None;
    }
    Some(text)
}

/// Estimated tokens of `text`, conservatively for common tokenizers: every CJK
/// character (and other character outside Latin scripts) counts one token, other text
/// one token per four bytes, rounded up.
pub fn estimate_tokens(text: &str) -> usize {
    let (wide, narrow_bytes) = text.chars().fold((0usize, 0usize), |(wide, narrow), c| {
        if c.is_ascii() || ('\u{00C0}'..='\u{024F}').contains(&c) {
            (wide, narrow + c.len_utf8())
        } else {
            (wide + 1, narrow)
        }
    });
    wide + narrow_bytes.div_ceil(4)
}

/// `line` after the day it was said, as context lines are dated: `[Mon 8 May 2023] …`.
/// Spelled out (weekday, day, month name, year) so that neither a reader nor a model
/// confuses day and month, and "the Sunday before" can be worked out.
pub fn dated(at: chrono::DateTime<chrono::Utc>, line: &str) -> String {
    format!("[{}] {line}", at.format("%a %-d %B %Y"))
}

/// What two statements may differ by and still say the same ("Prefers dark mode." and
/// "prefers dark-mode"): everything but letters and digits, case aside, as a PostgreSQL
/// (POSIX) regular expression.
pub const NOT_WORDS_POSIX: &str = "[^[:alnum:]]+";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_reads_without_what_was_forgotten_or_not_at_all() {
        assert_eq!(visible("[deleted] I don't want it stored.").as_deref(), Some("I don't want it stored."));
        assert_eq!(
            visible("I moved in May. [deleted] The rest is fine.").as_deref(),
            Some("I moved in May. The rest is fine.")
        );
        assert_eq!(visible("[deleted]"), None);
        assert_eq!(visible("[deleted] [deleted]"), None);
        assert_eq!(visible("  "), None);
        assert_eq!(visible("[deleted] Thanks!"), None);
        assert_eq!(visible("[password]"), None);
        assert_eq!(visible("Thanks!").as_deref(), Some("Thanks!"));
        assert_eq!(visible("\"Quoted,\" she said. ").as_deref(), Some("\"Quoted,\" she said. "));
        assert_eq!(visible("my pin is [password]").as_deref(), Some("my pin is [password]"));
    }

    #[test]
    fn lines_are_dated_with_weekday_day_month_and_year() {
        let at = "2023-05-08T13:56:00Z".parse().unwrap();
        assert_eq!(dated(at, "user: hi"), "[Mon 8 May 2023] user: hi");
    }

    #[test]
    fn sentences_split_latin_and_cjk_but_not_versions() {
        assert_eq!(
            sentences("We use node.js v1.2 now. It works! 我叫李明。你好"),
            ["We use node.js v1.2 now.", "It works!", "我叫李明。", "你好"]
        );
    }

    #[test]
    fn small_talk_and_questions_are_recognised() {
        for s in ["thanks!", "ok", "好的", "谢谢", "What database should I use?", "这个怎么用", "Sounds good."]
        {
            assert!(is_small_talk(s), "{s}");
        }
        for s in ["We use PostgreSQL for billing.", "我们用 MySQL", "I prefer dark mode"] {
            assert!(!is_small_talk(s), "{s}");
        }
    }
}
