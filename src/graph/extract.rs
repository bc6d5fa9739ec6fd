//! Relations without an LLM: patterns, English and Chinese, for the relations people
//! state most (uses, works on, leads, owns, part of, colleague, reports to, depends on,
//! deployed on, located in, lives in, works at, prefers, has). A slot's words become an
//! entity ([`super::mention`]) of a type the lexicon (technologies), the words' shape
//! (“… project”, “…模块”, “… Inc”) or the slot (a colleague is a person) gives. "I", "we",
//! "我", "my" are the user's own entity; a bare "the project", "it" or "项目" is the
//! project last named, and a Chinese clause without a subject ("张伟是我的同事，负责支付模块")
//! has the previous clause's. Like the fact rules, it may miss a relation, never invent an
//! entity: a slot whose words are not a name (lower-case English that is no technology,
//! project or component) is skipped.

use std::sync::LazyLock;

use regex::Regex;

use super::mention::{Discourse, Mention, PROJECT_WORDS, is_chinese, looks_like, mention};
use super::names::Aliases;
use super::{EntityType, Predicate};

/// One relation a sentence states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triple {
    pub subject: Mention,
    pub predicate: Predicate,
    pub object: Mention,
    /// What the subject moved away from ("from PostgreSQL to TiDB"): that edge ends.
    pub ended: Option<Mention>,
}

/// What one sentence states: relations, and the user's name if it says it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Extracted {
    pub triples: Vec<Triple>,
    pub user_name: Option<String>,
}

/// A pattern: the predicate, the default types of its slots, and whether the subject is
/// the speaker when the pattern has no subject group.
struct Rule {
    predicate: Predicate,
    subject: EntityType,
    object: EntityType,
    pattern: Regex,
}

fn rule(predicate: Predicate, subject: EntityType, object: EntityType, pattern: &str) -> Rule {
    Rule { predicate, subject, object, pattern: Regex::new(pattern).expect("a valid pattern") }
}

