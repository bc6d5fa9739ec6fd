//! Query terms for the keyword half of search. Latin words go to PostgreSQL text
//! search; scripts written without spaces (Chinese, Japanese) are split into
//! character bigrams and matched as substrings, since word-splitting leaves
//! `我叫李明` as one token and a search for `李明` must still find it. A capital letter or a
//! digit standing alone names something ("Project B", "plan 2"): it is a term that ranks
//! (as a whole word), though too common to find candidates by.
//!
//! A result's keyword share is the weighted share of the query's terms it holds. A term's
//! weight is its rarity among the user's recent turns (BM25's inverse document frequency,
//! [`weigh_turns`]): "Caroline" in a question to Caroline's memory, said in every other
//! turn, counts for less than "pottery", said once.

const MAX_TERMS: usize = 16;

/// Words too common to tell texts apart; "user" is how an agent says "I" of the person
/// whose memory it asks.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "just", "me", "my", "no", "not", "now", "of", "on", "or", "our", "she", "so", "than",
    "that", "the", "their", "them", "then", "there", "they", "this", "to", "us", "use", "used", "uses", "using",
    "user", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would", "you",
    "your",
];

#[derive(Debug, Default, PartialEq)]
pub struct Terms {
    /// Every term, lowercased: the lexical score is the weighted share of them a text contains.
    pub all: Vec<String>,
    /// Each term's weight (aligned with `all`; equal until [`Terms::weigh`]).
    pub weights: Vec<f64>,
    /// A `to_tsquery('simple', …)` expression OR-ing the Latin terms ('' when none).
    pub tsquery: String,
    /// `ILIKE` patterns for the bigrams of unspaced scripts.
    pub like_patterns: Vec<String>,
    /// Whether [`Terms::weigh`] has been given their weights.
    weighed: bool,
}

pub fn terms(query: &str) -> Terms {
    let mut out = Terms::default();
    let words = words(query);
    for word in words {
        if out.all.len() == MAX_TERMS {
            break;
        }
        if !out.all.contains(&word) {
            out.all.push(word);
        }
    }
    out.weights = vec![1.0; out.all.len()];
    out.tsquery = out.words().join(" | ");
    out.like_patterns = out.all.iter().filter(|t| !t.is_ascii()).map(|t| format!("%{}%", escape_like(t))).collect();
    out
}

impl Terms {
    /// One `to_tsquery('simple', …)` expression per Latin term of two letters or more:
    /// prefixes from four letters.
    pub fn words(&self) -> Vec<String> {
        self.all.iter().filter(|t| t.is_ascii() && t.len() >= 2).map(|t| tsquery_term(t)).collect()
    }

    /// Weighs the terms: `weights[i]` is `all[i]`'s ([`weigh_turns`], or the same in SQL).
    pub fn weigh(&mut self, weights: Vec<f64>) {
        self.weights = weights;
        self.weights.resize(self.all.len(), 1.0);
        self.weighed = true;
    }

    /// Whether their weights are still to be found: there are two terms or more, and
    /// [`Terms::weigh`] has not been given them (one term weighs all there is).
    pub fn unweighed(&self) -> bool {
        !self.weighed && self.all.len() > 1
    }

    /// Every term `ILIKE`-escaped, in order: what the SQL of a search weighs and matches.
    pub fn escaped(&self) -> Vec<String> {
        self.all.iter().map(|t| escape_like(t)).collect()
    }

    /// [`Terms::escaped`], each with its weight, the weights summing to 1.
    pub fn weighted(&self) -> (Vec<String>, Vec<f64>) {
        (self.escaped(), normalised(self.weights.iter().copied()))
    }

    /// A `to_tsquery('simple', …)` expression OR-ing every Latin term, lone letters too
    /// (prefixes from four letters): what a raw turn's lexemes are read for, a turn's
    /// keyword share being counted in the service ('' when there is none).
    pub fn latin_tsquery(&self) -> String {
        self.all.iter().filter(|t| t.is_ascii()).map(|t| tsquery_term(t)).collect::<Vec<_>>().join(" | ")
    }
}

/// Prefixes from four letters.
fn tsquery_term(term: &str) -> String {
    if term.len() >= 4 { format!("{term}:*") } else { term.to_owned() }
}

