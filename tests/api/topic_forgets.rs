//! "Forget everything about my boyfriend", in English and Chinese and in many words
//! (`data/topic_forgets.json`): each story says something on a topic, goes on about it
//! in the next sentence ("It was devastating.", "他经常值夜班。") and says something
//! unrelated in the same turn. After the request, and again after every job, nothing of
//! the topic is in any table or served by search (every kind), `/context`, the graph or
//! export, and the unrelated fact is still found.

use serde_json::{Value, json};

use crate::forget_requests::served;
use crate::helpers::{TestApp, spawn_app};
use crate::pipeline::{ALL_JOBS, hits, run_jobs};

const STORIES: &str = include_str!("data/topic_forgets.json");

/// "Don't keep anything about my sister's situation", "关于我妈的事你都别记了": a topic
/// named by whom it concerns. Each story goes on about the person in a sentence with no
/// word pointing back ("Crying every night, barely eating.", "分开以后我很难过。").
const RELATIONS: &str = include_str!("data/relation_forgets.json");

async fn problems(app: &TestApp, key: &str, user: &str, story: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let request = story["turns"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap();
    for value in story["forgotten"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()) {
        let left = hits(app, value).await;
        if !left.is_empty() {
            found.push(format!("`{value}` stored in {left:?}"));
        }
        let text = served(app, key, user, value).await + &served(app, key, user, request).await;
        if text.to_lowercase().contains(&value.to_lowercase()) {
            found.push(format!("`{value}` served"));
        }
    }
    let (query, expect) = (story["kept"]["query"].as_str().unwrap(), story["kept"]["expect"].as_str().unwrap());
    let results =
        app.search(key, &json!({"user_id": user, "query": query, "kinds": ["fact", "event"], "min_score": 0})).await;
    if !results["results"].as_array().unwrap().iter().any(|r| r["content"].as_str().unwrap().contains(expect)) {
        found.push(format!("`{expect}` not found for `{query}`: {results}"));
    }
    found
}

#[tokio::test]
async fn a_request_to_forget_a_topic_takes_all_of_it_and_nothing_else() {
    let failures = forget_each(STORIES, 12, 8).await;
    assert!(failures.is_empty(), "{} problems:\n{}", failures.len(), failures.join("\n"));
}

/// What goes on about a person with no word pointing back is judged by meaning, which
/// the embedding model tells apart only so far: at least nine in ten of these stories are
/// honoured without a fault (30 of 31 when it was written; a change must not lower it).
#[tokio::test]
async fn a_request_to_forget_a_person_takes_what_was_said_about_them_and_nothing_else() {
    let stories: Vec<Value> = serde_json::from_str(RELATIONS).unwrap();
    let failures = forget_each(RELATIONS, 10, 6).await;
    let faulty: std::collections::BTreeSet<&str> = failures.iter().filter_map(|f| f.split(' ').next()).collect();
    let honoured = stories.len() - faulty.len();
    println!("relations: {honoured} of {} stories honoured without a fault", stories.len());
    assert!(10 * honoured >= 9 * stories.len(), "{honoured} of {}:\n{}", stories.len(), failures.join("\n"));
}

/// Tells each story of `stories` turn by turn and checks what is left after the request
/// and after every job (at least `en` English and `zh` Chinese stories); the problems.
async fn forget_each(stories: &str, en: usize, zh: usize) -> Vec<String> {
    let stories: Vec<Value> = serde_json::from_str(stories).unwrap();
    assert!(stories.iter().filter(|s| s["id"].as_str().unwrap().starts_with("en")).count() >= en);
    assert!(stories.iter().filter(|s| s["id"].as_str().unwrap().starts_with("zh")).count() >= zh);
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    for (n, story) in stories.iter().enumerate() {
        // Turn by turn, as an agent appends them: the request is honoured when it is stored.
        for (i, turn) in story["turns"].as_array().unwrap().iter().enumerate() {
            let event = json!({"user_id": format!("t{n}"), "session_id": "s1", "role": turn["role"],
                "content": turn["content"], "created_at": format!("2026-06-02T10:{:02}:00Z", i)});
            assert_eq!(app.post_events(&key, &event).await.status(), 202);
        }
    }
    crate::episodic::embedded(&app).await;
    let mut failures = Vec::new();
    for (n, story) in stories.iter().enumerate() {
        for problem in problems(&app, &key, &format!("t{n}"), story).await {
            failures.push(format!("{} right after the request: {problem}", story["id"]));
        }
    }
    run_jobs(&app, ALL_JOBS, "2026-06-20T00:00:00Z").await;
    for (n, story) in stories.iter().enumerate() {
        for problem in problems(&app, &key, &format!("t{n}"), story).await {
            failures.push(format!("{} after every job: {problem}", story["id"]));
        }
    }
    failures
}
