//! Fact extraction without an LLM: patterns that recognise what users say about
//! themselves (English and Chinese), a lexicon of technologies that gives a fact its
//! key, and change statements ("migrated to …", "已经换成 …"). Every fact keeps the
//! user's own sentence as its content: it may find less than an LLM, never invent.

use std::sync::LazyLock;

use regex::Regex;

pub use crate::technologies::technologies;
use crate::text::{is_small_talk, word_count};
pub use category::Category;
use slot::slot;

mod category;
mod slot;

/// One fact found in one sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub category: Category,
    /// Single-valued facts have a key (`name`, `database`, …); a new value replaces the old.
    pub key: Option<String>,
    /// The normalised value, compared to tell a restatement from a change.
    pub value: Option<String>,
    pub content: String,
    pub importance: f32,
    /// For change statements: the value the user moved away from, if named.
    pub replaces: Option<String>,
    /// Whether the sentence states a change (explicit change words).
    pub is_change: bool,
    /// The user's words it comes from, when it is not `content` itself.
    pub source_quote: Option<String>,
}

struct Rule {
    category: Category,
    key: Option<&'static str>,
    importance: f32,
    pattern: Regex,
}

fn rule(category: Category, key: Option<&'static str>, importance: f32, pattern: &str) -> Rule {
    Rule { category, key, importance, pattern: Regex::new(pattern).expect("a valid pattern") }
}

/// Statements about the user; the first capture group is the value.
static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule(
            Category::Identity,
            Some("employer"),
            0.8,
            r"\b(?i:i (?:work|am working) (?:at|for))\s+(\p{Lu}[\p{L}&.-]+(?:\s+\p{Lu}[\p{L}&.-]+){0,3})",
        ),
        rule(Category::Identity, Some("employer"), 0.8, r"我在(\p{Han}{2,12}?)(?:工作|上班|任职)"),
        // Starting somewhere: "I've officially started at Initech", "just joined Acme",
        // "accepted a position at Hooli", "入职了字节", "现在在字节上班了".
        rule(
            Category::Identity,
            Some("employer"),
            0.8,
            r"\b(?i:started (?:a new job |a new role |working |my new job )?(?:at|with)|joined|accepted (?:a |an |the )?(?:\w+ )?(?:position|job|offer|role)(?: \w+)? (?:at|with)|(?:got|took) (?:a |an )?(?:new )?(?:job|position|role) (?:at|with))\s+(\p{Lu}[\p{L}&.-]+(?:\s+\p{Lu}[\p{L}&.-]+){0,3})",
        ),
        rule(
            Category::Identity,
            Some("employer"),
            0.8,
            r"(?:入职了?|加入了?|跳槽到了?)(\p{Han}{2,10}?)(?:了|，|。|$|公司)",
        ),
        rule(Category::Identity, Some("employer"), 0.8, r"(?:现在|目前|已经)在(\p{Han}{2,8}?)(?:上班|工作|任职)"),
        rule(
            Category::Personal,
            Some("location"),
            0.7,
            r"(?i)\bi (?:live|am based|'m based|am located) in\s+(\p{Lu}[\p{L} .-]{1,40}?)(?:[,.!;]|$| with| and| since)",
        ),
        rule(Category::Personal, Some("location"), 0.7, r"我(?:住在|在)(\p{Han}{2,10}?)(?:工作|生活|住|，|。|$)"),
        // Settling somewhere: "I'm all settled in Denver now", "living in Leeds these days".
        rule(
            Category::Personal,
            Some("location"),
            0.7,
            r"(?i)\b(?:settled in|living in|relocated to|moved (?:over )?to)\s+(\p{Lu}[\p{L} .-]{1,40}?)(?:[,.!;]|$| with| and| since| now| for)",
        ),
        rule(
            Category::Personal,
            Some("location"),
            0.7,
            r"(?:定居在?|落户在?|安顿在|搬到了?|住到了?)(\p{Han}{2,8}?)(?:了|，|。|$)",
        ),
        rule(
            Category::Identity,
            Some("role"),
            0.7,
            r"(?i)\bi(?:'m| am) (?:a|an|the) ((?:senior |junior |lead |staff |principal )?[\p{L} ]{0,20}?(?:engineer|developer|designer|manager|scientist|researcher|teacher|student|founder|analyst|architect|consultant|cto|ceo|nurse|doctor|lawyer|accountant|chef|writer|pharmacist|dentist|physician|therapist))\b",
        ),
        rule(Category::Identity, Some("role"), 0.7, r"(?i)\bi work as (?:a|an) ([\p{L} ]{3,40})"),
        // "…, a nurse at a clinic in Leeds": a role named right after the speaker's name.
        rule(
            Category::Identity,
            Some("role"),
            0.7,
            r"^(?:hi,? |hello,? )?(?i:i'm|i am)\s+\p{Lu}\p{Ll}+(?:\s+\p{Lu}\p{Ll}+)?,\s+(?:a|an)\s+([\p{L} ]{3,30}?)(?:\s+(?:at|in|for|from)\b|[,.!]|$)",
        ),
        rule(
            Category::Personal,
            Some("location"),
            0.7,
            r"^(?:hi,? |hello,? )?(?i:i'm|i am)\s+\p{Lu}\p{Ll}+(?:\s+\p{Lu}\p{Ll}+)?,[^.]*?\bin\s+(\p{Lu}[\p{L}-]+(?:\s+\p{Lu}[\p{L}-]+)?)",
        ),
        rule(
            Category::Identity,
            Some("role"),
            0.7,
            r"我是(?:一名|一个|一位)?(\p{Han}{0,6}(?:工程师|程序员|经理|设计师|学生|老师|研究员|架构师|创始人))",
        ),
        rule(
            Category::Project,
            Some("team_size"),
            0.6,
            r"(?i)\b(?:our|my) team (?:has|is|of) (\d+)\b|\bwe are a team of (\d+)\b|\bteam of (\d+) (?:people|engineers|developers)",
        ),
        rule(Category::Project, Some("team_size"), 0.6, r"(?:我们|团队)(?:团队)?(?:有|共)(\d+)(?:个人|人|名)"),
        rule(
            Category::Project,
            Some("project"),
            0.7,
            r"(?i)\b(?:i'm|i am|we're|we are) (?:building|working on|developing|making) (.{3,80})",
        ),
        rule(Category::Project, Some("project"), 0.7, r"(?:我|我们)(?:正在)?(?:开发|做|构建)(?:一个)?(.{2,40})"),
        rule(
            Category::Preference,
            None,
            0.6,
            r"(?i)\bi (?:really |much |strongly )?(?:prefer|like|love|enjoy|hate|dislike|can't stand) (.{2,80})",
        ),
        rule(Category::Preference, None, 0.6, r"我(?:很|比较|更|最)?(?:喜欢|偏好|讨厌|不喜欢)(.{1,40})"),
    ]
});

