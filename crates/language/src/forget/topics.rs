//! The kinds of personal information people ask to have forgotten, in English and
//! Chinese: each named by the words a request uses for it ("my medical info", "我的病历")
//! and recognised in a statement by what such a statement talks about (a doctor, a
//! diagnosis, a prescription; 医生、确诊、药). A request names the kind; a sentence of the
//! same conversation that talks about it is what the request refers to, whether or not
//! it shares a word with the request ("forget my address" → "We just moved into 42
//! Maple Court").

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

struct Kind {
    /// Words a request names the kind with (any one of them in the request's topic).
    names: Regex,
    /// What a statement of the kind talks about.
    cues: Regex,
}

fn kind(names: &str, cues: &str) -> Kind {
    Kind {
        names: Regex::new(&format!("(?i){names}")).expect("a valid pattern"),
        cues: Regex::new(&format!("(?i){cues}")).expect("a valid pattern"),
    }
}

static KINDS: LazyLock<Vec<Kind>> = LazyLock::new(|| {
    vec![
        // Where someone lives.
        kind(
            r"\b(?:address|live|lives|living|house|apartment|flat|location)\b|地址|住址|住在|住哪|家在|住处|门牌",
            r"\b(?:live|lives|living|moved|moving|move|address|street|st|avenue|ave|road|rd|lane|ln|court|ct|drive|dr|boulevard|blvd|apartment|apt|flat|condo|house|zip|postcode|neighbou?rhood|unit)\b|住|搬|路\d*号|\d+号|小区|街道?|号楼|单元|公寓",
        ),
        // Health.
        kind(
            r"\b(?:medical|medicine|medication|meds|health|diagnosis|diagnoses|condition|illness|disease|prescription|treatment|therapy|therapist|pregnancy|recovery|mental)\b|病|医|健康|诊断|药|治疗|心理|怀孕|体检",
            r"\b(?:doctor|dr|diagnos\w*|disease|syndrome|disorder|diabetes|cancer|asthma|depress\w*|anxiety|adhd|bipolar|medication|medicine|prescri\w*|pills?|mg|dose|therap\w*|counsel\w*|surgery|hospital|clinic|pregnan\w*|blood pressure|allerg\w*|symptoms?|chronic|insulin|rehab|sober|recovery|relapse|meetings?)\b|医生|医院|确诊|诊断|病|药|血压|血糖|怀孕|手术|治疗|咨询师|心理|抑郁|焦虑|过敏|乙肝|体检",
        ),
        // Money.
        kind(
            r"\b(?:financial|finances|finance|money|salary|income|wage|wages|pay|paycheck|debt|debts|loan|loans|bank|banking|savings|account|credit|mortgage)\b|工资|收入|月薪|年薪|薪|存款|欠款|贷款|银行|财务|钱",
            r"(?:\$\s?\d|\d\s?(?:k|usd|dollars|euros|pounds)\b)|\b(?:salary|income|earn\w*|paid|wage|per hour|an hour|debt|loans?|owe|owed|mortgage|credit|bank|account|savings|invest\w*)\b|工资|月薪|年薪|收入|挣|赚|万|欠|贷款|房贷|银行|存款|理财",
        ),
        // Relationships.
        kind(
            r"\b(?:relationship|partner|ex|boyfriend|girlfriend|husband|wife|spouse|dating|marriage|divorce|breakup|break-up|affair)\b|前任|男朋友|女朋友|对象|老公|老婆|婚|恋|感情",
            r"\b(?:boyfriend|girlfriend|partner|husband|wife|spouse|ex|dating|date|dated|broke up|breakup|divorc\w*|married|engaged|relationship|together|cheat\w*)\b|男朋友|女朋友|前任|前男友|前女友|对象|老公|老婆|分手|离婚|结婚|恋爱|约会|在一起",
        ),
        // Faith.
        kind(
            r"\b(?:religion|religious|faith|church|beliefs?|spiritual)\b|宗教|信仰|教会",
            r"\b(?:church|mosque|temple|synagogue|pray\w*|faith|religio\w*|christian|catholic|protestant|muslim|islam|jewish|judaism|orthodox|buddhis\w*|hindu\w*|atheis\w*|kosher|halal|bible|quran|torah|sabbath|shabbat)\b|宗教|信仰|教堂|基督|天主|佛教|伊斯兰|礼拜|祷告|清真",
        ),
        // Work.
        kind(
            r"\b(?:job|work|employer|company|layoff|laid|fired|career|boss)\b|工作|公司|裁员|辞职|上班|老板",
            r"\b(?:work|working|job|employer|company|laid off|layoffs?|fired|boss|manager|office|resign\w*|quit)\b|工作|公司|上班|裁员|辞职|老板|被裁",
        ),
        // Children.
        kind(
            r"\b(?:kids?|children|child|son|daughter|school)\b|孩子|儿子|女儿|学校|小学",
            r"\b(?:son|daughter|kids?|child|children|school|kindergarten|daycare|grade)\b|孩子|儿子|女儿|学校|小学|幼儿园|班",
        ),
        // Contact details and credentials.
        kind(
            r"\b(?:phone|mobile|cell|number|email|contact)\b|手机|电话|号码|邮箱",
            r"\b(?:phone|mobile|cell|number|email|e-mail|call me|text me)\b|\[phone\]|\[email\]|手机|电话|号码|邮箱",
        ),
        kind(
            r"\b(?:password|passwords|passcode|pin|login|credentials?)\b|密码|口令",
            r"\b(?:password|passcode|pin|login|credentials?)\b|\[password\]|密码|口令",
        ),
        kind(
            r"\b(?:social security|ssn|passport|license|licence|id|identity)\b|身份证|护照|驾照|证件",
            r"\b(?:social security|ssn|passport|license|licence|id number)\b|\[national id\]|身份证|护照|驾照|证件",
        ),
    ]
});