/// A noun phrase at the start of an English clause: at most five words.
const NP: &str = r"(?:[\p{L}\d][\p{L}\d.+#&'-]*)(?:\s+[\p{L}\d][\p{L}\d.+#&'-]*){0,4}?";
/// A Chinese (or mixed) subject at the start of a clause: at most twelve characters.
const ZH_NP: &str = r"[\p{Han}A-Za-z0-9.+#\- ]{0,12}?";

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    use EntityType::*;
    use Predicate::*;
    let en = |p: Predicate, s: EntityType, o: EntityType, verbs: &str| {
        rule(p, s, o, &format!(r"(?i)^(?P<s>{NP})\s+(?:{verbs})\s+(?P<o>.+)$"))
    };
    let zh = |p: Predicate, s: EntityType, o: EntityType, verbs: &str| {
        rule(p, s, o, &format!(r"^(?P<s>{ZH_NP})\s*(?:{verbs})\s*(?P<o>.+)$"))
    };
    vec![
        // Changes first: "from X to Y" says which edge ends.
        rule(
            Uses,
            Project,
            Technology,
            &format!(
                r"(?i)^(?P<s>{NP})\s+(?:have |has |had )?(?:migrated|moved|switched|changed)\s+(?P<s2>(?:[\p{{L}}\d.+#-]+\s+){{0,4}}?)from\s+(?P<old>.+?)\s+to\s+(?P<o>.+)$"
            ),
        ),
        rule(
            Uses,
            Project,
            Technology,
            &format!(
                r"^(?P<s>{ZH_NP})\s*(?:已经|已|刚刚|最近)?\s*从\s*(?P<old>[^，,。]+?)\s*(?:迁移|迁|换|切换|转|改|升级)(?:到|成|为)了?\s*(?P<o>[^，,。了]+)"
            ),
        ),
        en(
            Uses,
            Project,
            Technology,
            r"uses|use|is using|are using|runs on|run on|is built (?:on|with)|are built (?:on|with)|is written in|relies on|rely on|switched to|migrated to",
        ),
        en(DependsOn, Product, Product, r"depends on|depend on|requires|calls"),
        en(DeployedOn, Product, Technology, r"(?:is|are) deployed (?:on|to)|(?:is|are) hosted on|runs in"),
        en(PartOf, Product, Project, r"(?:is|are) (?:a |an )?(?:part|component|module) of|belongs to|belong to"),
        en(Leads, Person, Project, r"leads|lead|(?:am|'m|is|are) leading|heads|head|manages|manage"),
        en(WorksOn, Person, Project, r"(?:work|works|am working|'m working|is working|are working) on"),
        en(Owns, Person, Product, r"owns|own|(?:is|am|'m|are) (?:responsible|in charge) (?:for|of)|maintains|maintain"),
        en(ReportsTo, Person, Person, r"reports to|report to"),
        en(LocatedIn, Organization, Place, r"(?:is|are) (?:located|based|headquartered) in"),
        en(LivesIn, Person, Place, r"(?:live|lives|am living|'m living) in|moved to|relocated to"),
        en(WorksAt, Person, Organization, r"(?:work|works|am working|'m working) (?:at|for)|joined"),
        en(
            Prefers,
            Person,
            Concept,
            r"(?:really |much |strongly )?(?:prefer|prefers|like|likes|love|loves|enjoy|enjoys)",
        ),
        zh(Leads, Person, Project, r"负责|主导|带领|领导|牵头"),
        zh(Uses, Project, Technology, r"用的是|使用的是|采用的是|用了|使用了|采用了|使用|采用|基于|用"),
        zh(DependsOn, Product, Product, r"依赖于|依赖|调用"),
        zh(DeployedOn, Product, Technology, r"部署在|部署到|跑在|运行在|托管在"),
        zh(LocatedIn, Organization, Place, r"位于|坐落于|总部在"),
        zh(ReportsTo, Person, Person, r"向(?P<o2>[\p{Han}A-Za-z]{2,12}?)汇报"),
        zh(WorksOn, Person, Project, r"在做|参与了?|开发"),
        rule(
            PartOf,
            Product,
            Project,
            &format!(r"^(?P<s>{ZH_NP})\s*(?:是|属于)\s*(?P<o>[^，,。]+?)的(?:一部分|模块|组件|子系统)"),
        ),
        rule(PartOf, Product, Project, &format!(r"^(?P<s>{ZH_NP})\s*属于\s*(?P<o>[^，,。]+)")),
        rule(LivesIn, Person, Place, r"^我(?:现在)?(?:住在|居住在|生活在|搬到了?|搬去了?)\s*(?P<o>[^，,。]+)"),
        rule(WorksAt, Person, Organization, r"^我(?:现在)?在\s*(?P<o>[\p{Han}A-Za-z]{2,12}?)(?:工作|上班|任职)"),
        rule(WorksAt, Person, Organization, r"^我(?:现在)?(?:就职于|任职于|加入了)\s*(?P<o>[^，,。]+)"),
        rule(Prefers, Person, Concept, r"^我(?:很|比较|更|最|非常)?(?:喜欢|偏好|偏爱|爱)\s*(?P<o>[^，,。]+)"),
    ]
});

/// "X is my colleague", "my colleague X", "我的同事X", "X是我的同事": (X, colleague, user).
static COLLEAGUES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"^(?P<x>[\p{Lu}][\p{L}'-]*(?:\s+[\p{Lu}][\p{L}'-]*){0,2}) (?i:is (?:my|our) (?:colleague|coworker|co-worker|teammate))",
        r"\b(?i:(?:my|our) (?:colleague|coworker|co-worker|teammate))\s+(?P<x>[\p{Lu}][\p{L}'-]*(?:\s+[\p{Lu}][\p{L}'-]*){0,2})",
        r"^(?i:i work with) (?P<x>[\p{Lu}][\p{L}'-]*(?:\s+[\p{Lu}][\p{L}'-]*){0,2})",
        r"^(?P<x>[\p{Han}]{2,4}|[A-Z][\p{L}]+(?: [A-Z][\p{L}]+)?)\s*是我(?:的|们的)?(?:同事|队友|搭档)",
        r"我(?:的|们的)?(?:同事|队友|搭档)\s*(?P<x>[\p{Han}]{2,3}|[A-Z][\p{L}]+(?: [A-Z][\p{L}]+)?)",
        r"^我和\s*(?P<x>[\p{Han}]{2,4}|[A-Z][\p{L}]+)\s*是同事",
    ]
    .iter()
    .map(|p| Regex::new(p).expect("a valid pattern"))
    .collect()
});

