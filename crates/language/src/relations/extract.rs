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

use super::clauses::{clauses, expanded, without_lead_in};
use super::mention::{Discourse, Mention, PRODUCT_WORDS, PROJECT_WORDS, is_chinese, looks_like, mention};
use super::names::Aliases;
use super::patterns::{COLLEAGUES, FAMILY, HAS, LIST, MANAGER, OBJECT_END, RULES};
use super::{EntityType, Extracted, Predicate, Triple};

/// The relations of one sentence, with what earlier sentences of the batch named.
pub fn extract(sentence: &str, aliases: &Aliases, discourse: &mut Discourse) -> Extracted {
    let mut out = Extracted::default();
    let sentence = sentence.trim().trim_end_matches(['.', '!', '?', '。', '！', '？', '~']);
    out.user_name = super::introductions::user_name(sentence);
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

/// What the projects and components a sentence names use, by its relations:
/// (subject's normal name, technology), the user's own uses left out.
pub fn uses(sentence: &str) -> Vec<(String, String)> {
    static ALIASES: LazyLock<Aliases> = LazyLock::new(Aliases::default);
    extract(sentence, &ALIASES, &mut Discourse::default())
        .triples
        .into_iter()
        .filter(|t| t.predicate == Predicate::Uses && t.object.kind == EntityType::Technology)
        .filter(|t| names_a_component(&t.subject.name) && !ours(sentence, &t.subject.name))
        .map(|t| (super::names::normalise(&t.subject.name), t.object.name))
        .collect()
}

/// Whether the sentence calls a one-word component the user's own ("our backend", "我们的后端"):
/// then it is the user's stack, not a project of its own.
fn ours(sentence: &str, name: &str) -> bool {
    let (sentence, name) = (sentence.to_lowercase(), name.to_lowercase());
    !name.contains(' ')
        && ["our ", "my ", "我们的", "我的", "我们"].iter().any(|own| sentence.contains(&format!("{own}{name}")))
}

/// Whether a name is a component's or project's: its last word says so ("analytics
/// service", "电商项目"), or its first with a name after it ("project A", "service X").
fn names_a_component(name: &str) -> bool {
    let words: Vec<&str> = name.split_whitespace().collect();
    // The kinds of technology are no components: "the backend database", "后台数据库".
    const KEY_NOUNS: &[&str] =
        &["database", "db", "framework", "language", "stack", "数据库", "框架", "语言", "技术栈"];
    let component = |w: &str| {
        let ends = |words: &[&str]| words.iter().any(|c| !c.is_ascii() && w.ends_with(c));
        looks_like(w, PROJECT_WORDS) && (w.is_ascii() || ends(PROJECT_WORDS))
            || looks_like(w, PRODUCT_WORDS) && (w.is_ascii() || ends(PRODUCT_WORDS))
    };
    match words[..] {
        [] => false,
        [.., last] if KEY_NOUNS.iter().any(|key| last.to_lowercase().ends_with(key)) => false,
        [.., last] if component(last) => true,
        [first, second] => {
            component(first) && second.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
        }
        _ => false,
    }
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
    // "my friend Olga moved …", "our new intern Jake runs …": the clause goes on with the name.
    static KIN_NAMED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?i:my|our)\s+(?:[a-z]+\s+)?[a-z]+,?\s+(?P<x>\p{Lu}\p{Ll}+(?:\s+\p{Lu}\p{Ll}+)?)\b,?")
            .expect("a valid pattern")
    });
    if let Some(c) = KIN_NAMED.captures(&clause) {
        let whole = c.get(0).expect("the whole match");
        clause = format!("{}{}", &c["x"], &clause[whole.end()..]);
    }
    (clause, named)
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
        // "Sounds like fun", "It looks like rain": "like" after a verb of perception compares.
        let perceived = |w: &str| {
            matches!(
                w,
                "sound"
                    | "sounds"
                    | "look"
                    | "looks"
                    | "feel"
                    | "feels"
                    | "seem"
                    | "seems"
                    | "smell"
                    | "smells"
                    | "taste"
                    | "tastes"
            )
        };
        if rule.predicate == Predicate::Prefers
            && subject_text.split_whitespace().last().is_some_and(|w| perceived(&w.to_lowercase()))
        {
            continue;
        }
        // "Trying out different flavors like chocolate", "Seeing people use their platform":
        // a subject that opens with a verb's -ing form is an activity, and "like" there means "such as".
        let activity = subject_text.split_whitespace().next().is_some_and(|w| w.len() > 4 && w.ends_with("ing"));
        if activity && matches!(rule.predicate, Predicate::Prefers | Predicate::Uses) && !subject.is_user {
            continue;
        }
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
    super::frame::relations(clause, aliases, discourse)
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
    if object.is_user {
        // "Saturday works for me" says nothing of the user's work.
        return matches!(predicate, Predicate::Colleague | Predicate::ReportsTo);
    }
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
    fn comparisons_and_activities_state_no_preference() {
        let found = said(&[
            "Sounds like a great plan, John!",
            "Biking sounds like a great way to get out in nature.",
            "Trying out different flavors like chocolate and coconut has been a blast!",
            "I'm a huge fan of Lord of the Rings!",
            "Saturday works for me!",
        ]);
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(said(&["I love hiking"]), [t("USER", "prefers", "hiking:concept")]);
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
