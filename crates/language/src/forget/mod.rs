//! Recognising a request to forget, said in conversation: "please forget my social
//! security number", "don't keep where I live", "I shouldn't have shared that — forget
//! it", "忘掉我的身份证号", "别记住我住在哪儿", "把我前任的事都忘了吧".
//!
//! By structure, not by sentence: a verb of forgetting or deleting addressed to the
//! assistant (an imperative, a request — "please", "can you", "I'd like you to" — or a
//! negated verb of keeping: "don't remember", "别记"), then what it is about. A
//! statement about the speaker ("I forgot my keys", "我忘了带伞") or an instruction to
//! remember ("don't forget to …") is not a request. What it is about is the rest of
//! the clause; "that", "it", "what I just said" or nothing at all point back at what
//! was said just before.
//!
//! What a request refers to is found by [`topics`] (the kinds of personal information,
//! and whether a sentence names or talks about one) and [`values`] (the distinctive
//! values a sentence holds, repeated elsewhere).

pub mod topics;
pub mod values;

use std::sync::LazyLock;

use regex::Regex;

/// A request to forget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// What it is about, in the speaker's words without the request's own ("my social
    /// security number" → "social security number"); empty when it only points back.
    pub topic: String,
    /// It points back at what was said just before ("forget that", "当我没说").
    pub points_back: bool,
    /// The request's own sentence says what it takes back, before asking ("My PIN is
    /// 4821 — actually, forget I said that"): it points back no further.
    pub stated_before: bool,
}

/// English: who is asked, then the verb; the object follows.
static EN_VERB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        (?:(?:^|[,;:.!—–]\s*|\s-\s+)(?:(?:please|pls|kindly|just|actually|so|and|but|then|also|now|ok|okay|wait|oh|hey|hmm|um|well|yeah|no)[,\s]+)*
           |\b(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:just\s+)?|\b(?:i\s+(?:want|need)|i'd\s+like|i\s+would\s+like)\s+you\s+to\s+
           |\bgo\s+ahead\s+and\s+|\bmake\s+sure\s+(?:you|to)\s+|\byou\s+(?:can|could|may|should)\s+(?:just\s+|go\s+ahead\s+and\s+)?
           |\bfeel\s+free\s+to\s+|\blet's\s+)
        (?P<verb>forget|delete|remove|erase|wipe|clear|scrub|purge|discard|drop|get\s+rid\s+of|throw\s+away|throw\s+out|unlearn
           |strike|scratch|scrap|ditch|toss|bin|nuke|expunge|disregard|ignore|let\s+go\s+of)\b
        (?P<rest>.*)",
    )
    .expect("a valid pattern")
});

/// English: not keeping ("don't remember", "I'd rather you didn't store").
static EN_NOT_KEEP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        \b(?:don't|dont|do\s+not|please\s+don't|no\s+need\s+to|stop|i\s+don't\s+want\s+you\s+to|i\s+do\s+not\s+want\s+you\s+to
           |(?:can|could|would|will)\s+you\s+(?:please\s+)?not|try\s+not\s+to
           |i(?:'d|\s+would)\s+(?:rather|prefer)\s+(?:it\s+if\s+)?you\s+(?:didn't|did\s+not|not)|you\s+shouldn't|you\s+should\s+not
           |i\s+(?:don't|do\s+not)\s+want\s+you)\s+
        (?:ever\s+|really\s+)?(?P<verb>remember(?:ing)?|keep(?:ing)?|store|storing|stored|save|saving|saved|record(?:ing)?|note|noting|log|logging|retain|track
           |(?:hold|hang)(?:ing)?\s+on\s*to|file|filing)\b
        (?P<rest>.*)",
    )
    .expect("a valid pattern")
});

/// English: nothing is to be kept ("keep nothing about my cousin", "nothing about my
/// ex-wife should stay in your memory").
static EN_NOTHING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        ^\s*(?:(?:please|pls|so|just|and|ok|okay|now|then)[,\s]+)*(?:keep|store|save|remember|retain|record|hold\s+on\s+to)\s+nothing\s+(?P<rest>(?:about|of|on|concerning|regarding)\b.*)
        |\bnothing\s+(?P<rest2>(?:about|of|on|concerning|regarding)\s+.{1,60}?)\s+(?:should|may|can|must)\s+(?:stay|remain|be\s+kept|be\s+stored|be\s+saved|be\s+remembered)
           \s+(?:in\s+(?:your\s+)?(?:memory|memories|notes|records)|with\s+you|on\s+file)\b",
    )
    .expect("a valid pattern")
});