/// "my manager is X", "我的领导是X": (user, reports_to, X).
static MANAGER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(?i:my (?:manager|boss|lead|team lead) is)|我的(?:上司|领导|经理|老板|主管)是)\s*(?P<x>[\p{Lu}\p{Han}][\p{L}'-]*(?:\s+[\p{Lu}][\p{L}'-]*)?)").expect("a valid pattern")
});

/// "I have a dog named Rex", "my sister Anna", "我有一只猫叫咪咪": (user, has, …).
static HAS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    const KINDS: &str = "dog|cat|puppy|kitten|parrot|rabbit|hamster|horse|sister|brother|son|daughter|wife|husband|partner|mother|father|mom|dad|grandmother|grandfather|cousin|niece|nephew|kids?|children";
    const ZH_KINDS: &str =
        "狗|猫|小狗|小猫|鹦鹉|兔子|仓鼠|妹妹|姐姐|弟弟|哥哥|儿子|女儿|妻子|老婆|丈夫|老公|妈妈|爸爸|孩子";
    [
        format!(r"\b(?i:i (?:have|'ve got|have got|adopted|got) (?:a|an|one|two|three|\d+|my)\s+(?:little |new |young |older |younger )?(?P<kind>{KINDS}))(?:\s+(?i:named|called)\s+(?P<x>\p{{Lu}}[\p{{L}}'-]*))?"),
        format!(r"\b(?i:my (?:little |new |young |older |younger )?(?P<kind>{KINDS}))(?:,)?\s+(?P<x>\p{{Lu}}[\p{{L}}'-]*)"),
        format!(r"我(?:有|养了|养着|养)(?:一只|一条|一个|两只|两个|一位|个)?(?P<kind>{ZH_KINDS})(?:，)?(?:叫|名叫|名字叫)?(?P<x>[\p{{Han}}]{{1,3}})?"),
    ]
    .iter()
    .map(|p| Regex::new(p).expect("a valid pattern"))
    .collect()
});

/// The user's own name: "my name is X", "call me X", "I'm X Y", "我叫X", "我是X，…".
static NAMED: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"\b(?i:my name is|call me|i am called|i'm called)\s+(?P<x>\p{Lu}[\p{L}'-]+(?:\s+\p{Lu}[\p{L}'-]+)?)",
        r"^(?:(?i)hi,? |hello,? )?(?i:i'm|i am)\s+(?P<x>\p{Lu}\p{Ll}+(?:\s+\p{Lu}\p{Ll}+)?)(?:[,.!]|$)",
        r"^(?:我叫|我的名字是|我的名字叫)\s*(?P<x>[\p{Han}]{2,4}|[A-Za-z][\p{L}]+(?: [A-Z][\p{L}]+)?)",
        r"^我是\s*(?P<x>[\p{Han}]{2,3})(?:[，,。！!]|$)",
    ]
    .iter()
    .map(|p| Regex::new(p).expect("a valid pattern"))
    .collect()
});

/// The words that end an English object: what follows is no longer its name.
static OBJECT_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\s+(?:for|because|since|which|that|but|when|while|so|as|at|in|on|from|with|to|now|too|also|every|these days|nowadays|instead|last|this|next|today|yesterday|already|again|anymore)\b.*$|[.!?;:()].*$").expect("a valid pattern")
});

/// Where an object list splits: "FastAPI and PostgreSQL", "FastAPI和PostgreSQL".
static LIST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\s*(?:,\s*and\s+|,|\s+and\s+|\s+&\s+|和|与|及|以及|、|跟|，)\s*").expect("a valid pattern")
});