/// Whether `sentence` talks about a kind of information `topic` names.
pub fn talks_about(topic: &str, sentence: &str) -> bool {
    !topic.trim().is_empty() && KINDS.iter().any(|k| k.names.is_match(topic) && k.cues.is_match(sentence))
}

/// Whether `sentence` goes on about the one before: it opens with a word pointing back
/// ("It was devastating.", "他经常值夜班").
pub fn continues(sentence: &str) -> bool {
    CONTINUES.is_match(sentence)
}

/// Whether `topic` names a person by their relation to the user: kin, a partner or an ex,
/// a friend, someone at work or at home ("sister's situation", "best friend", "前女友", "我妈").
pub fn names_a_person(topic: &str) -> bool {
    RELATION.is_match(topic)
}

static RELATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        \b(?:(?:step|half|grand|great[\s-]?grand)[\s-]?)?(?:mother|mum|mom|mommy|mama|father|dad|daddy|papa|parents?|sister|brother|sibling|son|daughter|kids?|child|children|baby
           |grandmother|grandma|granny|grandfather|grandpa|grandparents?|aunt|auntie|uncle|cousin|niece|nephew|in-laws?|mother-in-law|father-in-law
           |wife|husband|spouse|partner|fianc[ée]e?|boyfriend|girlfriend|ex|ex-wife|ex-husband|ex-boyfriend|ex-girlfriend|ex-partner
           |friend|best\s+friend|bestie|roommate|flatmate|housemate|neighbou?r|colleague|coworker|co-worker|boss|manager|landlord|tenant)s?(?:'s)?\b
        | 妈|母亲|爸|父亲|父母|爹|娘|姐|妹|哥|弟|儿子|女儿|孩子|宝宝|奶奶|爷爷|外婆|外公|姥姥|姥爷|姑|姨|舅|叔|伯|表哥|表姐|表弟|表妹|堂哥|堂姐|侄|外甥
        | 老婆|老公|妻子|丈夫|爱人|对象|男朋友|女朋友|男友|女友|前任|前夫|前妻|前男友|前女友|闺蜜|朋友|室友|同事|老板|领导|邻居|房东",
    )
    .expect("a valid pattern")
});

/// Whether `sentence` brings no subject of its own: it does not open with the speaker
/// ("I", "my", "我") or a turn to something else ("Also,", "Separately,", "另外"), so it
/// may go on about what was said before it ("Crying every night.", "分开以后很难过。").
pub fn no_new_subject(sentence: &str) -> bool {
    !NEW_SUBJECT.is_match(sentence.trim_start())
}

static NEW_SUBJECT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)^(?:
            (?:also|separately|anyway|anyhow|besides|meanwhile|otherwise|on\s+(?:a|an)\s+\w+\s+note|in\s+other\s+news|on\s+another\s+note|by\s+the\s+way|btw|unrelated(?:ly)?|oh|and|but|plus)\b
          | (?:i|i'm|i've|i'd|i'll|im|my|me|we|we're|we've|our|us)\b
          | [^,:;，：；]{1,25}[,:;，：；]\s*(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|our)\b
          | 另外|还有|对了|顺便|此外|不过|话说|我|咱)",
    )
    .expect("a valid pattern")
});

