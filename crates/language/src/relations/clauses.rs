//! A sentence as the rules read it: its clauses, each without the words that lead into
//! it ("Now", "Last month", "另外") and with its contractions spelled out.

use std::sync::LazyLock;

use regex::Regex;

/// A sentence's clauses: Chinese commas and semicolons, English semicolons and ", and".
pub(super) fn clauses(sentence: &str) -> Vec<&str> {
    static SPLIT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\s*(?:[，；;]|,\s+(?:and|but|while)\s+|(?:\s+and|,)\s+(?i:i|we)\s)\s*").expect("a valid pattern")
    });
    // "and I"/", we" keep their pronoun: the split point is before it.
    let mut out = Vec::new();
    let mut start = 0;
    for m in SPLIT.find_iter(sentence) {
        out.push(&sentence[start..m.start()]);
        let text = m.as_str();
        start = if text.trim_end().ends_with(['I', 'i']) || text.trim_end().to_lowercase().ends_with("we") {
            m.start() + text.trim_end().rfind(' ').map_or(0, |i| i + 1)
        } else {
            m.end()
        };
    }
    out.push(&sentence[start..]);
    out.into_iter().map(str::trim).filter(|c| !c.is_empty()).collect()
}

/// A clause without the words that lead into it ("Now", "Also,", "现在", "另外").
pub(super) fn without_lead_in(clause: &str) -> &str {
    static LEAD_IN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?i:so|and|also|now|currently|actually|btw|by the way|these days|oh|well|anyway|recently|lately|yesterday|today|tonight|(?:last|this|next|past)\s+(?:week|month|year|weekend|night|spring|summer|fall|autumn|winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|in\s+\d{4}|(?:a|one|two|three|four|five|a few|a couple of)\s+(?:days?|weeks?|months?|years?)\s+ago)\b,?\s*|(?:现在|目前|另外|还有|然后|而且|其实|所以|最近|对了|上个月|上周|去年|今年)[，,]?\s*)+")
            .expect("a valid pattern")
    });
    LEAD_IN.find(clause).map_or(clause, |m| &clause[m.end()..])
}

/// Contractions spelled out, so one pattern reads "I am" and "I'm".
pub(super) fn expanded(clause: &str) -> String {
    static CONTRACTIONS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(i|we|you|they|it|he|she)(?:'|’)(m|re|ve|s|ll|d)\b").expect("a valid pattern")
    });
    CONTRACTIONS
        .replace_all(clause, |c: &regex::Captures| {
            let verb = match c[2].to_lowercase().as_str() {
                "m" => "am",
                "re" => "are",
                "ve" => "have",
                "ll" => "will",
                "d" => "would",
                _ => "is",
            };
            format!("{} {verb}", &c[1])
        })
        .into_owned()
}
