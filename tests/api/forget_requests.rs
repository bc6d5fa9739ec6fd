//! "Forget that" said in conversation, in English and Chinese and in many people's
//! words (`data/forget_requests.json`, written apart from the rules that recognise
//! them): right after ingest and again after every job, nothing of what the user asked
//! to forget is in any table or served by any route, and what they did not ask to
//! forget is still found.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app};
use crate::pipeline::{ALL_JOBS, hits, run_jobs, urlencode};

const CONVERSATIONS: &str = include_str!("data/forget_requests.json");
/// A second set by another author, never used to shape the method.
const HELD_OUT: &str = include_str!("data/forget_requests_heldout.json");

/// What a user's read routes serve for `query`, as one text.
pub async fn served(app: &TestApp, key: &str, user: &str, query: &str) -> String {
    let mut text = String::new();
    for kinds in
        [json!(["fact", "insight"]), json!(["event"]), json!(["relation", "session_summary", "period_summary"])]
    {
        let found = app.search(key, &json!({"user_id": user, "query": query, "kinds": kinds, "limit": 50})).await;
        text.push_str(&found.to_string());
    }
    // `/context` asked about it, and without a question: every section it shows.
    let path = format!("/v1/users/{user}/context?query={}&max_tokens=4000", urlencode(query));
    text.push_str(&app.get_as(key, &path).await.text().await.unwrap());
    text.push_str(&app.get_as(key, &format!("/v1/users/{user}/context?max_tokens=4000")).await.text().await.unwrap());
    text.push_str(&app.get_as(key, &format!("/v1/users/{user}/export")).await.text().await.unwrap());
    text.push_str(&app.get_as(key, &format!("/v1/users/{user}/entities?limit=200")).await.text().await.unwrap());
    text
}

/// The problems of one conversation at this point: what is still there, what is lost.
async fn problems(app: &TestApp, key: &str, user: &str, conversation: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let request = conversation["turns"].as_array().unwrap().iter().rev().find(|t| t["role"] == "user").unwrap();
    for value in conversation["forgotten"].as_array().unwrap() {
        let value = value.as_str().unwrap();
        let left = hits(app, value).await;
        if !left.is_empty() {
            found.push(format!("`{value}` stored in {left:?}"));
        }
        let text =
            served(app, key, user, value).await + &served(app, key, user, request["content"].as_str().unwrap()).await;
        if text.to_lowercase().contains(&value.to_lowercase()) {
            found.push(format!("`{value}` served"));
        }
    }
    // What the user did not ask to forget is stored as said, and found by its words.
    for kept in conversation["kept"].as_array().unwrap() {
        let expect = kept["expect"].as_str().unwrap();
        let turn = conversation["turns"].as_array().unwrap().iter().find(|t| {
            t["role"] == "user" && t["content"].as_str().unwrap().to_lowercase().contains(&expect.to_lowercase())
        });
        let said = turn.unwrap()["content"].as_str().unwrap();
        let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE user_id = $1 AND content = $2")
            .bind(user)
            .bind(said)
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
        let results =
            app.search(key, &json!({"user_id": user, "query": expect, "kinds": ["fact", "event"], "limit": 10})).await;
        if stored != 1 || !results.to_string().to_lowercase().contains(&expect.to_lowercase()) {
            found.push(format!("lost `{expect}` (stored as said: {stored})"));
        }
    }
    found
}

#[tokio::test]
async fn what_a_user_asks_to_forget_is_gone_and_the_rest_stays() {
    let failures = replay(CONVERSATIONS).await;
    assert!(failures.is_empty(), "{} problems:\n{}", failures.len(), failures.join("\n"));
}

/// Measured on wording the method was not shaped by: at least four in five of these
/// conversations are honoured without a fault (the share reached when the verbs became
/// classes; a change must not lower it).
#[tokio::test]
async fn held_out_requests_are_mostly_honoured() {
    let conversations: Vec<Value> = serde_json::from_str(HELD_OUT).unwrap();
    let failures = replay(HELD_OUT).await;
    let faulty: std::collections::BTreeSet<&str> = failures.iter().filter_map(|f| f.split(' ').next()).collect();
    let honoured = conversations.len() - faulty.len();
    println!("held out: {honoured} of {} conversations honoured without a fault", conversations.len());
    assert!(5 * honoured >= 4 * conversations.len(), "{honoured} of {}:\n{}", conversations.len(), failures.join("\n"));
}

