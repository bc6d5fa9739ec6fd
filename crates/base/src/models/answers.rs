//! Checking what a model answered against what was said. Real models copy a quote
//! with another case, other spacing or punctuation, full-width characters for
//! half-width ones, or a letter off; a quote is the user's words when it matches after
//! folding all of that, within a small number of edits.

/// Lower case, full-width characters as half-width, punctuation gone, single spaces.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = true;
    for c in text.chars() {
        let c = match c as u32 {
            0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            0x3000 => ' ',
            _ => c,
        };
        if c.is_whitespace() || c.is_ascii_punctuation() || is_cjk_punctuation(c) {
            if !space {
                out.push(' ');
                space = true;
            }
        } else {
            out.extend(c.to_lowercase());
            space = false;
        }
    }
    out.trim_end().to_owned()
}

fn is_cjk_punctuation(c: char) -> bool {
    matches!(
        c,
        '，' | '。'
            | '、'
            | '；'
            | '：'
            | '？'
            | '！'
            | '“'
            | '”'
            | '‘'
            | '’'
            | '（'
            | '）'
            | '《'
            | '》'
            | '…'
            | '—'
    ) || matches!(c, '\u{2018}'..='\u{201F}')
}

/// Whether `quote` is words of `message`: contained after [`fold`], or within one edit
/// in ten characters of some part of it (at least one edit allowed).
pub fn said_in(message: &str, quote: &str) -> bool {
    let (message, quote) = (fold(message), fold(quote));
    if quote.is_empty() {
        return false;
    }
    if message.contains(&quote) {
        return true;
    }
    let quote: Vec<char> = quote.chars().collect();
    let message: Vec<char> = message.chars().collect();
    let allowed = (quote.len() / 10).max(1);
    // Sellers' approximate substring match: the fewest edits turning `quote` into any
    // part of `message`, one column of the edit table at a time.
    let mut column: Vec<usize> = (0..=quote.len()).collect();
    for &m in &message {
        let mut diagonal = column[0];
        column[0] = 0;
        for (i, &q) in quote.iter().enumerate() {
            let substituted = diagonal + usize::from(q != m);
            diagonal = column[i + 1];
            column[i + 1] = substituted.min(column[i] + 1).min(column[i + 1] + 1);
        }
        if column[quote.len()] <= allowed {
            return true;
        }
    }
    false
}

/// Whether a model's text is empty or a bare literal it fills a field with (`false`,
/// `null`, `N/A`): nothing to remember.
pub fn says_nothing(text: &str) -> bool {
    let text = text.trim().trim_end_matches('.').to_lowercase();
    text.chars().filter(|c| c.is_alphanumeric()).count() < 2
        || ["true", "false", "null", "none", "n/a", "unknown", "nothing", "not mentioned"].contains(&text.as_str())
}

/// The share of `original`'s words (after [`fold`]; each CJK character a word) that
/// `rewritten` still holds: how much of what was said a model's rewrite kept.
pub fn kept_share(original: &str, rewritten: &str) -> f64 {
    let words = |text: &str| -> Vec<String> {
        fold(text)
            .split(' ')
            .flat_map(|w| match w.chars().any(|c| c as u32 >= 0x2E80) {
                true => w.chars().map(String::from).collect::<Vec<_>>(),
                false => vec![w.to_owned()],
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    let (original, rewritten) = (words(original), words(rewritten));
    if original.is_empty() {
        return 1.0;
    }
    original.iter().filter(|w| rewritten.contains(w)).count() as f64 / original.len() as f64
}

/// `json` without commas right before a closing bracket or brace (outside strings),
/// which small models write.
pub fn without_trailing_commas(json: &str) -> std::borrow::Cow<'_, str> {
    let bytes = json.as_bytes();
    let mut in_string = false;
    let mut escaped = false;
    let mut drop = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' => {
                let next = bytes[i + 1..].iter().find(|c| !c.is_ascii_whitespace());
                if matches!(next, Some(b'}' | b']')) {
                    drop.push(i);
                }
            }
            _ => {}
        }
    }
    if drop.is_empty() {
        return json.into();
    }
    let mut out = String::with_capacity(json.len());
    let mut last = 0;
    for i in drop {
        out.push_str(&json[last..i]);
        last = i + 1;
    }
    out.push_str(&json[last..]);
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_matches_through_case_spacing_punctuation_and_width() {
        let message = "Hi!  I'm Ana, and we use MySQL for billing.";
        assert!(said_in(message, "we use mysql for billing"));
        assert!(said_in(message, "I'm Ana and we use MySQL"));
        assert!(said_in("我们用ＰｏｓｔｇｒｅＳＱＬ，很稳定。", "我们用PostgreSQL"));
        assert!(said_in("我住在杭州，离公司很近", "我住在杭州离公司很近"));
    }

    #[test]
    fn a_quote_may_be_a_letter_off_but_not_invented() {
        let message = "We moved billing over to PostgreSQL this week.";
        assert!(said_in(message, "we moved biling over to PostgreSQL"), "one letter dropped");
        assert!(!said_in(message, "we moved billing over to MySQL"), "another value is not a typo");
        assert!(!said_in(message, "I live in Paris"));
        assert!(!said_in(message, "  "));
    }

    #[test]
    fn a_rewrite_that_says_nothing_or_drops_what_was_said_is_told_apart() {
        assert!(says_nothing("false") && says_nothing(" N/A ") && says_nothing(""));
        assert!(!says_nothing("Uses PostgreSQL"));
        let (older, newer) = ("We use PostgreSQL for billing.", "Billing runs on PostgreSQL.");
        let merged = "We use PostgreSQL for billing, which runs on it.";
        assert!(kept_share(older, merged) >= 0.5 && kept_share(newer, merged) >= 0.5);
        assert!(kept_share(older, "false") < 0.5);
    }

    #[test]
    fn trailing_commas_go_and_commas_inside_strings_stay() {
        assert_eq!(without_trailing_commas(r#"{"a": [1, 2,], "b": "x,}",}"#), r#"{"a": [1, 2], "b": "x,}"}"#);
        assert_eq!(without_trailing_commas(r#"{"a": 1}"#), r#"{"a": 1}"#);
    }
}