static CONTINUES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:(?:and|but|so|oh|also|plus),?\s+)?(?:she|he|they|it|that|this|those|these|which)\b|^(?:她|他|它|这|那)")
        .expect("a valid pattern")
});

/// Whether `text` names `topic`: one of its words (three letters or more, a plural's
/// `s` aside), or two of its Chinese characters in a row.
pub fn names(text: &str, topic: &str) -> bool {
    let lower = text.to_lowercase();
    let words: HashSet<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let stem = |w: &str| w.strip_suffix('s').filter(|s| s.len() >= 3).unwrap_or(w).to_owned();
    let stems: HashSet<String> = words.iter().map(|w| stem(w)).collect();
    topic.to_lowercase().split(|c: char| c.is_whitespace() || c == '-').any(|word| {
        let han: Vec<char> = word.chars().filter(|c| is_han(*c)).collect();
        if han.len() >= 2 {
            return han.windows(2).any(|pair| lower.contains(&pair.iter().collect::<String>()));
        }
        word.chars().count() >= 3 && (words.contains(word) || stems.contains(&stem(word)))
    })
}

fn is_han(c: char) -> bool {
    ('\u{4E00}'..='\u{9FFF}').contains(&c) || ('\u{3400}'..='\u{4DBF}').contains(&c)
}

/// The words of `topic` a text naming it would hold: three letters or more (a plural's
/// `s` aside), or any with a Chinese character.
pub fn words(topic: &str) -> Vec<&str> {
    topic
        .split_whitespace()
        .filter(|w| w.chars().count() >= 3 || w.chars().any(is_han))
        .map(|w| w.trim_end_matches('s'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{continues, names, names_a_person, no_new_subject, talks_about, words};

    #[test]
    fn a_person_is_named_by_their_relation_to_the_user() {
        for person in ["sister's situation", "best friend", "ex-wife", "stepdad", "前女友", "妈", "同事"] {
            assert!(names_a_person(person), "{person}");
        }
        for thing in ["home address", "salary", "medical info", "passport number", "地址", "工资"] {
            assert!(!names_a_person(thing), "{thing}");
        }
    }

    #[test]
    fn a_sentence_that_opens_with_the_speaker_or_a_turn_brings_a_subject_of_its_own() {
        for goes_on in [
            "Crying every night, barely eating.",
            "Lawyers cost a fortune already.",
            "分开以后很难过。",
            "Three months of chemo left.",
        ] {
            assert!(no_new_subject(goes_on), "{goes_on}");
        }
        for own in [
            "I also started learning Portuguese.",
            "Also, the car needs new tyres.",
            "My bike got a flat.",
            "On the bright side, I passed.",
            "Different topic: I'm learning to sail.",
            "我在学吉他。",
            "另外，车该保养了。",
        ] {
            assert!(!no_new_subject(own), "{own}");
        }
    }

    #[test]
    fn a_kind_named_in_a_request_is_found_in_what_was_said() {
        assert!(talks_about("home address", "We bought a flat on 17 Birch Lane in March."));
        assert!(talks_about("medical", "The doctor says my thyroid is underactive."));
        assert!(talks_about("salary", "I make about $90k a year before tax."));
        assert!(talks_about("ex", "My girlfriend Dana and I broke up last month."));
        assert!(talks_about("病历", "医生说我有糖尿病。"));
        assert!(talks_about("工资", "我一个月挣一万八。"));
        assert!(!talks_about("salary", "I play the cello in a community orchestra."));
        assert!(!talks_about("home address", "I'm learning Spanish on Duolingo."));
        assert!(!talks_about("", "I live in Leeds."));
    }

    #[test]
    fn a_topic_is_named_by_a_word_or_two_chinese_characters() {
        let cases = [
            ("I got a new tattoo on my wrist", "tattoos", true),
            ("我的护照号码在抽屉里", "护照", true),
            ("I'm saving for a trip", "savings", true),
            ("I'm flying to Rome", "savings account", false),
            ("The bus was late", "as", false),
        ];
        for (text, topic, named) in cases {
            assert_eq!(names(text, topic), named, "{text} / {topic}");
        }
        assert_eq!(words("my old tattoos at 前任"), ["old", "tattoo", "前任"]);
    }

    #[test]
    fn a_sentence_that_points_back_goes_on_about_the_one_before() {
        let cases = [
            ("It was devastating.", true),
            ("And she never called back", true),
            ("他经常值夜班", true),
            ("Itinerary is ready", false),
            ("We moved to Lisbon", false),
        ];
        for (sentence, goes_on) in cases {
            assert_eq!(continues(sentence), goes_on, "{sentence}");
        }
    }
}