/// "We use X", "our database is X" and friends: the technologies named become keyed facts.
static USES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:we|i|our team|my team|the team)(?:'re| are| am|'m)? (?:use|uses|using|run|runs|running|deploy|deploys|deploying|build with|write|code) (?:on |in |with )?|\b(?:our|my) (?:main |primary )?(?:database|db|stack|backend|frontend|framework|language|cloud|hosting|ci|bundler|store|storage)s? (?:is|are|runs on|lives in) |(?:我们|我|团队)(?:在)?(?:用|使用|采用|部署在|跑在)|(?:我们|我)的(?:数据库|后端|前端|框架|语言)(?:是|用)")
        .expect("a valid pattern")
});

/// Explicit change: from A to B, or to B.
static CHANGE_FROM_TO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:moved|switched|migrated|changed|went|transitioned)\s+(?:\w+\s+)?from\s+(.+?)\s+(?:to|over to)\s+(.+)|从\s*(.+?)\s*(?:换成|迁移到|切换到|改成|改用|换到|转到)(?:了)?\s*(.+)")
        .expect("a valid pattern")
});

static CHANGE_TO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:moved|switched|migrated|changed|upgraded|now use|now using|replaced \w+ with)\s+(?:over\s+)?(?:to\s+)?(.+)|(?:已经|现在)?(?:换成|迁移到|切换到|改成|改用|换到|转到|现在用)(?:了)?\s*(.+)")
        .expect("a valid pattern")
});

/// The user moving home: "I moved to Berlin", "我搬到了北京".
static MOVED_TO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:\b(?i:i|we)(?:'ve| have)? (?i:moved|relocated) (?i:to)\s+(\p{Lu}[\p{L}-]+(?:\s+\p{Lu}[\p{L}-]+)?)|我(?:们)?(?:已经)?搬(?:到|去)了?(\p{Han}{2,8}?)(?:了|，|。|$))")
        .expect("a valid pattern")
});