pub fn normalised(weights: impl Iterator<Item = f64>) -> Vec<f64> {
    let weights: Vec<f64> = weights.collect();
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| if total > 0.0 { w / total } else { 0.0 }).collect()
}

/// The weights of `terms` (lowercased, in order) among `recent`, the user's latest turns
/// lowercased: each term's rarity among them, BM25's inverse document frequency. A term
/// none of them holds weighs as one said once: turns are not all a user has, and a word of
/// the question found nowhere must not outweigh the ones found.
pub fn weigh_turns(terms: &[String], recent: &[String]) -> Vec<f64> {
    let turns = (recent.len() as f64).max(1.0);
    terms
        .iter()
        .map(|term| {
            let df = (recent.iter().filter(|text| holds(text, term)).count() as f64).max(1.0);
            (1.0 + (turns - df + 0.5) / (df + 0.5)).ln()
        })
        .collect()
}

/// Whether the lowercased `text` holds `term`: as a
/// substring, and a short Latin term (one or two letters or digits) as a whole word.
pub fn holds(text: &str, term: &str) -> bool {
    let short = (1..=2).contains(&term.len()) && term.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !short {
        return text.contains(term);
    }
    let word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(term).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(word) && !text[at + term.len()..].chars().next().is_some_and(word)
    })
}

/// The words of `text` as keyword search sees them: Latin words lowercased (at least two
/// letters, stopwords dropped; a lone capital other than "I" or a digit when it does not
/// begin a sentence), and unspaced scripts as character bigrams.
pub fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut sentence_start = true;
    for piece in text.split_inclusive(|c: char| !c.is_alphanumeric()) {
        let token = piece.trim_end_matches(|c: char| !c.is_alphanumeric());
        let ends_sentence = piece[token.len()..].contains(['.', '?', '!', '\n']);
        if token.is_ascii() && !token.is_empty() {
            let word = token.to_ascii_lowercase();
            let names =
                !sentence_start && token != "I" && token.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
            if (word.len() >= 2 && !STOPWORDS.contains(&word.as_str())) || (word.len() == 1 && names) {
                words.push(word);
            }
        } else if !token.is_empty() {
            let pieces = without_question_words(token);
            let split = pieces.len() > 1 || pieces.first().is_some_and(|p| p.len() < token.len());
            for piece in pieces {
                let chars: Vec<char> = piece.chars().collect();
                match chars.len() {
                    1 if split => {}
                    0..=2 => words.push(piece.to_lowercase()),
                    _ => words.extend(chars.windows(2).map(|pair| pair.iter().collect::<String>().to_lowercase())),
                }
            }
        }
        if !token.is_empty() || ends_sentence {
            sentence_start = ends_sentence;
        }
    }
    words
}

/// Question words and particles of unspaced scripts hold no content: "张伟用的什么数据库"
/// asks about "张伟用" and "数据库"; its bigrams "的什", "什么", "么数" match nothing an answer says.
const QUESTION_WORDS: &[&str] = &[
    "为什么",
    "是不是",
    "有没有",
    "什么",
    "哪里",
    "哪儿",
    "哪个",
    "哪些",
    "哪位",
    "怎么",
    "怎样",
    "如何",
    "多少",
    "谁",
    "吗",
    "呢",
    "吧",
    "的",
];

/// Whether `text` asks anything besides question words: a term, or two characters of an
/// unspaced script outside them ("开什么车" asks of "开" and "车", each too short for a
/// bigram; "是谁" asks nothing).
pub fn asks_anything(text: &str) -> bool {
    let unspaced = text
        .split(|c: char| !c.is_alphanumeric() || c.is_ascii())
        .flat_map(without_question_words)
        .map(|piece| piece.chars().count())
        .sum::<usize>();
    unspaced >= 2 || !terms(text).all.is_empty()
}

/// `token` split where a question word or particle stood.
fn without_question_words(token: &str) -> Vec<&str> {
    let mut pieces = vec![token];
    for word in QUESTION_WORDS {
        pieces = pieces.into_iter().flat_map(|p| p.split(word)).filter(|p| !p.is_empty()).collect();
    }
    pieces
}

