//! The current state first: when a user's situation changes, said in everyday words in
//! English or Chinese (`data/change_stories.json`, written apart from the method), a
//! question about the present finds the newest statement before the old one, through
//! search (facts, and facts with raw turns) and `/context`; `as_of` before the change
//! still answers with the old.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app};
use crate::pipeline::{ALL_JOBS, run_jobs, urlencode};

const STORIES: &str = include_str!("data/change_stories.json");
/// A second set by another author, never used to shape the method.
const HELD_OUT: &str = include_str!("data/change_stories_heldout.json");

/// The day every story's change is said on.
const CHANGE: i64 = 200;

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

/// The old value never ranks above the new; `found` says the new must be there.
fn newest_first(what: &str, texts: &[String], new: &[String], old: &[String], found: bool) -> Option<String> {
    match positions(texts, new, old) {
        (Some(n), Some(o)) if o < n => Some(format!("{what}: the old value ranks above the new: {texts:?}")),
        (None, Some(_)) => Some(format!("{what}: the old value without the new: {texts:?}")),
        (None, None) if found => Some(format!("{what}: the new value is not found: {texts:?}")),
        _ => None,
    }
}

async fn contents(app: &TestApp, key: &str, body: Value) -> Vec<String> {
    let found = app.search(key, &body).await;
    found["results"].as_array().unwrap().iter().map(|r| r["content"].as_str().unwrap().to_owned()).collect()
}

// Not every story is answered yet (search misses some present questions, and some new
// statements repeat the old value): the share of checks passing when the method was
// written is the floor a change must keep.
#[tokio::test]
async fn a_question_about_the_present_finds_the_newest_statement_first() {
    let (passed, checks, failures) = replay(STORIES).await;
    println!("current state: {passed} of {checks} checks pass");
    assert!(passed * 100 >= checks * 90, "{passed} of {checks} checks pass:\n{}", failures.join("\n"));
}

#[tokio::test]
async fn held_out_stories_keep_the_same_floor() {
    let (passed, checks, failures) = replay(HELD_OUT).await;
    println!("current state, held out: {passed} of {checks} checks pass");
    assert!(passed * 100 >= checks * 90, "{passed} of {checks} checks pass:\n{}", failures.join("\n"));
}

/// Replays each story as a user of its own and asks its questions; returns the checks
/// passed, made, and what failed.
async fn replay(file: &str) -> (usize, usize, Vec<String>) {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let stories: Vec<Value> = serde_json::from_str(file).unwrap();
    assert!(stories.len() >= 20 && stories.iter().any(|s| s["lang"] == "zh"));
    // Every story's change falls on the same day, so that one run of the jobs before it
    // and one after it see each story as the worker would have: what was said before
    // the change was known before it.
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for (n, story) in stories.iter().enumerate() {
        let change = story["change_day"].as_i64().unwrap();
        for t in story["turns"].as_array().unwrap() {
            let d = t["day"].as_i64().unwrap() - change;
            let event = json!({"user_id": format!("s{n}"), "role": "user", "content": t["content"], "created_at": day(CHANGE + d)});
            if d < 0 { before.push(event) } else { after.push(event) }
        }
    }
    assert_eq!(app.post_events(&key, &json!({"events": before})).await.status(), 202);
    run_jobs(&app, ALL_JOBS, &day(CHANGE - 1).to_rfc3339()).await;
    assert_eq!(app.post_events(&key, &json!({"events": after})).await.status(), 202);
    run_jobs(&app, ALL_JOBS, &day(CHANGE + 30).to_rfc3339()).await;
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
            // The block an agent reads holds the new value, before the old; a search may
            // miss both (its `min_score`), never rank the old first.
            for (what, texts, found) in
                [("search", &facts, false), ("search with turns", &all, false), ("context", &lines, true)]
            {
                checks += 1;
                if let Some(problem) = newest_first(what, texts, &new, &old, found) {
                    failures.push(format!("{} {question:?} {problem}", story["id"]));
                }
            }
        }
        // What was believed before the change.
        let before = (day(CHANGE) - chrono::Duration::hours(12)).to_rfc3339();
        let question = story["questions"][0].as_str().unwrap();
        let then = contents(
            &app,
            &key,
            json!({"user_id": user, "query": question, "as_of": before, "limit": 20, "min_score": 0}),
        )
        .await;
        checks += 1;
        match positions(&then, &new, &old) {
            (Some(_), _) => {
                failures.push(format!("{} as_of {before}: the new value, not yet said: {then:?}", story["id"]))
            }
            (None, None) => {
                failures.push(format!("{} as_of {before}: the old value is not found: {then:?}", story["id"]))
            }
            _ => {}
        }
    }
    (checks - failures.len(), checks, failures)
}
