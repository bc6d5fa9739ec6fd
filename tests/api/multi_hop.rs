//! Answers that need two turns from different sessions. Each story is a user who says
//! one thing in one session and, a few days and some everyday chatter later, another
//! thing that only makes sense with the first ("My sister Ana moved to Valencia" …
//! "I'm flying out to visit my sister"); then a question needs both. Stories are in
//! English and Chinese, in their own words; the chatter is the same for every user.
//! Through `POST /v1/search` (facts, insights and turns, `limit` 10) and `/context`
//! (512 tokens), both turns are found for at least [`SEARCH_FLOOR`] and
//! [`CONTEXT_FLOOR`] of the 12 stories. What still misses is the hop through a word the
//! question does not say ("my sister" links the flight to Valencia).

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app};
use crate::pipeline::{ALL_JOBS, run_jobs, urlencode};

const STORIES: &str = include_str!("data/multi_hop.json");

const NOW: &str = "2026-06-20T12:00:00Z";

/// Stories whose two turns a search finds, and a context shows, at least.
const SEARCH_FLOOR: usize = 9;
const CONTEXT_FLOOR: usize = 11;

/// Each story as a user of its own ("m0", "m1", …): chatter, the story's first session,
/// chatter, its second session, chatter; a session every few days of June.
async fn told(app: &TestApp, key: &str, data: &Value) {
    let filler: Vec<&Value> = data["filler"].as_array().unwrap().iter().collect();
    let mut events = Vec::new();
    for (n, story) in data["stories"].as_array().unwrap().iter().enumerate() {
        let told = story["sessions"].as_array().unwrap();
        let sessions = [filler[0], &told[0], filler[1], &told[1], filler[2]];
        for (s, turns) in sessions.iter().enumerate() {
            for (i, turn) in turns.as_array().unwrap().iter().enumerate() {
                for (role, content) in [("user", turn.clone()), ("assistant", json!("Thanks for telling me."))] {
                    events.push(json!({
                        "user_id": format!("m{n}"), "session_id": format!("m{n}-s{s}"), "role": role,
                        "content": content,
                        "created_at": format!("2026-06-{:02}T09:{:02}:{:02}Z", 1 + 3 * s, i, if role == "user" { 0 } else { 30 }),
                    }));
                }
            }
        }
    }
    assert_eq!(app.post_events(key, &json!({ "events": events })).await.status(), 202);
}

#[tokio::test]
async fn a_question_finds_both_turns_it_needs_from_different_sessions() {
    let data: Value = serde_json::from_str(STORIES).unwrap();
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    told(&app, &key, &data).await;
    run_jobs(&app, ALL_JOBS, NOW).await;
    let stories = data["stories"].as_array().unwrap();
    let (mut searched, mut in_context, mut misses) = (0, 0, Vec::new());
    for (n, story) in stories.iter().enumerate() {
        let question = story["question"].as_str().unwrap();
        let evidence: Vec<&str> = story["evidence"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
        let found = app
            .search(
                &key,
                &json!({"user_id": format!("m{n}"), "query": question, "limit": 10, "kinds": ["fact", "insight", "event"]}),
            )
            .await;
        let texts = crate::helpers::contents_lowercased(&found);
        let missing: Vec<&&str> = evidence.iter().filter(|e| !texts.iter().any(|t| t.contains(**e))).collect();
        if missing.is_empty() {
            searched += 1;
        } else {
            misses.push(format!("search for {question:?} lacks {missing:?}: {texts:?}"));
        }
        let path = format!("/v1/users/m{n}/context?query={}&max_tokens=512", urlencode(question));
        let context = app.get_as(&key, &path).await.json::<Value>().await.unwrap();
        let text = context["text"].as_str().unwrap().to_lowercase();
        let missing: Vec<&&str> = evidence.iter().filter(|e| !text.contains(**e)).collect();
        if missing.is_empty() {
            in_context += 1;
        } else {
            misses.push(format!("the context for {question:?} lacks {missing:?}:\n{text}"));
        }
    }
    println!("multi-hop: search {searched}, context {in_context} of {}\n{}", stories.len(), misses.join("\n"));
    assert!(searched >= SEARCH_FLOOR && in_context >= CONTEXT_FLOOR, "{misses:#?}");
}