/// A term [`holds`] matches only as a whole word (one or two Latin letters or digits,
/// lowercased), and the word boundaries around it, as PostgreSQL (POSIX) regular
/// expressions: what the SQL of a search matches a term by.
pub const SHORT_TERM_POSIX: &str = "^[a-z0-9]{1,2}$";
pub const WORD_START_POSIX: &str = r"\m";
pub const WORD_END_POSIX: &str = r"\M";

/// Escapes `%`, `_` and `\` for a literal `ILIKE` match.
pub fn escape_like(text: &str) -> String {
    text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_queries_drop_stopwords_and_match_prefixes() {
        let t = terms("Which database do we use? PostgreSQL!");
        assert_eq!(t.all, vec!["database", "postgresql"]);
        assert_eq!(t.tsquery, "database:* | postgresql:*");
        assert!(t.like_patterns.is_empty());
    }

    #[test]
    fn a_lone_capital_or_digit_ranks_but_finds_no_candidates() {
        let t = terms("Which database does project B use? A plan for team 7, I think");
        assert_eq!(t.all, vec!["database", "project", "b", "plan", "team", "7", "think"]);
        assert_eq!(t.tsquery, "database:* | project:* | plan:* | team:* | think:*");
        assert_eq!(terms("which database does project a use").all, vec!["database", "project"]);
    }

    #[test]
    fn unspaced_scripts_become_bigrams() {
        let t = terms("李明");
        assert_eq!(t.all, vec!["李明"]);
        assert_eq!(t.like_patterns, vec!["%李明%"]);
        let t = terms("李明在哪");
        assert_eq!(t.all, vec!["李明", "明在", "在哪"]);
        let t = terms("张伟用的什么数据库？");
        assert_eq!(t.all, vec!["张伟", "伟用", "数据", "据库"], "question words are no terms");
        assert_eq!(t.tsquery, "");
    }

    #[test]
    fn every_term_keeps_its_place_and_the_shares_sum_to_one() {
        let mut t = terms("what did Caroline paint, 画画");
        assert_eq!(t.all, vec!["caroline", "paint", "画画"]);
        assert!(t.unweighed() && !terms("paint").unweighed(), "one term weighs all there is");
        t.weigh(vec![0.3, 3.9, 5.9]);
        assert!(!t.unweighed());
        let (escaped, weights) = t.weighted();
        assert_eq!(escaped, t.all);
        assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(weights[0] < weights[1] && weights[1] < weights[2], "{weights:?}");
        assert_eq!(t.latin_tsquery(), "caroline:* | paint:*", "the unspaced term is no lexeme");
        assert_eq!(terms("project B").latin_tsquery(), "project:* | b", "a lone letter ranks as a lexeme");
        let mut short = terms("caroline paint");
        short.weigh(vec![2.0]);
        assert_eq!(short.weights, vec![2.0, 1.0], "a term without a weight weighs 1");
    }

    #[test]
    fn turns_in_hand_are_weighed_as_the_sql_weighs_them() {
        assert!(holds("project b is late", "b") && !holds("by the lake", "b"), "a short term is a whole word");
        assert!(holds("painting at the lake", "paint") && holds("我叫李明", "李明"));
        let recent: Vec<String> =
            ["caroline went out", "caroline: pottery!", "caroline again"].map(String::from).into();
        let weights = weigh_turns(&["caroline".into(), "pottery".into(), "chess".into()], &recent);
        // BM25's inverse document frequency: ln(1 + (3 - df + 0.5) / (df + 0.5)), df at least 1.
        let idf = |df: f64| (1.0 + (3.0 - df + 0.5) / (df + 0.5)).ln();
        assert_eq!(weights, vec![idf(3.0), idf(1.0), idf(1.0)], "a term found nowhere weighs as one said once");
        assert!(weights[0] < weights[1]);
    }

    #[test]
    fn like_metacharacters_are_escaped_and_terms_are_bounded() {
        assert_eq!(escape_like("100%_a\\b"), "100\\%\\_a\\\\b");
        let many: String = (0..40).map(|i| format!("word{i} ")).collect();
        assert_eq!(terms(&many).all.len(), MAX_TERMS);
        assert_eq!(terms("?? !!"), Terms::default());
    }
}
