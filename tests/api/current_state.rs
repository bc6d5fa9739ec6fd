//! The current state first: when a user's situation changes, said in everyday words in
//! English or Chinese (`data/change_stories.json`, written apart from the method), a
//! question about the present finds the newest statement before the old one, through
//! search (facts, and facts with raw turns) and `/context`; `as_of` before the change
//! still answers with the old.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app};
use crate::memory_control::{ALL_JOBS, run_jobs, urlencode};

const STORIES: &str = include_str!("data/change_stories.json");

fn day(n: i64) -> chrono::DateTime<chrono::Utc> {
    "2026-01-05T09:00:00Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap() + chrono::Duration::days(n)
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_lowercase()).collect()
}

/// Where the first new and the first old value appear in `texts`, in order.
fn positions(texts: &[String], new: &[String], old: &[String]) -> (Option<usize>, Option<usize>) {
    let first =
        |values: &[String]| texts.iter().position(|t| values.iter().any(|v| t.to_lowercase().contains(v.as_str())));
    (first(new), first(old))
}

fn newest_first(what: &str, texts: &[String], new: &[String], old: &[String]) -> Option<String> {
    match positions(texts, new, old) {
        (Some(n), Some(o)) if o < n => Some(format!("{what}: the old value ranks above the new: {texts:?}")),
        (None, _) => Some(format!("{what}: the new value is not found: {texts:?}")),
        _ => None,
    }
}

async fn contents(app: &TestApp, key: &str, body: Value) -> Vec<String> {
    let found = app.search(key, &body).await;
    found["results"].as_array().unwrap().iter().map(|r| r["content"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_question_about_the_present_finds_the_newest_statement_first() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let stories: Vec<Value> = serde_json::from_str(STORIES).unwrap();
    assert!(stories.len() >= 20 && stories.iter().any(|s| s["lang"] == "zh"));
    let mut last = 0;
    for (n, story) in stories.iter().enumerate() {
        let events: Vec<Value> = story["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let d = t["day"].as_i64().unwrap();
                last = last.max(d);
                json!({"user_id": format!("s{n}"), "role": "user", "content": t["content"], "created_at": day(d)})
            })
            .collect();
        assert_eq!(app.post_events(&key, &json!({"events": events})).await.status(), 202);
    }
    run_jobs(&app, ALL_JOBS, &(day(last + 1)).to_rfc3339());
    let mut failures = Vec::new();
    let mut checks = 0;
    for (n, story) in stories.iter().enumerate() {
        let user = format!("s{n}");
        let (new, old) = (strings(&story["new"]), strings(&story["old"]));
        for question in story["questions"].as_array().unwrap().iter().map(|q| q.as_str().unwrap()) {
            let facts = contents(&app, &key, json!({"user_id": user, "query": question, "limit": 5})).await;
            let all = contents(
                &app,
                &key,
                json!({"user_id": user, "query": question, "kinds": ["fact", "event"], "limit": 5}),
            )
            .await;
            let path = format!("/v1/users/{user}/context?query={}&max_tokens=400", urlencode(question));
            let context: Value = app.get_as(&key, &path).await.json().await.unwrap();
            let lines: Vec<String> = context["text"].as_str().unwrap().lines().map(str::to_owned).collect();
            for (what, texts) in [("search", &facts), ("search with turns", &all), ("context", &lines)] {
                checks += 1;
                if let Some(problem) = newest_first(what, texts, &new, &old) {
                    failures.push(format!("{} {question:?} {problem}", story["id"]));
                }
            }
        }
        // What was believed before the change.
        let before = day(story["change_day"].as_i64().unwrap() - 1).to_rfc3339();
        let question = story["questions"][0].as_str().unwrap();
        let then = contents(&app, &key, json!({"user_id": user, "query": question, "as_of": before, "limit": 5})).await;
        checks += 1;
        if positions(&then, &new, &old).1.is_none() {
            failures.push(format!("{} as_of {before}: the old value is not found: {then:?}", story["id"]));
        }
    }
    assert!(failures.is_empty(), "{} of {checks} checks failed:\n{}", failures.len(), failures.join("\n"));
}