/// English: "take my number out of your memory", "I don't want that on file".
static EN_OUT_OF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        \b(?:take|get|leave|keep|pull)\s+(?P<rest>.{1,60}?)\s+(?:out\s+of|off)\s+(?:your\s+)?(?:memory|memories|records?|notes|files?|system|database)\b
        |\bi\s+(?:don't|do\s+not)\s+want\s+(?P<rest2>.{1,60}?)\s+(?:on\s+file|on\s+record|in\s+your\s+(?:memory|records|notes)|kept|stored|saved|remembered)\b",
    )
    .expect("a valid pattern")
});

/// "… about the pay thing": what a request that points back is about.
static ABOUT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\babout\s+(?:the|my|that|this|those)?\s*(?P<what>[^—–,.;!?]{2,40}?)(?:\s+(?:thing|stuff|part|bit))?\s*(?:[—–,.;!?]|$)")
        .expect("a valid pattern")
});

/// Chinese: a topic named before the request ("关于我男朋友的事情，请你全部忘掉吧").
static ZH_ABOUT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:关于|有关)(?P<what>[^，。！？,!?；]{1,24})").expect("a valid pattern"));

/// English: someone the speaker names by their relation told them what a request points
/// back at ("my colleague told me that …").
static TOLD_BY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bmy\s+(?P<who>[a-z][\w-]*)\s+(?:\w+\s+){0,2}?(?:told|said|shared|mentioned|confided)\b[^.!?]*\b(?:that|this|it)\b")
        .expect("a valid pattern")
});

/// English: taking back what was just said, with no object.
static EN_TAKE_BACK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        \b(?:scratch\s+that|strike\s+that|never\s*mind\s+(?:that|what\s+i\s+(?:said|told\s+you|mentioned)|the\s+(?P<nm>[^.,;!?]+))
           |pretend\s+(?:that\s+)?i\s+(?:never|didn't|did\s+not)\s+(?:say|said|tell\s+you|told\s+you|mention|mentioned|share|shared|bring\s+up|brought\s+up)(?P<obj>[^.!?]*)
           |i\s+(?:shouldn't|should\s+not)\s+have\s+(?:said|told\s+you|shared|mentioned|typed|written|brought\s+(?:it\s+|that\s+)?up)
           |forget\s+i\s+(?:said|mentioned|told\s+you))",
    )
    .expect("a valid pattern")
});

/// Chinese: a verb of forgetting or deleting, or a negated verb of keeping.
static ZH_VERB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?P<verb>忘掉|忘记|忘了|忘了吧|删除|删掉|删了|抹掉|抹去|清除|清掉|去掉|(?:别|不要|不用|无需|请勿|勿|不必|别再|不要再)(?:帮我)?(?:记下来|记住|记下|记着|记录|保存|存|留着|保留|留(?:下)?(?:记录|底|档|痕迹)?|记)|当(?:作|做)?(?:我)?没(?:说|听|讲)(?:过)?|就当没(?:说|听)(?:过)?|(?:就)?当(?:作|做)?(?:你)?不知道)",
    )
    .expect("a valid pattern")
});

/// Chinese: a request is addressed to the listener.
static ZH_ADDRESSED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(请|麻烦|帮我|你|把|别|不要|不用|就当|当作|当做|吧|哦|啊|统统|全部|一概|全都)")
        .expect("a valid pattern")
});

/// Chinese: "I forgot …", a statement about the speaker.
static ZH_SPEAKER_FORGOT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(我|他|她|我们)(?:又|都|还|竟然)?(忘了|忘记)").expect("a valid pattern"));

/// English: "I forgot …", "don't forget to …": not requests.
static EN_NOT_REQUEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:i|we|he|she|they|you)\s+(?:always\s+|often\s+|never\s+|sometimes\s+)?(?:forgot|forget|forgets)\b|\b(?:don't|do\s+not|never)\s+forget\b|\bforget\s+(?:to|about\s+it\s+if)\b")
        .expect("a valid pattern")
});

/// A clause of the speaker's own that a verb after a comma continues.
static SPEAKERS_CLAUSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:i|we|he|she|they|you)(?:'ll|'d|\s+(?:can|could|will|would|might|may|always|often|sometimes|want\s+to|need\s+to|tried\s+to|try\s+to|like\s+to|love\s+to|get\s+to|used\s+to))\b[^.!?]*$|\bto\s*$|\b(?:helps?|let|lets|made|makes)\s+(?:me|us)\s*$")
        .expect("a valid pattern")
});

/// An object too general to name anything the user said ("can you forget things?").
static GENERIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:things|stuff|me|us|everything|anything|people|conversations|chats)\b")
        .expect("a valid pattern")
});

/// The object of a deletion is the user's, or what was said.
static ABOUT_USER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:my|me|mine|i|i've|i'm|that|this|it|what|everything|anything|all)\b|\b(?:from|in)\s+(?:your\s+)?memory\b")
        .expect("a valid pattern")
});

