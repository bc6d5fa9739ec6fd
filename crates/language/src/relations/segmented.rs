//! Chinese names where a segmenter (LAC, in `engram-base`) says words begin and end. The rules
//! capture a Chinese name by its length, and "我同事刘洋下个月调去深圳" would give 刘洋下;
//! a name that ends inside a word is cut back to the word before, and a name that is one
//! word the segmenter calls a person, place or organisation takes that kind.

use super::EntityType;
use super::Extracted;
use super::mention::{Mention, is_chinese};

/// One word of a text, where it starts (in bytes) and its tag (`PER`, `LOC`, `n`, `v`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub start: usize,
    pub tag: String,
}

/// `extracted`'s Chinese names cut at `sentence`'s word boundaries (`words`).
pub fn snap(extracted: &mut Extracted, sentence: &str, words: &[Word]) {
    for triple in &mut extracted.triples {
        for mention in [&mut triple.subject, &mut triple.object] {
            snap_mention(mention, sentence, words);
        }
    }
    if let Some(name) = extracted.user_name.as_mut()
        && let Some(cut) = cut(name, sentence, words)
    {
        *name = cut;
    }
}

fn snap_mention(mention: &mut Mention, sentence: &str, words: &[Word]) {
    if mention.is_user || !is_chinese(&mention.name) {
        return;
    }
    if let Some(cut) = cut(&mention.name, sentence, words) {
        mention.name = cut;
    }
    let kind = words.iter().find(|w| w.text == mention.name).and_then(|w| match w.tag.as_str() {
        "PER" => Some(EntityType::Person),
        "LOC" => Some(EntityType::Place),
        "ORG" => Some(EntityType::Organization),
        _ => None,
    });
    let a_name =
        matches!(mention.kind, EntityType::Person | EntityType::Place | EntityType::Organization | EntityType::Other);
    if let Some(kind) = kind
        && a_name
    {
        mention.kind = kind;
    }
}

/// `name` cut back to the last word boundary inside it, when it ends inside a word and
/// keeps two characters or more.
fn cut(name: &str, sentence: &str, words: &[Word]) -> Option<String> {
    let at = sentence.find(name)?;
    let end = at + name.len();
    let ends = || words.iter().map(|w| w.start + w.text.len());
    if ends().any(|e| e == end) {
        return None;
    }
    let cut = ends().filter(|&e| e > at && e < end).max()?;
    let kept = &sentence[at..cut];
    (kept.chars().count() >= 2).then(|| kept.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relations::Predicate;
    use crate::relations::Triple;

    fn word(sentence: &str, text: &str, tag: &str) -> Word {
        Word { text: text.into(), start: sentence.find(text).unwrap(), tag: tag.into() }
    }

    #[test]
    fn a_name_that_runs_into_the_next_word_is_cut_there() {
        let sentence = "我同事刘洋下个月调去深圳";
        let words: Vec<Word> = [
            ("我", "r"),
            ("同事", "n"),
            ("刘洋", "PER"),
            ("下个月", "TIME"),
            ("调", "v"),
            ("去", "v"),
            ("深圳", "LOC"),
        ]
        .iter()
        .map(|(t, tag)| word(sentence, t, tag))
        .collect();
        let mut extracted = Extracted {
            triples: vec![Triple {
                subject: Mention { name: "刘洋下".into(), kind: EntityType::Other, is_user: false },
                predicate: Predicate::Colleague,
                object: Mention::user(),
                ended: None,
            }],
            user_name: None,
        };
        snap(&mut extracted, sentence, &words);
        assert_eq!(extracted.triples[0].subject.name, "刘洋");
        assert_eq!(extracted.triples[0].subject.kind, EntityType::Person);
    }
}
