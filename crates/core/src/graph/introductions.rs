//! The user's own name, by the shapes an introduction takes in English and Chinese:
//! "Name's Marcus Reyes", "Priya here", "This is Grace Liu, I …", "Folks call me Benji",
//! "Hi, I'm Dan", "大家好，我叫王芳", "你好，我是陈静". A sentence introduces the user when
//! it or one of its clauses does. Both the graph (the user's own entity) and the facts
//! (`name`) read it here.

use std::sync::LazyLock;

use regex::Regex;

use super::extract::{clauses, without_lead_in};

/// A greeting an introduction may open with: "Hi,", "Hey there —", "Hello everyone,".
const GREETING: &str =
    r"(?:(?i:hi|hello|hey|greetings|yo)(?:\s+(?i:there|all|everyone|folks|guys|team))?\s*[,!.—–-]?\s+)";
/// A person's name as written: one or two capitalised words.
const NAME: &str = r"\p{Lu}[\p{L}'-]+(?:\s+\p{Lu}[\p{L}'-]+)?";

/// The user's own name, by the shapes an introduction takes rather than its exact words:
/// the name after "name's", "call(s) me", "go by"; "X here", "X speaking", "this is X"
/// opening a clause; "I'm X"; "我叫X", "我是X". The flag marks "I'm X", which [`named`]
/// checks further.
static NAMED: LazyLock<Vec<(Regex, bool)>> = LazyLock::new(|| {
    let plain = |p: String| (Regex::new(&p).expect("a valid pattern"), false);
    vec![
        plain(format!(r"\b(?i:my name is|my name's|name's|the name is|call me|calls me|i am called|i'm called|i go by|go by)\s+(?P<x>{NAME})")),
        plain(format!(r"^{GREETING}?(?P<x>{NAME})\s+(?i:here|speaking)(?:[,.!;]|$)")),
        plain(format!(r"^(?P<g>{GREETING})?(?i:this is|it's|it is)\s+(?P<x>{NAME})(?:\s+(?i:here|speaking))?(?:,\s+(?i:i|i'm|and i)\b|[!.]?$)")),
        (Regex::new(&format!(r"^(?P<g>{GREETING})?(?i:i'm|i am)\s+(?P<x>{NAME})(?P<after>,\s+(?i:a|an)\s|[,.!]|$)")).expect("a valid pattern"), true),
        plain(r"^(?:我叫|我的名字是|我的名字叫|我名叫|本人叫)\s*(?P<x>[\p{Han}]{2,4}|[A-Za-z][\p{L}]+(?: [A-Z][\p{L}]+)?)".to_owned()),
        plain(r"^我是\s*(?P<x>[\p{Han}]{2,3})(?:[，,。！!]|$)".to_owned()),
    ]
});

/// The user's own name, if the sentence or one of its clauses introduces them.
pub fn user_name(sentence: &str) -> Option<String> {
    let sentence = sentence.trim().trim_end_matches(['.', '!', '?', '。', '！', '？', '~']);
    std::iter::once(sentence).chain(clauses(sentence).into_iter().map(without_lead_in)).find_map(named)
}

/// The user's own name if `text` introduces them (see [`NAMED`]). "I'm X" alone is a name
/// only when X cannot be a nationality or a faith ("I'm Canadian", "I'm Jewish") or a
/// greeting came first: such words end in -ian, -ese, -ish, -ic, -i.
fn named(text: &str) -> Option<String> {
    NAMED.iter().find_map(|(pattern, ambiguous)| {
        let c = pattern.captures(text)?;
        let name = c["x"].trim();
        let greeted = c.name("g").is_some();
        let one_word = !name.contains(' ');
        let nationality = ["ian", "ese", "ish", "ic", "i"].iter().any(|end| name.to_lowercase().ends_with(end));
        (!ambiguous || greeted || !one_word || !nationality).then(|| name.to_owned())
    })
}
