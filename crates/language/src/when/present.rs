//! Words of the present ("where does the user currently live?", "现在前端用什么"): a
//! question that says one asks what stands now, and the newest statement on its topic
//! answers it.

use std::sync::LazyLock;

use regex::Regex;

static PRESENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:current|currently|now|right now|these days|nowadays|at the moment|at present|presently|still|anymore|any more|today|lately|latest|newest|most recent)\b|目前|现在|如今|眼下|当前|最近|这些天|还在|仍然|依然|最新",
    )
    .expect("a valid pattern")
});

/// Whether `query` asks about the present.
pub fn asks(query: &str) -> bool {
    PRESENT.is_match(query)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_word_of_the_present_asks_what_stands_now() {
        let cases = [
            ("Where does the user currently live?", true),
            ("What is she reading these days?", true),
            ("Is he still at Globex?", true),
            ("现在前端用什么？", true),
            ("他最近在忙什么", true),
            ("What phone does she use these days", true),
            ("用户目前住在哪里", true),
            ("用户以前在哪里工作", false),
            ("What was she reading in May 2023?", false),
            ("Where did Lena grow up?", false),
            ("她以前住在哪里？", false),
            ("Does she know anyone named Snowden?", false),
        ];
        for (query, asks) in cases {
            assert_eq!(super::asks(query), asks, "{query}");
        }
    }
}
