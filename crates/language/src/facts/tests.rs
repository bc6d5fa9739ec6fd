//! The rules of `facts`, sentence by sentence.

use super::*;

fn keys(sentence: &str) -> Vec<(String, Option<String>, Option<String>)> {
    extract(sentence, true).into_iter().map(|f| (f.category.as_str().to_owned(), f.key, f.value)).collect()
}

#[test]
fn self_introductions_become_keyed_facts() {
    assert_eq!(keys("Hi, my name is Ana Silva"), [("identity".into(), Some("name".into()), Some("ana silva".into()))]);
    assert_eq!(keys("我叫李明"), [("identity".into(), Some("name".into()), Some("李明".into()))]);
    assert_eq!(
        keys("We use MySQL for the backend"),
        [("technical".into(), Some("database".into()), Some("mysql".into()))]
    );
    assert_eq!(keys("我们用 MySQL 做后端"), [("technical".into(), Some("database".into()), Some("mysql".into()))]);
    assert!(keys("I live in Lisbon with my family").contains(&(
        "personal".into(),
        Some("location".into()),
        Some("lisbon".into())
    )));
    assert!(keys("Our team has 6 engineers").contains(&("project".into(), Some("team_size".into()), Some("6".into()))));
    let stack = keys("Our database is PostgreSQL and we run on AWS");
    assert!(stack.contains(&("technical".into(), Some("database".into()), Some("postgresql".into()))), "{stack:?}");
    assert!(stack.contains(&("technical".into(), Some("cloud".into()), Some("aws".into()))), "{stack:?}");
}

#[test]
fn change_statements_name_the_new_and_the_old_value() {
    let found = extract("We migrated from MySQL to PostgreSQL last week", true);
    assert_eq!(
        (found[0].key.as_deref(), found[0].value.as_deref(), found[0].replaces.as_deref()),
        (Some("database"), Some("postgresql"), Some("mysql"))
    );
    assert!(found[0].is_change);
    let found = extract("我们已经迁移到 PostgreSQL 了", true);
    assert_eq!((found[0].key.as_deref(), found[0].value.as_deref()), (Some("database"), Some("postgresql")));
    let found = extract("从 Webpack 换成 Vite 了", true);
    assert_eq!(
        (found[0].key.as_deref(), found[0].value.as_deref(), found[0].replaces.as_deref()),
        (Some("bundler"), Some("vite"), Some("webpack"))
    );
}

#[test]
fn small_talk_and_questions_yield_nothing_and_statements_stay_verbatim() {
    for s in ["thanks!", "ok", "好的", "What database should we use?"] {
        assert!(extract(s, true).is_empty(), "{s}");
    }
    let found = extract("Our launch is planned for the second week of March", true);
    assert_eq!(
        (found[0].category.as_str(), found[0].content.as_str()),
        ("statement", "Our launch is planned for the second week of March")
    );
    assert!(extract("The weather is nice", true).is_empty(), "not about the user");
}

#[test]
fn an_introduction_names_the_user_their_job_and_their_city() {
    let found = keys("I'm Daniel Okafor, a nurse at a clinic in Leeds.");
    for expected in [("name", "daniel okafor"), ("role", "nurse"), ("location", "leeds")] {
        assert!(
            found.iter().any(|(_, k, v)| k.as_deref() == Some(expected.0) && v.as_deref() == Some(expected.1)),
            "{expected:?} in {found:?}"
        );
    }
    assert!(extract("I'm Daniel Okafor, a nurse at a clinic in Leeds.", true).iter().all(|f| f.importance >= 0.7));
    assert!(
        keys("I work at Acme Corp as an analyst")
            .iter()
            .any(|(_, k, v)| k.as_deref() == Some("employer") && v.as_deref() == Some("acme corp"))
    );
}

