//! The user's own name answers "what is her name?", not every question that names her.
//! Each story is a user who introduces themselves and says one more thing, in English or
//! Chinese, in everyday wording; the jobs run; then two questions name the user: one the
//! story answers and one it does not. Through `POST /v1/search` (default kinds and
//! `min_score`) the first is answered by its fact, not by the introduction, and the
//! second finds nothing (`hit: false`). Through `/context` the answer comes before the
//! profile, and the unanswered question brings no relevant memory. `own_name.json`
//! shaped the method; `own_name_heldout.json`, in other words, did not.
//!
//! The same holds for the name the other side calls the user by, session after session
//! ("Thanks, Maya!"): a question naming them is answered by what it asks.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app};
use crate::pipeline::{ALL_JOBS, run_jobs, urlencode};

const STORIES: &str = include_str!("data/own_name.json");
const STORIES_HELD_OUT: &str = include_str!("data/own_name_heldout.json");

const NOW: &str = "2026-06-01T12:00:00Z";

/// Each story as a user of its own ("n0", "n1", …), its turns a minute apart in one session.
async fn told(app: &TestApp, key: &str, stories: &[Value]) {
    let mut events = Vec::new();
    for (n, story) in stories.iter().enumerate() {
        for (i, turn) in story["turns"].as_array().unwrap().iter().enumerate() {
            events.push(json!({
                "user_id": format!("n{n}"), "session_id": format!("n{n}"), "role": "user", "content": turn,
                "created_at": format!("2026-06-01T09:{i:02}:00Z"),
            }));
        }
    }
    assert_eq!(app.post_events(key, &json!({ "events": events })).await.status(), 202);
}

/// What went wrong with each story, if anything.
async fn misses(file: &str) -> Vec<String> {
    let stories: Vec<Value> = serde_json::from_str(file).unwrap();
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    told(&app, &key, &stories).await;
    run_jobs(&app, ALL_JOBS, NOW).await;
    let mut misses = Vec::new();
    for (n, story) in stories.iter().enumerate() {
        let user = format!("n{n}");
        let question = story["answered"]["question"].as_str().unwrap();
        let expect = story["answered"]["expect"].as_str().unwrap();
        let found = app.search(&key, &json!({"user_id": user, "query": question})).await;
        let texts = crate::helpers::contents_lowercased(&found);
        if found["hit"] != true || !texts.first().is_some_and(|t| t.contains(expect)) {
            misses.push(format!("{question:?} is answered by {texts:?}, not by what says {expect:?}"));
        }
        let path = format!("/v1/users/{user}/context?query={}&max_tokens=256", urlencode(question));
        let context = app.get_as(&key, &path).await.json::<Value>().await.unwrap();
        let text = context["text"].as_str().unwrap().to_lowercase();
        let (answer, profile) = (text.find(expect), text.find("## about the user"));
        if answer.is_none() || profile.is_some_and(|p| answer.is_some_and(|a| a > p)) {
            misses.push(format!("the context for {question:?} does not show {expect:?} before the profile:\n{text}"));
        }

        let question = story["unanswered"].as_str().unwrap();
        let found = app.search(&key, &json!({"user_id": user, "query": question})).await;
        if found["hit"] != false {
            misses.push(format!("{question:?}, which nothing answers, found {}", found["results"]));
        }
        let path = format!("/v1/users/{user}/context?query={}&max_tokens=256", urlencode(question));
        let context = app.get_as(&key, &path).await.json::<Value>().await.unwrap();
        let relevant: Vec<&Value> =
            context["items"].as_array().unwrap().iter().filter(|i| i["section"] == "relevant").collect();
        if !relevant.is_empty() {
            misses.push(format!("the context for {question:?} finds memories in:\n{}", context["text"]));
        }
    }
    misses
}

#[tokio::test]
async fn a_question_naming_the_user_is_answered_by_what_it_asks_not_by_the_name() {
    let misses = misses(STORIES).await;
    assert!(misses.is_empty(), "{misses:#?}");
}

#[tokio::test]
async fn held_out_stories_name_the_user_too() {
    let misses = misses(STORIES_HELD_OUT).await;
    assert!(misses.is_empty(), "{misses:#?}");
}

/// A user the assistant greets by name in each of five sessions, one of which holds what
/// the question asks.
#[tokio::test]
async fn a_name_every_session_greets_answers_nothing_by_itself() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let sessions = [
        ["Morning! Rough night, the baby kept waking up.", "Hi Maya! Sorry to hear that, hope you get some rest."],
        ["I finally cooked a Thai green curry from scratch for my parents.", "Wow, Maya, that sounds delicious!"],
        ["Work is slow this week, mostly emails.", "Hey Maya, slow weeks can be nice too."],
        ["We repainted the hallway a pale blue.", "Nice one, Maya! Blue is calming."],
        ["My sister visits on Saturday.", "Have fun with her, Maya!"],
    ];
    let mut events = Vec::new();
    for (s, turns) in sessions.iter().enumerate() {
        for (i, (role, content)) in ["user", "assistant"].iter().zip(turns).enumerate() {
            events.push(json!({"user_id": "maya", "session_id": format!("maya-{s}"), "role": role, "content": content,
                               "created_at": format!("2026-05-{:02}T10:0{i}:00Z", 10 + 2 * s)}));
        }
    }
    assert_eq!(app.post_events(&key, &json!({ "events": events })).await.status(), 202);
    run_jobs(&app, ALL_JOBS, NOW).await;
    let asked = |question: &str| json!({"user_id": "maya", "query": question, "kinds": ["fact", "insight", "event"]});
    let found = app.search(&key, &asked("What did Maya cook for her parents?")).await;
    let texts = crate::helpers::contents_lowercased(&found);
    assert!(texts.first().is_some_and(|t| t.contains("green curry")), "{texts:#?}");
    // Each of these drew a greeting ("Have fun with her, Maya!") while the name counted.
    for question in ["Which gym does Maya go to?", "Does Maya play an instrument?", "Who is Maya's dentist?"] {
        let found = app.search(&key, &asked(question)).await;
        assert_eq!(found["hit"], false, "{question}: {found}");
    }
}
