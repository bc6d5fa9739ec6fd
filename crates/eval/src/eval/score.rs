//! How an answer is scored: evidence recall among what a lookup found, and whether an
//! answer's words appear in a text, dates compared whichever way they are written.

use std::sync::LazyLock;

use regex::Regex;

/// The share of `evidence` among `found` (dialogue ids).
pub fn recall(evidence: &[String], found: &[&str]) -> f64 {
    if evidence.is_empty() {
        return 0.0;
    }
    evidence.iter().filter(|e| found.contains(&e.as_str())).count() as f64 / evidence.len() as f64
}

/// 1 when the answer appears in `text`, compared as lowercase words, a date the same in
/// any order it is written ("July 2, 2023" is in "Sun 2 July 2023").
pub fn answer_in(text: &str, answer: &str) -> f64 {
    if normalise(text).contains(&normalise(answer)) { 1.0 } else { 0.0 }
}

/// Lowercase words, a day, month and year as "2 july 2023" whichever way they were
/// written ("July 2nd, 2023", "2July, 2023").
fn normalise(text: &str) -> String {
    static MONTH_FIRST: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(r"\b({MONTHS}) (\d{{1,2}})(?:st|nd|rd|th)? (\d{{4}})\b")).expect("a valid pattern")
    });
    static DAY_FIRST: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(r"\b(\d{{1,2}})(?:st|nd|rd|th)? ?({MONTHS}) (\d{{4}})\b")).expect("a valid pattern")
    });
    const MONTHS: &str = "january|february|march|april|may|june|july|august|september|october|november|december";
    let words = text
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let words = MONTH_FIRST.replace_all(&words, "$2 $1 $3");
    DAY_FIRST.replace_all(&words, "$1 $2 $3").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punctuation_goes_and_words_stay() {
        assert_eq!(normalise("Oct. 2023!"), "oct 2023");
    }

    #[test]
    fn an_answer_is_found_in_whatever_order_its_date_is_written() {
        let line = "[Sun 2 July 2023] user: yesterday (yesterday = Sat 1 July 2023)";
        for answer in ["July 1, 2023", "1 July, 2023", "July 1st, 2023", "1July, 2023", "2 July 2023", "July 2023"] {
            assert_eq!(answer_in(line, answer), 1.0, "{answer}");
        }
        for answer in ["July 3, 2023", "1 June 2023", "July 1, 2022"] {
            assert_eq!(answer_in(line, answer), 0.0, "{answer}");
        }
    }
}