#[test]
fn a_change_said_with_now_or_a_move_is_a_change() {
    let found = extract("Every build runs on GitHub Actions now.", true);
    assert_eq!((found[0].key.as_deref(), found[0].value.as_deref()), (Some("ci"), Some("github actions")));
    assert!(found[0].is_change);
    assert!(!extract("Our CI is Jenkins.", true)[0].is_change);
    let found = extract("I moved to Berlin in March for a new job.", true);
    assert_eq!((found[0].key.as_deref(), found[0].value.as_deref()), (Some("location"), Some("berlin")));
    assert!(found[0].is_change);
    let found = extract("我们现在用 PostgreSQL", true);
    assert!(found[0].is_change && found[0].value.as_deref() == Some("postgresql"), "{found:?}");
}

#[test]
fn phrasings_of_one_choice_all_name_it() {
    for sentence in [
        "The backend framework is FastAPI.",
        "Our backend is built with FastAPI.",
        "We use FastAPI for the backend.",
        "FastAPI is what we use for our APIs.",
        "All our services are written in FastAPI.",
    ] {
        let found = keys(sentence);
        assert!(
            found.contains(&("technical".into(), Some("framework".into()), Some("fastapi".into()))),
            "{sentence}: {found:?}"
        );
    }
    assert!(keys("Is FastAPI any good?").is_empty());
}

#[test]
fn projects_keep_their_own_keys() {
    let a = keys("Project A uses PostgreSQL.");
    let b = keys("Project B uses MySQL.");
    assert_eq!(a, [("project".into(), Some("database of project a".into()), Some("postgresql".into()))]);
    assert_eq!(b, [("project".into(), Some("database of project b".into()), Some("mysql".into()))]);
    assert_eq!(keys("The API runs on Fly.io")[0].1.as_deref().map(|k| k == "cloud of api"), Some(true));
}

#[test]
fn a_hedge_is_kept_as_the_least_important_statement() {
    let found = extract("I might take up pottery one day, maybe.", true);
    assert!(found.iter().all(|f| f.importance <= 0.2 && !f.is_change && f.key.is_none()), "{found:?}");
    let found = extract("我们可能会换成 MongoDB", true);
    assert!(found.iter().all(|f| !f.is_change && f.key.is_none()), "{found:?}");
}

#[test]
fn technology_names_match_whole_words_only() {
    assert_eq!(
        technologies("we love Django and Go"),
        [("framework", "django".to_owned()), ("language", "go".to_owned())]
    );
    assert!(technologies("a good goal").is_empty());
}

#[test]
fn everyday_changes_name_their_key_and_are_changes() {
    let change = |sentence: &str| {
        extract(sentence, true)
            .into_iter()
            .find(|f| f.key.is_some())
            .map(|f| (f.key.unwrap(), f.value.unwrap(), f.is_change))
    };
    assert_eq!(change("Big news: I just joined Hooli as a designer."), Some(("employer".into(), "hooli".into(), true)));
    assert_eq!(change("We've settled in Lisbon for good."), Some(("location".into(), "lisbon".into(), true)));
    assert_eq!(change("上个月入职了腾讯。"), Some(("employer".into(), "腾讯".into(), true)));
    assert_eq!(change("My new dentist is Dr Okafor."), Some(("dentist".into(), "dr okafor".into(), true)));
    assert_eq!(change("Mochi is our new kitten!"), Some(("kitten".into(), "mochi".into(), true)));
    assert_eq!(change("我的新房东叫刘强"), Some(("房东".into(), "刘强".into(), true)));
    assert_eq!(change("My manager is Ruth."), Some(("manager".into(), "ruth".into(), false)));
    assert_eq!(change("My favourite colour is green."), None);
    assert_eq!(change("My name is Ann Lee."), Some(("name".into(), "ann lee".into(), false)));
}

#[test]
fn what_the_speaker_did_without_naming_themselves_is_a_statement() {
    for said in [
        "Swapped my old road bike for a gravel bike over the weekend.",
        "Finally signed the lease on a flat near the river.",
        "Quit the choir after six years, it was time.",
        "上个月换到了一家做新能源的公司",
        "搬进新家了，离地铁站只有五分钟",
    ] {
        assert!(extract(said, true).iter().any(|f| f.category == Category::Statement), "{said}");
    }
    for said in ["Need to book the dentist again soon.", "他上个月换到了一家新公司", "Sounds like a plan to me then."]
    {
        assert!(extract(said, true).is_empty(), "{said}");
    }
}