/// Replays each conversation as a user of its own, then checks it right after ingest
/// and after every job; returns the problems found.
async fn replay(file: &str) -> Vec<String> {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    let conversations: Vec<Value> = serde_json::from_str(file).unwrap();
    assert!(conversations.iter().filter(|c| c["lang"] == "en").count() >= 15);
    assert!(conversations.iter().filter(|c| c["lang"] == "zh").count() >= 10);
    for (n, conversation) in conversations.iter().enumerate() {
        let user = format!("u{n}");
        let events: Vec<Value> = conversation["turns"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, t)| {
                json!({"user_id": user, "session_id": "s1", "role": t["role"], "content": t["content"],
                                 "created_at": format!("2026-04-0{}T10:{:02}:00Z", 1 + n % 9, i)})
            })
            .collect();
        assert_eq!(app.post_events(&key, &json!({"events": events})).await.status(), 202);
    }
    // A moment later: the turns that stay have their vectors.
    crate::episodic::embedded(&app).await;
    let mut failures = Vec::new();
    for (n, conversation) in conversations.iter().enumerate() {
        for problem in problems(&app, &key, &format!("u{n}"), conversation).await {
            failures.push(format!("{} right after ingest: {problem}", conversation["id"]));
        }
    }
    run_jobs(&app, ALL_JOBS, "2026-05-01T00:00:00Z").await;
    for (n, conversation) in conversations.iter().enumerate() {
        for problem in problems(&app, &key, &format!("u{n}"), conversation).await {
            failures.push(format!("{} after every job: {problem}", conversation["id"]));
        }
    }
    failures
}

/// An assistant that answers "Done — I won't remember 1187 Birchwood Lane" repeats what
/// was just forgotten: whether its reply comes in the request's batch or in a request of
/// its own, the value is in no table and no section of `/context`, while the rest of the
/// reply and of the user's turn stays.
#[tokio::test]
async fn a_reply_that_repeats_what_was_forgotten_keeps_none_of_it() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    let turn = |user: &str, role: &str, content: &str, minute: u32| {
        json!({"user_id": user, "session_id": "s1", "role": role, "content": content,
               "created_at": format!("2026-04-02T10:{minute:02}:00Z")})
    };
    let cases = [
        (
            "apart",
            "We live at 1187 Birchwood Lane now. I coach the under-nine football team.",
            "Please forget my address.",
            "Done — I won't remember 1187 Birchwood Lane. For dinner, try Zuni Café at 7:30.",
            "1187 Birchwood",
            "football",
        ),
        (
            "together",
            "我家在文三路259号。我周末去学游泳。",
            "地址别记了。",
            "好的，文三路259号不会保存。",
            "文三路259号",
            "游泳",
        ),
    ];
    for (user, said, request, reply, _, _) in cases {
        assert_eq!(app.post_events(&key, &json!({"events": [turn(user, "user", said, 0)]})).await.status(), 202);
        let mut batch = vec![turn(user, "user", request, 1)];
        if user == "together" {
            batch.push(turn(user, "assistant", reply, 2));
        }
        assert_eq!(app.post_events(&key, &json!({"events": batch})).await.status(), 202);
        if user == "apart" {
            assert_eq!(
                app.post_events(&key, &json!({"events": [turn(user, "assistant", reply, 2)]})).await.status(),
                202
            );
        }
    }
    crate::episodic::embedded(&app).await;
    for now in [None, Some("2026-05-01T00:00:00Z")] {
        if let Some(now) = now {
            run_jobs(&app, ALL_JOBS, now).await;
        }
        for (user, _, request, _, value, kept) in cases {
            assert_eq!(hits(&app, value).await, vec![], "{user}: `{value}` stored (after jobs: {})", now.is_some());
            let text = served(&app, &key, user, value).await + &served(&app, &key, user, request).await;
            assert!(!text.contains(value), "{user}: `{value}` served: {text}");
            if user == "apart" {
                assert!(!hits(&app, "Zuni Café").await.is_empty(), "the rest of the reply stays");
            }
            let found = app.search(&key, &json!({"user_id": user, "query": kept, "kinds": ["fact", "event"]})).await;
            assert!(found.to_string().contains(kept), "{user}: `{kept}` lost: {found}");
        }
    }
}