/// A state change said without a change verb or a "from … to": a present or a new
/// beginning ("now", "these days", "just started", "officially", "new", "已经…了", "刚").
static CHANGE_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:now|nowadays|these days|currently|at the moment|anymore|no longer|just|recently|finally|officially|newly|new|started|starting|joined|settled|switched|got engaged|got married|since (?:last|this) \w+)\b|现在|如今|目前|已经|刚刚?|最近|新|开始|换了|不再|入职|加入|跳槽|搬到|搬去|定居")
        .expect("a valid pattern")
});

/// A change said without a change verb: "… now", "these days", "现在", "改为".
static NOW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:now|nowadays|these days|from now on|currently|at the moment)\b|现在|如今|目前|改为|改成")
        .expect("a valid pattern")
});

/// A sentence stating what something is or runs on ("the backend framework is …",
/// "… is written in …", "… is what we use"), as opposed to naming it in passing.
static STATES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:is|are|runs on|run on|is built (?:with|on)|built (?:with|on)|written in|powered by|based on|is what we use|we rely on)\b|用的是|采用的是|基于")
        .expect("a valid pattern")
});

/// Hedged or speculative: a plan or a guess, not a fact about the user.
static HEDGED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:might|maybe|perhaps|possibly|someday|some day|one day|sometime|probably|i guess|not sure|thinking (?:about|of)|considering)\b|可能|也许|或许|说不定|打算以后|考虑")
        .expect("a valid pattern")
});

/// Things a project, a service or an app uses, said of it by name: "Project A uses
/// PostgreSQL", "the API runs on Fly.io". The subject scopes the key.
static NO_LONGER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:no longer use|stopped using|don't use .+ anymore|dropped|got rid of)\s+(.+)|(?:不再用|不用了|停用了?)\s*(.+)").expect("a valid pattern")
});

fn first_group(caps: &regex::Captures) -> Option<String> {
    caps.iter()
        .skip(1)
        .flatten()
        .next()
        .map(|m| m.as_str().trim().trim_end_matches(['.', '。', '!', '！', ',', '，']).to_owned())
}

/// The facts in one user sentence; empty for small talk and sentences with nothing
/// to remember. `statements` keeps informative sentences no pattern recognised. A
/// hedged sentence ("maybe", "可能") is kept as the least important of statements: a
/// plan or a guess neither names a value nor changes one.
pub fn extract(sentence: &str, statements: bool) -> Vec<Found> {
    let mut found = recognise(sentence, statements);
    if HEDGED.is_match(sentence) {
        for fact in &mut found {
            fact.importance = fact.importance.min(0.2);
            fact.is_change = false;
            fact.replaces = None;
            if fact.key.as_deref() != Some("name") {
                (fact.key, fact.value, fact.category) = (None, None, Category::Statement);
            }
        }
    }
    found
}

