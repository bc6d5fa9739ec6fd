//! Plain-text helpers for the consolidation jobs: sentences, small talk, and the
//! sensitive data that must never become a memory.

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

/// Sensitive data that never goes into memories or summaries.
static SENSITIVE: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    [
        ("email", r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
        ("api_key", r"\b(sk|pk|rk)-[A-Za-z0-9_-]{12,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}|\bxox[abpr]-[A-Za-z0-9-]{10,}"),
        // The words before the secret stay: "my bank password is [password]".
        ("password", r"(?i)(?:\b(?:password|passwd|passcode|pwd|pin(?: code| number)?)\b(?:\s+(?:for|to|of|on|at)\s+[\w '-]{1,30}?)?\s*(?:is|was|:|=|=>)|(?:密码|口令|PIN码)\s*(?:是|为|:|：|=))\s*(?P<secret>[^\s，。,]+)"),
        // Digits are bounded by non-digits rather than `\b`: Chinese text puts no space
        // between a word and a number ("身份证号码是1101…").
        ("card_number", r"(?:^|[^0-9])(?P<secret>\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{1,7})(?:[^0-9]|$)"),
        ("id_number", r"(?:^|[^0-9])(?P<secret>\d{17}[\dXx]|\d{3}-\d{2}-\d{4})(?:[^0-9A-Za-z]|$)"),
        ("phone", r"(?:^|[^0-9])(?P<secret>\+?\d[\d ().-]{7,}\d)(?:[^0-9]|$)"),
    ]
    .into_iter()
    .map(|(kind, pattern)| (kind, Regex::new(pattern).expect("a valid pattern")))
    .collect()
});

/// A phone number has at least 9 digits (a date like 2024-01-15 has 8).
fn counts(kind: &str, found: &str) -> bool {
    kind != "phone" || found.chars().filter(char::is_ascii_digit).count() >= 9
}

/// The kinds of sensitive data in `text` (empty when there is none).
pub fn sensitive_kinds(text: &str) -> Vec<&'static str> {
    SENSITIVE
        .iter()
        .filter(|(kind, re)| re.find_iter(text).any(|m| counts(kind, m.as_str())))
        .map(|(kind, _)| *kind)
        .collect()
}

/// How a piece of sensitive data of `kind` reads once redacted.
pub fn marker(kind: &str) -> &'static str {
    match kind {
        "password" => "[password]",
        "api_key" => "[api key]",
        "card_number" => "[card number]",
        "id_number" => "[national id]",
        "phone" => "[phone]",
        "email" => "[email]",
        _ => "[redacted]",
    }
}

/// `text` with every piece of sensitive data replaced by its [`marker`].
pub fn redact(text: &str) -> String {
    redact_kinds(text, |_| true)
}

/// `text` with the sensitive data of the kinds `wanted` accepts replaced by their
/// [`marker`]s; the words that introduce a password stay.
pub fn redact_kinds(text: &str, wanted: impl Fn(&str) -> bool) -> String {
    let mut out = text.to_owned();
    for (kind, re) in SENSITIVE.iter().filter(|(kind, _)| wanted(kind)) {
        out = re
            .replace_all(&out, |caps: &regex::Captures| {
                let whole = caps.get(0).expect("the whole match");
                match caps.name("secret") {
                    _ if !counts(kind, whole.as_str()) => whole.as_str().to_owned(),
                    Some(secret) => {
                        let text = whole.as_str();
                        let (before, after) =
                            (&text[..secret.start() - whole.start()], &text[secret.end() - whole.start()..]);
                        format!("{before}{}{after}", marker(kind))
                    }
                    None => marker(kind).to_owned(),
                }
            })
            .into_owned();
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn sensitive_data_is_found_and_redacted() {
        assert_eq!(sensitive_kinds("mail me at ann.lee@example.com"), ["email"]);
        assert_eq!(sensitive_kinds("my key is sk-abcdefghijklmnop1234"), ["api_key"]);
        assert!(sensitive_kinds("call me on +1 415 555 0199").contains(&"phone"));
        assert!(sensitive_kinds("我的手机号是 13812345678").contains(&"phone"));
        assert!(sensitive_kinds("card 4111 1111 1111 1111").contains(&"card_number"));
        assert_eq!(sensitive_kinds("my password is hunter2"), ["password"]);
        assert!(sensitive_kinds("We run PostgreSQL 18 on 3 nodes since 2024-01-15").is_empty());
        assert_eq!(redact("write to ann@example.com"), "write to [email]");
        assert_eq!(redact("my bank password is Tr0ub4dor&3"), "my bank password is [password]");
        assert_eq!(
            redact("the wifi password for the office is hunter2!"),
            "the wifi password for the office is [password]"
        );
        assert_eq!(redact("我的银行卡密码是 882931，别告诉别人"), "我的银行卡密码是 [password]，别告诉别人");
        assert_eq!(redact("SSN 123-45-6789"), "SSN [national id]");
        assert_eq!(redact("We're going camping next month."), "We're going camping next month.");
        assert_eq!(redact("My PIN: 4821"), "My PIN: [password]");
        assert_eq!(
            redact_kinds("call +1 415 555 0199, key sk-abcdefghijklmnop1234", |k| k == "api_key"),
            "call +1 415 555 0199, key [api key]"
        );
    }
}