/// Where a request's object ends and another clause begins.
static CLAUSE_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i),\s*(?:i|i'm|i'd|it|it's|its|she|he|they|she's|he's|they're|that|that's|this|if|because|since|as|so|please|ok|okay|thanks|thank|it\s+is|which|we|you|and\s+(?:i|it|please))\b|\s+(?:because|since|if|so\s+that|as\s+it|as\s+i)\b")
        .expect("a valid pattern")
});

/// Whether `sentence` speaks of forgetting, deleting or keeping, as a reply to a request
/// does ("I won't remember 1187 Birchwood Lane", "文三路259号不会保存").
pub fn speaks_of_keeping(sentence: &str) -> bool {
    KEEPING.is_match(sentence)
}

static KEEPING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:forget|forgot|forgotten|remember|remembered|keep|kept|store|stored|save|saved|delete|deleted|remove|removed|erase|erased|wipe|wiped|record|noted|note)\b|忘|记|删|保存|存|保留|清除")
        .expect("a valid pattern")
});

/// The request in `sentence`, if it is one.
pub fn detect(sentence: &str) -> Option<Request> {
    let s = sentence.trim();
    if s.is_empty() || s.contains(crate::text::DELETED) {
        return None;
    }
    let (mut request, cue_at) = detect_english(s).or_else(|| detect_chinese(s))?;
    if request.points_back {
        // "Hey, about the pay thing — I don't want that on file."
        let named = match ABOUT.captures(&s[..cue_at]).or_else(|| ABOUT.captures(s)) {
            Some(about) => topic_words(&about["what"]),
            None => ZH_ABOUT.captures(s).map(|about| zh_topic(&about["what"])).unwrap_or_default(),
        };
        if !named.is_empty() {
            (request.topic, request.points_back) = (named, false);
        }
    }
    let before = &s[..cue_at];
    // "My colleague told me that in confidence, so don't store any of it": what was told
    // by someone named by their relation to the speaker is about them.
    if request.points_back
        && let Some(told) = TOLD_BY.captures(before)
        && topics::names_a_person(&told["who"])
    {
        (request.topic, request.points_back) = (told["who"].to_owned(), false);
        return Some(request);
    }
    let statement_before = if before.chars().any(is_han) {
        before.split(['，', '。', '！', '？', '…', ',', ';', '；']).filter(|c| c.trim().chars().count() >= 4).count()
            >= 1
            && before.contains(['，', '。', '…', ','])
    } else {
        crate::text::word_count(before) >= 3
    };
    request.stated_before = request.points_back && statement_before;
    Some(request)
}

fn is_han(c: char) -> bool {
    ('\u{4E00}'..='\u{9FFF}').contains(&c)
}

/// A request and where its cue starts in the sentence.
type Found = (Request, usize);

fn request(topic: String) -> Request {
    Request { points_back: topic.is_empty(), topic, stated_before: false }
}

fn detect_english(s: &str) -> Option<Found> {
    if let Some(caps) = EN_NOTHING.captures(s) {
        let rest = caps.name("rest").or_else(|| caps.name("rest2")).map_or("", |m| m.as_str());
        return Some((request(topic_words(rest)), caps.get(0).map_or(0, |m| m.start())));
    }
    if let Some(caps) = EN_OUT_OF.captures(s) {
        let rest = caps.name("rest").or_else(|| caps.name("rest2")).map_or("", |m| m.as_str());
        return Some((request(topic_words(rest)), caps.get(0).map_or(0, |m| m.start())));
    }
    if let Some(caps) = EN_TAKE_BACK.captures(s) {
        let topic = caps.name("nm").or_else(|| caps.name("obj")).map(|m| topic_words(m.as_str())).unwrap_or_default();
        // "I shouldn't have shared my address — please forget it": the object names it.
        let named = [&EN_VERB, &EN_NOT_KEEP]
            .into_iter()
            .filter_map(|pattern| pattern.captures(s))
            .map(|c| topic_words(&c["rest"]))
            .find(|t| !t.is_empty());
        let topic = if topic.is_empty() { named.unwrap_or_default() } else { topic };
        return Some((request(topic), caps.get(0).map_or(0, |m| m.start())));
    }
    let (caps, deleting) = match EN_VERB.captures(s) {
        Some(caps) => (caps, true),
        None => (EN_NOT_KEEP.captures(s)?, false),
    };
    let verb_at = caps.name("verb").map(|m| m.start()).unwrap_or(0);
    // "I forgot my password", "don't forget to call": the verb is the speaker's, or an order
    // to remember; "I can relax, forget my troubles": the speaker's clause goes on.
    let lead_at = caps.get(0).map_or(0, |m| m.start());
    // "Could you forget all of that about my mom?" asks; "will you forget me?" and "can
    // you forget things?" do not, and are left to the check below.
    let lead = caps.get(0).map(|m| m.as_str().to_lowercase()).unwrap_or_default();
    let asked = ["can you", "could you", "would you"].iter().any(|l| lead.contains(l))
        && ABOUT_USER.is_match(&caps["rest"])
        && !GENERIC.is_match(caps["rest"].trim());
    if !asked && EN_NOT_REQUEST.find_iter(s).any(|m| m.start() <= verb_at && verb_at < m.end() + 1)
        || deleting && SPEAKERS_CLAUSE.is_match(&s[..lead_at])
    {
        return None;
    }
    // A deletion verb needs an object that is the user's or what was said: "delete the
    // old branch" is a task, "delete my medical info" a request.
    let rest = &caps["rest"];
    let verb = caps["verb"].to_lowercase();
    let whole = caps.get(0).map(|m| m.as_str().to_lowercase()).unwrap_or_default();
    let not_keeping = ["n't", "not", "never", "stop", "no need"].iter().any(|w| whole.contains(w));
    let forgetting = verb.starts_with("forget") || verb.starts_with("unlearn") || not_keeping;
    let about_user = ABOUT_USER.is_match(rest);
    if !forgetting && !about_user {
        return None;
    }
    let topic = topic_words(rest);
    let at = caps.get(0).map_or(0, |m| m.start());
    Some((request(topic), at))
}