fn recognise(sentence: &str, statements: bool) -> Vec<Found> {
    let sentence = sentence.trim();
    if is_small_talk(sentence) {
        return Vec::new();
    }
    let content = sentence.to_owned();
    let mut found = Vec::new();
    let fact = |category, key: Option<String>, value: Option<String>, importance, replaces, is_change| Found {
        category,
        key,
        value,
        content: content.clone(),
        importance,
        replaces,
        is_change,
        source_quote: None,
    };

    // Change statements first: they name the new value and, often, the old one.
    if let Some(caps) = CHANGE_FROM_TO.captures(sentence) {
        let groups: Vec<&str> = caps.iter().skip(1).flatten().map(|m| m.as_str()).collect();
        if let [from, to] = groups[..] {
            for (key, name) in technologies(to) {
                let old = technologies(from).into_iter().find(|(k, _)| *k == key).map(|(_, n)| n);
                found.push(fact(
                    Category::Technical,
                    Some(key.to_owned()),
                    Some(name),
                    0.8,
                    old.or_else(|| Some(from.trim().to_lowercase())),
                    true,
                ));
            }
            if found.is_empty() {
                found.push(fact(Category::Decision, None, None, 0.7, Some(from.trim().to_lowercase()), true));
            }
            return found;
        }
    }
    if let Some(caps) = CHANGE_TO.captures(sentence) {
        let to = first_group(&caps).unwrap_or_default();
        for (key, name) in technologies(&to) {
            found.push(fact(Category::Technical, Some(key.to_owned()), Some(name), 0.8, None, true));
        }
        if !found.is_empty() {
            return found;
        }
    }
    if let Some(caps) = MOVED_TO.captures(sentence) {
        let place = first_group(&caps).map(|p| p.to_lowercase());
        return vec![fact(Category::Personal, Some("location".into()), place, 0.7, None, true)];
    }
    // What a named project or component uses, however the sentence says it (the graph's
    // reading): "Project A uses PostgreSQL", "The analytics service stores everything in
    // ClickHouse" give `database of project a`, `database of analytics service`.
    let used_by = crate::relations::extract::uses(sentence);
    for (subject, technology) in &used_by {
        for (key, name) in technologies(technology) {
            found.push(fact(
                Category::Project,
                Some(format!("{key} of {subject}")),
                Some(name),
                0.7,
                None,
                NOW.is_match(sentence),
            ));
        }
    }
    if !found.is_empty() {
        return found;
    }
    if let Some(caps) = NO_LONGER.captures(sentence) {
        let dropped = first_group(&caps).unwrap_or_default();
        let old = technologies(&dropped).into_iter().next().map(|(_, n)| n).unwrap_or_else(|| dropped.to_lowercase());
        return vec![fact(Category::Decision, None, None, 0.6, Some(old), true)];
    }

    let changed = CHANGE_MARKER.is_match(sentence);
    // The user's name, read as the graph reads an introduction ("Name's Marcus", "我是林晓").
    if let Some(name) = crate::relations::introductions::user_name(sentence) {
        found.push(fact(Category::Identity, Some("name".into()), Some(name.to_lowercase()), 0.9, None, changed));
    }
    for rule in RULES.iter() {
        if let Some(caps) = rule.pattern.captures(sentence) {
            let value = first_group(&caps).map(|v| v.to_lowercase());
            found.push(fact(rule.category, rule.key.map(str::to_owned), value, rule.importance, None, changed));
        }
    }
    if found.is_empty()
        && let Some((slot, value, new)) = slot(sentence)
    {
        found.push(fact(Category::Personal, Some(slot), Some(value), 0.6, None, changed || new));
    }
    let now = NOW.is_match(sentence);
    let used = USES.find(sentence).map_or_else(Vec::new, |at| technologies(&sentence[at.start()..]));
    let stated = used.is_empty() && (now || STATES.is_match(sentence) && !sentence.trim_end().ends_with(['?', '？']));
    for (key, name) in used {
        found.push(fact(Category::Technical, Some(key.to_owned()), Some(name), 0.7, None, now));
    }
    if stated {
        // "Every build runs on GitHub Actions now", "The backend framework is FastAPI":
        // a technology stated as what is in use.
        for (key, name) in technologies(sentence) {
            found.push(fact(Category::Technical, Some(key.to_owned()), Some(name), 0.7, None, now));
        }
    }
    // A component of the user's work and what it uses is about their work, whoever is named.
    if found.is_empty() && statements && (is_informative(sentence) || !used_by.is_empty()) {
        found.push(fact(Category::Statement, None, None, 0.4, None, false));
    }
    found
}

/// A statement worth keeping verbatim: long enough, and about the user or their work —
/// naming them, or telling what they did without naming anyone, as people do in chat:
/// "Traded Chicago winters for Austin summers", "Just started '1984' today", "上周正式入职了".
fn is_informative(sentence: &str) -> bool {
    static ABOUT_US: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(i|i'm|i've|i'd|my|we|we're|we've|our|us)\b|我|我们|咱们").expect("a valid pattern")
    });
    word_count(sentence) >= 5 && (ABOUT_US.is_match(sentence) || done_by_the_speaker(sentence))
}

/// A sentence without a subject that tells what was done: in English it opens with a
/// verb in the past ("Traded …", "Finally got …"), in Chinese it marks a completed
/// change (了) and names no one else (他, 她, 你 …).
fn done_by_the_speaker(sentence: &str) -> bool {
    static EN_PAST_FIRST: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)^(?:(?:just|finally|recently|officially|already|also|then|so|and)\s+)*(?:[a-z]{3,}ed|got|went|made|took|bought|sold|began|found|left|quit|met|gave|won|lost|sent|spent|built|wrote|ran|swapped|became|brought|caught|drove|flew|grew|heard|kept|paid|put|read|saw|sat|sang|told|thought|understood|woke|wore)\b",
        )
        .expect("a valid pattern")
    });
    static ZH_SOMEONE_ELSE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"他|她|它|你|您|大家|别人").expect("a valid pattern"));
    let trimmed = sentence.trim_start_matches(|c: char| !c.is_alphanumeric());
    if trimmed.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return EN_PAST_FIRST.is_match(trimmed);
    }
    trimmed.contains('了') && !ZH_SOMEONE_ELSE.is_match(trimmed)
}

#[cfg(test)]
mod tests;
