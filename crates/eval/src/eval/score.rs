//! How an answer is scored: evidence recall among what a lookup found, and whether an
//! answer's words appear in a text, dates compared whichever way they are written.

use engram_language::when::written::normalise;

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

#[cfg(test)]
mod tests {
    use super::*;

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
