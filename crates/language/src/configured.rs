//! Patterns an operator configures: case-insensitive regular expressions for messages
//! that correct the agent (`corrections.patterns`) and for messages worth an LLM's
//! reading (`extract_facts`' `triggers`), with the defaults engram ships.

use regex::RegexSet;

/// Messages that correct what the agent said, in several languages: the default of
/// `corrections.patterns`.
pub const CORRECTIONS: &[&str] = &[
    r"\bthat'?s (wrong|not right|incorrect|not true|outdated)\b",
    r"\byou('re| are) wrong\b",
    r"\b(not|no) (true|correct) any ?more\b",
    r"\bno longer\b",
    r"\bi (already|have already|just) (switched|moved|changed|migrated)\b",
    r"\bwe (already|have already) (switched|moved|changed|migrated)\b",
    r"\bthat was (before|ages ago)\b",
    r"你记错了|记错了|不对|搞错了|已经(换成|改成|迁移到|不用)|不再用",
    r"\beso no es (cierto|correcto)\b|\bya no\b",
    r"\bdas stimmt nicht\b|\bnicht mehr\b",
    r"\bc'est faux\b|\bplus maintenant\b",
];

/// Self-introductions, preferences, choices, decisions and changes, in several
/// languages: the messages `extract_facts` gives its LLM by default.
pub const TRIGGERS: &[&str] = &[
    r"\b(i'm|i am|i've|my|we|we're|we've|our|i)\b.*\b(use|using|prefer|like|love|hate|work|live|moved|switched|migrated|chose|decided|name|called|building|team|started|stopped|plan)",
    r"\b(switched|migrated|moved|changed|no longer|instead of|from now on)\b",
    r"(我叫|我是|我住|我在|我们用|我用|我喜欢|我不喜欢|我们决定|决定|换成|迁移到|切换到|改用|不再|我们团队|我的)",
    // Relations between the things a user names (graph memory).
    r"\b(leads?|owns?|runs? on|depends? on|deployed|hosted on|reports? to|colleague|coworker|teammate|part of|works? (on|at|with)|located|based in|built (on|with)|uses)\b",
    r"(负责|依赖|部署|同事|汇报|属于|位于|用的是|使用|采用|迁移)",
    r"\b(ich bin|ich heiße|wir nutzen|wir verwenden|je suis|je m'appelle|nous utilisons|soy|me llamo|usamos)\b",
];

/// Configured patterns, compiled: a text matches when any of them does, case aside.
#[derive(Debug, Clone)]
pub struct Patterns(RegexSet);

impl Patterns {
    /// The patterns compiled, or why one of them is no regular expression.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, String> {
        RegexSet::new(patterns.iter().map(|p| format!("(?i){}", p.as_ref()))).map(Self).map_err(|e| e.to_string())
    }

    /// Whether there are none (then no text matches).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether any of them matches `text`.
    pub fn matches(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

#[cfg(test)]
mod tests {
    use super::{CORRECTIONS, Patterns, TRIGGERS};

    #[test]
    fn a_correction_is_told_from_a_statement() {
        let corrections = Patterns::new(CORRECTIONS).unwrap();
        let cases = [
            ("That's wrong, I moved to Berlin", true),
            ("You are wrong about the database", true),
            ("We already switched to TiDB", true),
            ("你记错了，我们用的是 MySQL", true),
            ("Das stimmt nicht", true),
            ("We moved to Berlin last spring", false),
            ("我们用的是 MySQL", false),
        ];
        for (text, corrects) in cases {
            assert_eq!(corrections.matches(text), corrects, "{text}");
        }
    }

    #[test]
    fn a_message_worth_reading_is_told_from_small_talk() {
        let triggers = Patterns::new(TRIGGERS).unwrap();
        let cases = [
            ("I'm Lena and I work at Globex", true),
            ("Our API depends on Redis", true),
            ("我叫王芳", true),
            ("张伟负责支付项目", true),
            ("Je m'appelle Claire", true),
            ("Thanks, sounds good!", false),
            ("好的，谢谢", false),
        ];
        for (text, worth) in cases {
            assert_eq!(triggers.matches(text), worth, "{text}");
        }
    }

    #[test]
    fn a_pattern_that_is_no_regular_expression_is_refused() {
        assert!(Patterns::new(&["("]).is_err());
        assert!(Patterns::new::<&str>(&[]).unwrap().is_empty());
    }
}