const FAMILY: &[&str] = &[
    "sister",
    "brother",
    "son",
    "daughter",
    "wife",
    "husband",
    "partner",
    "mother",
    "father",
    "mom",
    "dad",
    "grandmother",
    "grandfather",
    "cousin",
    "niece",
    "nephew",
    "kid",
    "kids",
    "children",
    "妹妹",
    "姐姐",
    "弟弟",
    "哥哥",
    "儿子",
    "女儿",
    "妻子",
    "老婆",
    "丈夫",
    "老公",
    "妈妈",
    "爸爸",
    "孩子",
];

/// The relations of one sentence, with what earlier sentences of the batch named.
pub fn extract(sentence: &str, aliases: &Aliases, discourse: &mut Discourse) -> Extracted {
    let mut out = Extracted::default();
    let sentence = sentence.trim().trim_end_matches(['.', '!', '?', '。', '！', '？', '~']);
    out.user_name = NAMED.iter().find_map(|p| p.captures(sentence)).map(|c| c["x"].trim().to_owned());
    let mut previous_subject: Option<Mention> = None;
    for clause in clauses(sentence) {
        let clause = without_lead_in(clause);
        let (clause, named) = appositives(&expanded(clause), aliases, discourse, &mut out.triples);
        let found = relations(&clause, aliases, discourse, previous_subject.as_ref());
        if let Some(first) = found.first() {
            previous_subject = Some(first.subject.clone());
        } else if named.is_some() {
            previous_subject = named;
        }
        out.triples.extend(found);
    }
    for triple in &out.triples {
        for mention in [&triple.subject, &triple.object] {
            if mention.kind == EntityType::Project && !mention.is_user {
                discourse.last_project = Some(mention.clone());
            }
        }
    }
    out.triples.dedup();
    out
}

/// A sentence's clauses: Chinese commas and semicolons, English semicolons and ", and".
fn clauses(sentence: &str) -> Vec<&str> {
    static SPLIT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\s*(?:[，；;]|,\s+(?:and|but|while)\s+|\s+and\s+(?i:i|we)\s)\s*").expect("a valid pattern")
    });
    // "and I"/"and we" keep their pronoun: the split point is before it.
    let mut out = Vec::new();
    let mut start = 0;
    for m in SPLIT.find_iter(sentence) {
        out.push(&sentence[start..m.start()]);
        let text = m.as_str();
        start = if text.trim_end().ends_with(['I', 'i']) || text.trim_end().to_lowercase().ends_with("we") {
            m.start() + text.trim_end().rfind(' ').map_or(0, |i| i + 1)
        } else {
            m.end()
        };
    }
    out.push(&sentence[start..]);
    out.into_iter().map(str::trim).filter(|c| !c.is_empty()).collect()
}

/// Colleagues, managers and family named in passing become relations of their own, and
/// the clause goes on with the name: "my colleague Zhang Wei owns billing" → "Zhang Wei owns billing".
fn appositives(
    clause: &str,
    aliases: &Aliases,
    discourse: &Discourse,
    triples: &mut Vec<Triple>,
) -> (String, Option<Mention>) {
    let mut clause = clause.to_owned();
    let mut named = None;
    for pattern in COLLEAGUES.iter() {
        if let Some(c) = pattern.captures(&clause) {
            let name = c["x"].trim().to_owned();
            if let Some(person) = mention(&name, EntityType::Person, aliases, discourse) {
                named = Some(person.clone());
                triples.push(Triple {
                    subject: person,
                    predicate: Predicate::Colleague,
                    object: Mention::user(),
                    ended: None,
                });
            }
            let whole = c.get(0).expect("the whole match");
            clause = format!("{}{}{}", &clause[..whole.start()], name, &clause[whole.end()..]);
            break;
        }
    }
    if let Some(c) = MANAGER.captures(&clause)
        && let Some(person) = mention(&c["x"], EntityType::Person, aliases, discourse)
    {
        triples.push(Triple { subject: Mention::user(), predicate: Predicate::ReportsTo, object: person, ended: None });
    }
    for pattern in HAS.iter() {
        if let Some(c) = pattern.captures(&clause) {
            let kind = c["kind"].to_lowercase();
            let is_family = FAMILY.contains(&kind.as_str());
            let name = c.name("x").map(|x| x.as_str().trim().to_owned()).unwrap_or_else(|| kind.clone());
            let kind = if is_family { EntityType::Person } else { EntityType::Other };
            triples.push(Triple {
                subject: Mention::user(),
                predicate: Predicate::Has,
                object: Mention { name, kind, is_user: false },
                ended: None,
            });
            break;
        }
    }
    (clause, named)
}

