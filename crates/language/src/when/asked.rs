//! Whether a question asks for a time ("When did she move?", "他什么时候搬的家？"): a
//! result that says when something happened answers it better than one that does not.

use std::sync::LazyLock;

use regex::Regex;

static ASKS_WHEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        ^\W*when\b
      | \b(?:what|which)\s+(?:date|day|month|year|time|week)\b
      | \bhow\s+long\s+ago\b
      | 什么时候|哪天|哪一天|哪年|哪一年|哪个月|几月|几号|何时|多久以前",
    )
    .expect("a valid pattern")
});

/// Whether `question` asks when something happened.
pub fn asks_when(question: &str) -> bool {
    ASKS_WHEN.is_match(question)
}

/// Whether `text` says when something happened: a time phrase a lookup would resolve,
/// counted from `said` ("yesterday", "last May", "8 May 2023", "三天前").
pub fn says_when(text: &str, said: chrono::DateTime<chrono::Utc>) -> bool {
    super::resolve(text, said).is_some()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_question_for_a_time_is_told_from_one_for_anything_else() {
        let cases = [
            ("When did Caroline go to the support group?", true),
            ("What year did they move to Berlin?", true),
            ("On which date was the launch?", true),
            ("她什么时候开始学吉他的？", true),
            ("你哪年毕业的", true),
            ("What does she do when she is stressed?", false),
            ("Where does Lena work these days?", false),
            ("王芳在哪个城市工作？", false),
        ];
        for (question, asks) in cases {
            assert_eq!(super::asks_when(question), asks, "{question}");
        }
    }
}
