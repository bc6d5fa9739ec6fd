//! Working memory and dated episodes in `/context`, end to end: events in through the
//! API, the block out — the current session's latest turns, the past turn that answers,
//! each line dated and what a relative phrase in it meant written out.

use chrono::Utc;
use serde_json::{Value, json};

use crate::episodic::{embedded, session};
use crate::helpers::spawn_app;

#[tokio::test]
async fn context_holds_the_current_conversation_and_the_dated_turn_that_answers() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let answer = session(
        &app,
        &key,
        "cy",
        "s-spring",
        40,
        &[
            ("user", "My sister Ines is getting married in Porto, at the old cathedral."),
            ("assistant", "How lovely! Porto is beautiful in summer."),
        ],
    )
    .await;
    let chatter: Vec<(&str, String)> = (0..30)
        .map(|i| {
            (if i % 2 == 0 { "user" } else { "assistant" }, format!("Step {i} of the packing list: item number {i}."))
        })
        .collect();
    let chatter: Vec<(&str, &str)> = chatter.iter().map(|(r, c)| (*r, c.as_str())).collect();
    let current = session(&app, &key, "cy", "s-now", 0, &chatter).await;
    embedded(&app).await;

    let path =
        "/v1/users/cy/context?session_id=s-now&max_tokens=400&query=Where%20is%20my%20sister%20getting%20married%3F";
    let response = app.get_as(&key, path).await;
    assert_eq!(response.status(), 200);
    let context: Value = response.json().await.unwrap();
    assert!(context["tokens"].as_u64().unwrap() <= 400, "{context}");
    let items = context["items"].as_array().unwrap();
    let working: Vec<&str> =
        items.iter().filter(|i| i["section"] == "working").map(|i| i["id"].as_str().unwrap()).collect();
    assert!(working.len() >= 3 && working.len() < current.len(), "the latest turns, within the share: {working:?}");
    assert_eq!(working.last().copied(), current.last().map(String::as_str), "ends with the latest turn");
    let relevant = items.iter().find(|i| i["section"] == "relevant" && i["id"] == answer[0].as_str());
    assert!(relevant.is_some(), "the past turn that answers: {context}");
    let text = context["text"].as_str().unwrap();
    let said = (Utc::now() - chrono::Duration::days(40)).format("%a %-d %B %Y").to_string();
    assert!(text.contains(&format!("[{said}] user: My sister Ines is getting married in Porto")), "{text}");
    assert!(
        text.find("## Relevant memories").unwrap() < text.find("## Current conversation").unwrap(),
        "what answers the query comes first: {text}"
    );

    let response = app.get_as(&key, "/v1/users/cy/context?session_id=&max_tokens=100&nonsense=1").await;
    assert_eq!(response.status(), 400);
}

/// A relative day in a turn is written out in the context line, counted from the day it
/// was said, whether it looks back or ahead.
#[tokio::test]
async fn a_context_line_says_which_day_a_relative_phrase_in_it_meant() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    // Saturday 12 July 2025.
    let events = json!({"events": [
        {"user_id": "mo", "session_id": "s1", "role": "user", "created_at": "2025-07-12T10:00:00Z",
         "content": "Last Fri I finally took my kids to a pottery workshop."},
        {"user_id": "mo", "session_id": "s1", "role": "user", "created_at": "2025-07-12T10:01:00Z",
         "content": "And we're driving to the lake house next weekend."},
        {"user_id": "mo", "session_id": "s1", "role": "user", "created_at": "2025-07-12T10:02:00Z",
         "content": "I've kept bees for 3 years now. The hives swarmed on the 9th."},
    ]});
    assert_eq!(app.post_events(&key, &events).await.status(), 202);
    embedded(&app).await;

    let context = |query: &str| {
        let path = format!("/v1/users/mo/context?max_tokens=300&query={}", query.replace(' ', "%20"));
        let (app, key) = (&app, &key);
        async move { app.get_as(key, &path).await.json::<Value>().await.unwrap()["text"].as_str().unwrap().to_owned() }
    };
    let text = context("when did I take the kids to the pottery workshop").await;
    assert!(
        text.contains("[Sat 12 July 2025] user: Last Fri I finally took my kids to a pottery workshop. (Last Fri = the Friday before 12 July 2025, Fri 11 July 2025)"),
        "{text}"
    );
    let text = context("when are we going to the lake house").await;
    assert!(
        text.contains("(next weekend = the weekend after 12 July 2025, Sat 19 July 2025 and Sun 20 July 2025)"),
        "{text}"
    );
    // A span up to when it was said and a day of the month alone, each sentence's phrase.
    let text = context("when did the hives swarm").await;
    assert!(text.contains("swarmed on the 9th. (for 3 years = since 2022; on the 9th = Wed 9 July 2025)"), "{text}");
}

#[tokio::test]
async fn a_reply_that_answers_comes_after_the_turn_it_answers() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let said = session(
        &app,
        &key,
        "rq",
        "s-zoo",
        10,
        &[
            ("assistant", "Did you end up taking the kids to the aquarium in Lisbon?"),
            ("user", "Yes, on Saturday! The jellyfish were the best part."),
            ("assistant", "Lovely. Anything else planned?"),
            ("user", "Not really, a quiet week of work ahead."),
        ],
    )
    .await;
    embedded(&app).await;

    let path = format!(
        "/v1/users/rq/context?max_tokens=300&query={}",
        crate::pipeline::urlencode("When did she take the kids to the aquarium?")
    );
    let context: Value = app.get_as(&key, &path).await.json().await.unwrap();
    let relevant: Vec<&str> = context["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["section"] == "relevant")
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    let (question, reply) =
        (relevant.iter().position(|id| *id == said[0]), relevant.iter().position(|id| *id == said[1]));
    let text = context["text"].as_str().unwrap();
    assert!(question.is_some() && reply.is_some(), "the reply and the question it answers: {text}");
    assert_eq!(question.map(|q| q + 1), reply, "the question just before its reply: {text}");
}