/// A clause without the words that lead into it ("Now", "Also,", "现在", "另外").
fn without_lead_in(clause: &str) -> &str {
    static LEAD_IN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?i:so|and|also|now|currently|actually|btw|by the way|these days|oh|well|anyway)\b,?\s*|(?:现在|目前|另外|还有|然后|而且|其实|所以|最近|对了)[，,]?\s*)+")
            .expect("a valid pattern")
    });
    LEAD_IN.find(clause).map_or(clause, |m| &clause[m.end()..])
}

/// Contractions spelled out, so one pattern reads "I am" and "I'm".
fn expanded(clause: &str) -> String {
    static CONTRACTIONS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\b(i|we|you|they|it|he|she)(?:'|’)(m|re|ve|s)\b").expect("a valid pattern"));
    CONTRACTIONS
        .replace_all(clause, |c: &regex::Captures| {
            let verb = match c[2].to_lowercase().as_str() {
                "m" => "am",
                "re" => "are",
                "ve" => "have",
                _ => "is",
            };
            format!("{} {verb}", &c[1])
        })
        .into_owned()
}

/// The relations the rules find in one clause; a Chinese clause without a subject has `previous`.
fn relations(clause: &str, aliases: &Aliases, discourse: &Discourse, previous: Option<&Mention>) -> Vec<Triple> {
    for rule in RULES.iter() {
        let Some(c) = rule.pattern.captures(clause) else { continue };
        let subject_text = c.name("s").map(|s| s.as_str().trim()).unwrap_or("我");
        let subject = if subject_text.is_empty() {
            match previous {
                Some(previous) => Some(previous.clone()),
                None if is_chinese(clause) => Some(Mention::user()),
                None => None,
            }
        } else {
            mention(subject_text, rule.subject, aliases, discourse)
        };
        let subject = match c.name("s2").map(|s| s.as_str().trim()).filter(|s| !s.is_empty()) {
            Some(moved) => mention(moved, EntityType::Product, aliases, discourse).or(subject),
            None => subject,
        };
        let Some(subject) = subject else { continue };
        let object_text = c.name("o2").or_else(|| c.name("o")).map(|o| o.as_str()).unwrap_or_default();
        let predicate = match rule.predicate {
            // "负责/responsible for" a project is leading it; a component, owning it.
            Predicate::Leads if !looks_like(object_text, PROJECT_WORDS) && !subject.is_user => Predicate::Owns,
            Predicate::Leads if is_chinese(object_text) && !looks_like(object_text, PROJECT_WORDS) => Predicate::Owns,
            p => p,
        };
        let default_object = if predicate == Predicate::Owns { EntityType::Product } else { rule.object };
        let ended = c.name("old").and_then(|old| mention(clean_object(old.as_str()), rule.object, aliases, discourse));
        let objects: Vec<Mention> = LIST
            .split(clean_object(object_text))
            .filter_map(|part| mention(part, default_object, aliases, discourse))
            .filter(|o| admissible(predicate, o))
            .filter(|o| *o != subject)
            .collect();
        if objects.is_empty() {
            continue;
        }
        return objects
            .into_iter()
            .map(|object| Triple { subject: subject.clone(), predicate, object, ended: ended.clone() })
            .collect();
    }
    Vec::new()
}

/// The object's words without what follows its name.
fn clean_object(text: &str) -> &str {
    let text = text.trim();
    let end = OBJECT_END.find(text).map_or(text.len(), |m| m.start());
    text[..end].trim().trim_end_matches(['了', '的', '啦', '呢'])
}

/// Whether an object may take the predicate: what a thing uses, depends on or is
/// deployed on is a technology, project, component or name, not any phrase.
fn admissible(predicate: Predicate, object: &Mention) -> bool {
    match predicate {
        Predicate::Uses | Predicate::DependsOn | Predicate::DeployedOn => {
            object.kind != EntityType::Concept && object.kind != EntityType::Other
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(sentences: &[&str]) -> Vec<(String, &'static str, String)> {
        let (aliases, mut discourse) = (Aliases::default(), Discourse::default());
        let show = |m: &Mention| if m.is_user { "USER".to_owned() } else { format!("{}:{}", m.name, m.kind.as_str()) };
        sentences
            .iter()
            .flat_map(|s| extract(s, &aliases, &mut discourse).triples)
            .map(|t| (show(&t.subject), t.predicate.as_str(), show(&t.object)))
            .collect()
    }

    fn t(s: &str, p: &'static str, o: &str) -> (String, &'static str, String) {
        (s.to_owned(), p, o.to_owned())
    }

    #[test]
    fn the_seed_example_in_chinese() {
        let found =
            said(&["我是李明，负责电商项目。", "项目用的是 FastAPI 和 PostgreSQL。", "张伟是我的同事，负责支付模块。"]);
        assert_eq!(
            found,
            vec![
                t("USER", "leads", "电商项目:project"),
                t("电商项目:project", "uses", "FastAPI:technology"),
                t("电商项目:project", "uses", "PostgreSQL:technology"),
                t("张伟:person", "colleague", "USER"),
                t("张伟:person", "owns", "支付模块:product"),
            ]
        );
    }

    #[test]
    fn the_seed_example_in_english() {
        let found = said(&[
            "I lead the checkout project.",
            "The checkout project uses Django and Postgres.",
            "My colleague Priya owns the payment module.",
        ]);
        assert_eq!(
            found,
            vec![
                t("USER", "leads", "checkout project:project"),
                t("checkout project:project", "uses", "Django:technology"),
                t("checkout project:project", "uses", "PostgreSQL:technology"),
                t("Priya:person", "colleague", "USER"),
                t("Priya:person", "owns", "payment module:product"),
            ]
        );
    }

    #[test]
    fn a_migration_names_what_it_ends() {
        let (aliases, mut discourse) = (Aliases::default(), Discourse::default());
        let found = extract("电商项目已经从 PostgreSQL 迁移到 TiDB 了", &aliases, &mut discourse).triples;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].object.name, "TiDB");
        assert_eq!(found[0].ended.as_ref().map(|m| m.name.as_str()), Some("PostgreSQL"));
        let found = extract("We migrated the billing service from MySQL to PG.", &aliases, &mut discourse).triples;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].subject.name, "billing service");
        assert_eq!(found[0].object.name, "PostgreSQL");
        assert_eq!(found[0].ended.as_ref().map(|m| m.name.as_str()), Some("MySQL"));
    }

    #[test]
    fn people_places_and_pets() {
        let found = said(&[
            "I live in Lisbon.",
            "I work at Acme Corp.",
            "I report to Maria.",
            "I have a dog named Rex.",
            "我住在上海。",
            "我养了一只猫叫咪咪。",
            "The payment module depends on the order service.",
        ]);
        assert_eq!(
            found,
            vec![
                t("USER", "lives_in", "Lisbon:place"),
                t("USER", "works_at", "Acme Corp:organization"),
                t("USER", "reports_to", "Maria:person"),
                t("USER", "has", "Rex:other"),
                t("USER", "lives_in", "上海:place"),
                t("USER", "has", "咪咪:other"),
                t("payment module:product", "depends_on", "order service:product"),
            ]
        );
    }

    #[test]
    fn phrases_that_are_no_names_make_no_entities() {
        assert!(said(&["everyone uses their phone for that", "we use it for everything", "hello there"]).is_empty());
        let small_talk = [
            "It's like a reminder of my roots and all the love and support I get from my family.",
            "Now I'm ready to offer love and support to those who need it.",
        ];
        assert!(said(&small_talk).is_empty(), "{:?}", said(&small_talk));
        let (aliases, mut discourse) = (Aliases::default(), Discourse::default());
        assert_eq!(extract("我叫李明。", &aliases, &mut discourse).user_name.as_deref(), Some("李明"));
        assert_eq!(
            extract("Hi, I'm Daniel Okafor, a nurse.", &aliases, &mut discourse).user_name.as_deref(),
            Some("Daniel Okafor")
        );
    }
}
