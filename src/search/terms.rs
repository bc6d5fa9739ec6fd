//! Query terms for the keyword half of search. Latin words go to PostgreSQL text
//! search; scripts written without spaces (Chinese, Japanese) are split into
//! character bigrams and matched as substrings, since word-splitting leaves
//! `我叫李明` as one token and a search for `李明` must still find it.

const MAX_TERMS: usize = 16;

const STOPWORDS: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "just", "me", "my", "no", "not", "now", "of", "on", "or", "our", "she", "so", "than",
    "that", "the", "their", "them", "then", "there", "they", "this", "to", "us", "use", "used", "uses", "using", "was",
    "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

#[derive(Debug, Default, PartialEq)]
pub struct Terms {
    /// Every term, lowercased: the lexical score is the share of them a text contains.
    pub all: Vec<String>,
    /// A `to_tsquery('simple', …)` expression OR-ing the Latin terms ('' when none).
    pub tsquery: String,
    /// `ILIKE` patterns for the bigrams of unspaced scripts.
    pub like_patterns: Vec<String>,
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
    out.tsquery = out.words().join(" | ");
    out.like_patterns = out.all.iter().filter(|t| !t.is_ascii()).map(|t| format!("%{}%", escape_like(t))).collect();
    out
}

impl Terms {
    /// One `to_tsquery('simple', …)` expression per Latin term: prefixes from four letters.
    pub fn words(&self) -> Vec<String> {
        self.all
            .iter()
            .filter(|t| t.is_ascii())
            .map(|t| if t.len() >= 4 { format!("{t}:*") } else { t.clone() })
            .collect()
    }
}

/// The words of `text` as keyword search sees them: Latin words lowercased (at least two
/// letters, stopwords dropped), and unspaced scripts as character bigrams.
pub fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for token in text.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()) {
        if token.is_ascii() {
            let word = token.to_ascii_lowercase();
            if word.len() >= 2 && !STOPWORDS.contains(&word.as_str()) {
                words.push(word);
            }
        } else {
            let chars: Vec<char> = token.chars().collect();
            if chars.len() <= 2 {
                words.push(token.to_lowercase());
            } else {
                words.extend(chars.windows(2).map(|pair| pair.iter().collect::<String>().to_lowercase()));
            }
        }
    }
    words
}

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
    fn unspaced_scripts_become_bigrams() {
        let t = terms("李明");
        assert_eq!(t.all, vec!["李明"]);
        assert_eq!(t.like_patterns, vec!["%李明%"]);
        let t = terms("李明在哪");
        assert_eq!(t.all, vec!["李明", "明在", "在哪"]);
        assert_eq!(t.tsquery, "");
    }

    #[test]
    fn like_metacharacters_are_escaped_and_terms_are_bounded() {
        assert_eq!(escape_like("100%_a\\b"), "100\\%\\_a\\\\b");
        let many: String = (0..40).map(|i| format!("word{i} ")).collect();
        assert_eq!(terms(&many).all.len(), MAX_TERMS);
        assert_eq!(terms("?? !!"), Terms::default());
    }
}
