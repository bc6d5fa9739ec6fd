//! The user's own name, by the shapes an introduction takes in English and Chinese:
//! "Name's Marcus Reyes", "Priya here", "This is Grace Liu, I …", "Folks call me Benji",
//! "Hi, I'm Dan", "大家好，我叫王芳", "你好，我是陈静", "叫我老陈就好". A sentence introduces the user when
//! it or one of its clauses does. Both the graph (the user's own entity) and the facts
//! (`name`) read it here.

use std::sync::LazyLock;

use regex::Regex;

use super::clauses::{clauses, without_lead_in};

/// A greeting an introduction may open with: "Hi,", "Hey there —", "Hello everyone,".
const GREETING: &str =
    r"(?:(?i:hi|hello|hey|greetings|yo)(?:\s+(?i:there|all|everyone|folks|guys|team))?\s*[,!.—–-]?\s+)";
/// A person's name as written: one or two capitalised words.
const NAME: &str = r"\p{Lu}[\p{L}'-]+(?:\s+\p{Lu}[\p{L}'-]+)?";

/// The user's own name, by the shapes an introduction takes rather than its exact words:
/// the name after "name's", "call(s) me", "go by"; "X here", "X speaking", "this is X"
/// opening a clause; "I'm X"; "我叫X", "我是X". The flag marks "I'm X" and "我是X", which
/// [`named`] checks further.
static NAMED: LazyLock<Vec<(Regex, bool)>> = LazyLock::new(|| {
    let plain = |p: String| (Regex::new(&p).expect("a valid pattern"), false);
    vec![
        plain(format!(r"\b(?i:my name is|my name's|call me|calls me|i am called|i'm called|i go by)\s+(?P<x>{NAME})")),
        // "Name's Marcus", but not "Her name's Coco": with no one's name before it.
        plain(format!(r"^{GREETING}?(?i:name's|the name's|the name is|name is)\s+(?P<x>{NAME})")),
        // "Hey, Priya here", "Hi all, Jonas speaking" — but not "Looky here" or "Honestly speaking".
        plain(format!(r"^{GREETING}(?P<x>{NAME})\s+(?i:here|speaking)(?:[,.!;]|$)")),
        // "Hi, it's Dana", "This is Grace Liu, I …" — but not "It's Monday" or "It's Seattle, I'm stoked".
        plain(format!(r"^{GREETING}(?i:this is|it's|it is)\s+(?P<x>{NAME})(?:[,.!]|\s+(?i:here|speaking)|$)")),
        plain(format!(r"^(?i:this is)\s+(?P<x>{NAME})(?:\s+(?i:here|speaking)|,\s+(?i:i|i'm|and i)\b)")),
        (Regex::new(&format!(r"^(?P<g>{GREETING})?(?i:i'm|i am)\s+(?P<x>{NAME})(?P<after>,\s+(?i:a|an)\s|[,.!]|$)")).expect("a valid pattern"), true),
        plain(r"^(?:我叫|我的名字是|我的名字叫|我名叫|本人叫)\s*(?P<x>[\p{Han}]{2,4}|[A-Za-z][\p{L}]+(?: [A-Z][\p{L}]+)?)".to_owned()),
        (Regex::new(r"^我是\s*(?P<x>[\p{Han}]{2,3})(?:[，,。！!]|$)").expect("a valid pattern"), true),
        // "叫我小周就行", "大家叫我老王吧": a name to be called by, up to what closes the request.
        // A surname, or 小/老/阿 and one, opens it ("他们都叫我别去了" tells, it does not name).
        plain(format!(
            r"^(?:\p{{Han}}{{0,3}}叫我)\s*(?P<x>[小老阿][{SURNAMES}]|[{SURNAMES}]\p{{Han}}{{1,2}}?)(?:就行|就好|就可以|吧|好了|[，,。！!]|$)"
        )),
    ]
});

/// The user's own name, if the sentence or one of its clauses introduces them.
pub fn user_name(sentence: &str) -> Option<String> {
    let sentence = sentence.trim().trim_end_matches(['.', '!', '?', '。', '！', '？', '~']);
    std::iter::once(sentence).chain(clauses(sentence).into_iter().map(without_lead_in)).find_map(named)
}

/// The user's own name if `text` introduces them (see [`NAMED`]). "I'm X" and "我是X" say
/// what the user is as often as who: X is a name only when it cannot be a nationality or
/// a faith ("I'm Canadian", "I'm Jewish": words ending in -ian, -ese, -ish, -ic, -i) unless
/// a greeting came first, and a Chinese X only when it opens with a common surname and
/// does not end as an occupation does ("我是学生", "我是程序员").
fn named(text: &str) -> Option<String> {
    NAMED.iter().find_map(|(pattern, ambiguous)| {
        let c = pattern.captures(text)?;
        let name = c["x"].trim();
        let plausible = if name.chars().all(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)) {
            name.chars().next().is_some_and(|first| SURNAMES.contains(first))
                && !name.ends_with(['员', '师', '生', '者', '家', '长', '工', '手', '人', '士'])
        } else {
            let nationality = ["ian", "ese", "ish", "ic", "i"].iter().any(|end| name.to_lowercase().ends_with(end));
            c.name("g").is_some() || name.contains(' ') || !nationality
        };
        (!ambiguous || plausible).then(|| name.to_owned())
    })
}

/// The most common Chinese surnames, which open most names.
const SURNAMES: &str = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬和仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩明佘池查麻苑迟邝欧阳司马上官诸葛";

#[cfg(test)]
mod tests {
    use super::user_name;

    #[test]
    fn introductions_name_the_user_and_other_sentences_do_not() {
        for (said, name) in [
            ("Name's Marcus Reyes, I run the infra team.", "Marcus Reyes"),
            ("Hey, Priya here.", "Priya"),
            ("This is Grace Liu, I look after the payments API.", "Grace Liu"),
            ("Folks call me Benji.", "Benji"),
            ("Hi, I'm Dan.", "Dan"),
            ("I'm Daniel Okafor, a nurse at a clinic in Leeds.", "Daniel Okafor"),
            ("大家好，我叫王芳，在字节跳动做后端。", "王芳"),
            ("你好，我是陈静，目前在腾讯工作。", "陈静"),
            ("以后叫我老陈就好。", "老陈"),
        ] {
            assert_eq!(user_name(said).as_deref(), Some(name), "{said}");
        }
        for said in [
            "Her name's Coco and she's adorable.",
            "I'm Canadian, born and raised in Halifax.",
            "It's Monday.",
            "This is Python code.",
            "I'm Italian but I've lived in Zurich for years.",
            "Spring here is lovely.",
            "Looky here, I got this new pup for you!",
            "Honestly speaking, it was fine.",
            "It's Seattle, I'm stoked for my game there next month!",
            "我是学生。",
            "他们都叫我别去了。",
        ] {
            assert_eq!(user_name(said), None, "{said}");
        }
    }
}