fn detect_chinese(s: &str) -> Option<Found> {
    let caps = ZH_VERB.captures(s)?;
    let verb = caps.name("verb").expect("the verb group");
    let negated_keep =
        ["别", "不要", "不用", "无需", "请勿", "勿", "不必"].iter().any(|n| verb.as_str().starts_with(n));
    let taking_back = verb.as_str().contains("没") || verb.as_str().contains("不知道");
    if !negated_keep && !taking_back {
        if !ZH_ADDRESSED.is_match(s) {
            return None;
        }
        // "我忘了带伞": the speaker forgot; "把……忘了吧" is still a request.
        if ZH_SPEAKER_FORGOT.is_match(s) && !s.contains('把') && !s.ends_with('吧') && !s.contains("请") {
            return None;
        }
    }
    // The topic: "把 X 忘了", or what follows the verb ("忘掉我的身份证号"), or what precedes it.
    // The clause nearest the verb on either side.
    let before = s[..verb.start()].rsplit(['，', '。', '！', '？', ',', '!', '?', '；', '—']).next().unwrap_or("");
    let after = &s[verb.end()..];
    let mut topic = match before.rfind('把') {
        Some(i) => zh_topic(&before[i + '把'.len_utf8()..]),
        None => {
            let after_topic = zh_topic(after);
            if after_topic.is_empty() { zh_topic(before) } else { after_topic }
        }
    };
    // "我弟弟的事情，请从记忆里删掉": the topic is the clause before the request's own.
    if topic.is_empty() {
        let earlier = s[..verb.start()].rsplit(['，', '。', '！', '？', ',', '!', '?', '；', '—']).nth(1).unwrap_or("");
        topic = zh_topic(earlier);
    }
    let points_back = topic.is_empty() || taking_back && topic.chars().count() < 2;
    // The cue of a topic named before the verb is where the topic starts.
    let clause_at = s[..verb.start()]
        .char_indices()
        .rfind(|(_, c)| ['，', '。', '！', '？', ',', '!', '?', '；', '—'].contains(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let at = if points_back { verb.start() } else { clause_at.min(verb.start()) };
    Some((Request { topic, points_back, stated_before: false }, at))
}

/// The words of an English object that say what it is about.
fn topic_words(rest: &str) -> String {
    let clause = rest.split(['.', ';', '!', '?', '—', '–']).next().unwrap_or("");
    // The object ends where another clause starts: ", I shouldn't have …", "if that's ok".
    let clause = CLAUSE_END.split(clause).next().unwrap_or(clause);
    clause
        .split(|c: char| c.is_whitespace() || c == ',')
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-'))
        .filter(|w| !w.is_empty() && !REQUEST_WORDS.contains(&w.to_lowercase().as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The words of a Chinese object that say what it is about.
fn zh_topic(text: &str) -> String {
    let clause = text.split(['，', '。', '！', '？', ',', '!', '?', '；']).next().unwrap_or("");
    // "跟前女友有关的": "with" only at the start, not inside a word (高跟鞋).
    let mut topic = clause.trim_start().trim_start_matches('跟').to_owned();
    for word in ZH_REQUEST_CHARS.iter().filter(|w| w.chars().count() > 1) {
        topic = topic.replace(word, " ");
    }
    for word in ZH_REQUEST_CHARS.iter().filter(|w| w.chars().count() == 1) {
        topic = topic.replace(word, " ");
    }
    topic.split_whitespace().collect::<Vec<_>>().join(" ")
}

mod words;
use words::{REQUEST_WORDS, ZH_REQUEST_CHARS};

#[cfg(test)]
mod tests;
