//! The distinctive values of a statement: what another sentence must repeat to be
//! stating the same thing ("Congrats on the move! 42 Maple Court, got it.").

use std::sync::LazyLock;

use regex::Regex;

/// Numbers of three digits or more (with their separators), names written with a capital
/// inside a sentence, quoted titles, and Chinese names after the words that introduce
/// them (叫, 是, 在, 住在, 患有 …).
static VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?x)
        (?:[a-z0-9,;:]\s+)(?P<name>\p{Lu}\p{L}[\p{L}'&-]+(?:\s+\p{Lu}\p{L}[\p{L}'&-]*)*)
        | [“"《「](?P<title>[^”"》」]{2,60})[”"》」]
        | (?:^|\s)'(?P<quoted>[^'\n]{2,60}?)'(?:[\s.,!?;:]|$)
        | (?:叫|是|在|住在|搬到|患有|得了|确诊|吃|用|名叫|名字是)(?P<han>[\p{Han}\d]{2,12})"#,
    )
    .expect("a valid pattern")
});

/// Numbers of three digits or more, with their separators: found on their own, since a
/// Chinese value may hold one ("文三路259号").
static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d[\d\-./,:]*\d{2,}|\d{3,}").expect("a valid pattern"));

/// Words that start with a capital without naming anything.
const NOT_NAMES: &[&str] = &["The", "This", "That", "And", "But", "Also", "Just", "Got", "Okay", "Thanks", "Sure"];

/// The distinctive values of `text`, lower-cased.
pub fn of(text: &str) -> Vec<String> {
    let mut found: Vec<String> = VALUE
        .captures_iter(text)
        .filter_map(|caps| {
            let value = ["name", "title", "quoted", "han"].iter().find_map(|g| caps.name(g))?.as_str();
            // Short acronyms (PIN, SSN) name a kind of thing, not the thing.
            let acronym = value.len() <= 3 && value.chars().all(|c| c.is_uppercase());
            (!NOT_NAMES.contains(&value) && !acronym).then(|| value.to_lowercase())
        })
        .chain(NUMBER.find_iter(text).map(|m| m.as_str().trim_end_matches([',', '.', ':', '/']).to_owned()))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Whether `sentence` repeats one of `values`; a Chinese value in part too, four
/// characters of it in a row ("文三路259号" of "西湖区文三路259号3单元").
pub fn repeats(sentence: &str, values: &[String]) -> bool {
    let sentence = sentence.to_lowercase();
    values.iter().any(|v| {
        let chars: Vec<char> = v.chars().collect();
        sentence.contains(v.as_str())
            || chars.len() > 4
                && chars.iter().any(|c| ('\u{4E00}'..='\u{9FFF}').contains(c))
                && chars.windows(4).any(|w| sentence.contains(&w.iter().collect::<String>()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_numbers_names_titles_and_chinese_names() {
        assert_eq!(of("We just moved to 17 Birch Lane in Leeds."), ["birch lane", "leeds"]);
        assert_eq!(of("My PIN is 4821."), ["4821"]);
        assert_eq!(of("So I'm rethinking it."), Vec::<String>::new());
        assert!(repeats("文三路259号，记下了。", &of("我家地址是西湖区文三路259号3单元502")));
        assert_eq!(of("I'm rereading 'The Left Hand of Darkness' again"), ["the left hand of darkness"]);
        assert_eq!(of("我前男友叫张伟，我们分手了"), ["张伟"]);
        assert!(repeats("Noted, Leeds it is.", &of("We just moved to 17 Birch Lane in Leeds.")));
        assert!(!repeats("Sounds like a nice place.", &of("We just moved to 17 Birch Lane in Leeds.")));
    }
}
