//! The patterns [`super::extract`] states relations by, English and Chinese: one per
//! predicate and phrasing, with the default types of their slots, and the phrases for
//! colleagues, managers, family, pets and the user's own name.

use std::sync::LazyLock;

use regex::Regex;

use super::{EntityType, Predicate};

/// A pattern: the predicate, the default types of its slots, and whether the subject is
/// the speaker when the pattern has no subject group.
pub(super) struct Rule {
    pub(super) predicate: Predicate,
    pub(super) subject: EntityType,
    pub(super) object: EntityType,
    pub(super) pattern: Regex,
}

fn rule(predicate: Predicate, subject: EntityType, object: EntityType, pattern: &str) -> Rule {
    Rule { predicate, subject, object, pattern: Regex::new(pattern).expect("a valid pattern") }
}

/// A noun phrase at the start of an English clause: at most five words.
const NP: &str = r"(?:[\p{L}\d][\p{L}\d.+#&'-]*)(?:\s+[\p{L}\d][\p{L}\d.+#&'-]*){0,4}?";
/// A Chinese (or mixed) subject at the start of a clause: at most twelve characters.
const ZH_NP: &str = r"[\p{Han}A-Za-z0-9.+#\- ]{0,12}?";

pub(super) static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
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
        // "I am a data engineer at Spotify", "she is a consultant with Deloitte": a role at
        // an employer (not "a big fan of …").
        rule(
            WorksAt,
            Person,
            Organization,
            &format!(
                r"^(?P<s>{NP})\s+(?:am|is|are|was|were)\s+(?:a|an|the)\s+(?:[\p{{Ll}}-]+\s+){{1,3}}?(?:at|with)\s+(?P<o>\p{{Lu}}.*)$"
            ),
        ),
        // "I run the infra team at Plaid": a team of an employer.
        rule(
            WorksAt,
            Person,
            Organization,
            &format!(
                r"(?i)^(?P<s>{NP})\s+\w+\s+(?:the|a|our|my)\s+(?:[\p{{L}}-]+\s+){{0,2}}?(?:team|group|department|lab|office)\s+(?:at|of)\s+(?P<o>.+)$"
            ),
        ),
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
        // Anyone lives where they moved, as in English: "我住在…", "赵磊搬到了…".
        zh(LivesIn, Person, Place, r"(?:现在)?(?:住在|居住在|生活在|搬到了?|搬去了?|调到了?|调去了?)"),
        rule(
            WorksAt,
            Person,
            Organization,
            r"^我?(?:现在|目前)?在\s*(?P<o>[\p{Han}A-Za-z]{2,12}?)(?:工作|上班|任职|实习|做|当)",
        ),
        rule(WorksAt, Person, Organization, r"^我(?:现在)?(?:就职于|任职于|加入了)\s*(?P<o>[^，,。]+)"),
        rule(Prefers, Person, Concept, r"^我(?:很|比较|更|最|非常)?(?:喜欢|偏好|偏爱|爱)\s*(?P<o>[^，,。]+)"),
    ]
});

/// "X is my colleague", "my colleague X", "我的同事X", "X是我的同事": (X, colleague, user).
pub(super) static COLLEAGUES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
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
pub(super) static MANAGER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(?i:my (?:manager|boss|lead|team lead) is)|我的(?:上司|领导|经理|老板|主管)是)\s*(?P<x>[\p{Lu}\p{Han}][\p{L}'-]*(?:\s+[\p{Lu}][\p{L}'-]*)?)").expect("a valid pattern")
});

/// "I have a dog named Rex", "my sister Anna", "我有一只猫叫咪咪": (user, has, …).
pub(super) static HAS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
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

/// The words that end an English object: what follows is no longer its name.
pub(super) static OBJECT_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\s+(?:for|because|since|which|that|but|when|while|so|as|at|in|on|from|with|to|now|too|also|every|these days|nowadays|instead|last|this|next|today|yesterday|already|again|anymore)\b.*$|[!?;:()].*$|\.(?:\s.*)?$").expect("a valid pattern")
});

/// Where an object list splits: "FastAPI and PostgreSQL", "FastAPI和PostgreSQL".
pub(super) static LIST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\s*(?:,\s*and\s+|,|\s+and\s+|\s+&\s+|和|与|及|以及|、|跟|，)\s*").expect("a valid pattern")
});

pub(super) const FAMILY: &[&str] = &[
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
