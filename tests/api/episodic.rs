//! Episodic and working memory end to end: events in through the API, jobs run as the
//! `engram` binary, answers out through `/v1/search` and `/context` — raw turns found by
//! words at once and by meaning within seconds, time windows, explanations, and a
//! forgotten user's turns gone from every lookup.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::helpers::{TestApp, engram, error_of, spawn_app, spawn_app_with, test_settings};

fn at(days_ago: i64, minute: i64) -> String {
    (Utc::now() - chrono::Duration::days(days_ago) + chrono::Duration::minutes(minute)).to_rfc3339()
}

/// Posts `turns` (role, content) as one session `days_ago` days back; returns their ids.
pub(crate) async fn session(
    app: &TestApp,
    key: &str,
    user: &str,
    session: &str,
    days_ago: i64,
    turns: &[(&str, &str)],
) -> Vec<String> {
    let events: Vec<Value> = turns
        .iter()
        .enumerate()
        .map(|(i, (role, content))| {
            json!({"user_id": user, "session_id": session, "role": role, "content": content, "created_at": at(days_ago, i as i64)})
        })
        .collect();
    let response = app.post_events(key, &json!({"events": events})).await;
    assert_eq!(response.status(), 202);
    let body: Value = response.json().await.unwrap();
    body["ids"].as_array().unwrap().iter().map(|id| id.as_str().unwrap().to_owned()).collect()
}

/// Waits until every stored event has its vector (the API's background embedder).
pub(crate) async fn embedded(app: &TestApp) {
    let started = Instant::now();
    loop {
        let waiting: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE embedding IS NULL")
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
        if waiting == 0 {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{waiting} events still without a vector after 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn turns(app: &TestApp, key: &str, body: Value) -> Vec<Value> {
    let mut body = body;
    body["kinds"] = json!(["event"]);
    body["min_score"] = json!(0.0);
    app.search(key, &body).await["results"].as_array().unwrap().clone()
}

const CHATTER: &[(&str, &str)] = &[
    ("user", "Morning! The coffee machine is broken again."),
    ("assistant", "Sorry to hear that. Anything I can help with today?"),
    ("user", "Can you remind me what a good name for a cat is?"),
    ("assistant", "Miso, Pixel or Juniper are popular choices."),
];

#[tokio::test]
async fn a_rare_word_of_the_query_counts_for_more_than_one_said_in_every_turn() {
    rare_words(spawn_app().await).await;
}

#[tokio::test]
async fn a_rare_word_counts_for_more_through_the_indexes_too() {
    rare_words(spawn_indexed_app().await).await;
}

/// The scan of a user's turns weighs the query's terms itself; the index way has them
/// weighed by a statement of its own: the same weights either way.
async fn rare_words(app: TestApp) {
    let key = app.key("acme", "read,ingest").await;
    let calls: Vec<String> = (0..12).map(|i| format!("Caroline called me again, call number {i}.")).collect();
    let calls: Vec<(&str, &str)> = calls.iter().map(|c| ("user", c.as_str())).collect();
    let called = session(&app, &key, "mel", "calls", 2, &calls).await;
    let pottery = session(&app, &key, "mel", "crafts", 1, &[("user", "I signed up for a pottery class.")]).await;

    let found =
        turns(&app, &key, json!({"user_id": "mel", "query": "Caroline pottery", "explain": true, "limit": 20})).await;
    let keyword = |id: &str| {
        let result = found.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id} not found: {found:?}"));
        result["explanation"]["keyword"].as_f64().unwrap()
    };
    let (rare, common) = (keyword(&pottery[0]), keyword(&called[5]));
    // Said in 12 of the user's 13 turns, "Caroline" tells little; "pottery", said once, much.
    assert!(rare > 0.8 && common < 0.2, "pottery {rare}, Caroline {common}");
    assert!((rare + common - 1.0).abs() < 1e-9, "the weights sum to 1: {rare} + {common}");
}

#[tokio::test]
async fn an_old_decision_is_found_as_a_raw_turn_with_its_time_role_and_session() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let decision = [
        ("user", "After the outage we decided to move the billing service from Ruby to Kotlin."),
        ("assistant", "Noted: billing moves to Kotlin."),
    ];
    let ids = session(&app, &key, "ana", "planning-2026", 60, &decision).await;
    session(&app, &key, "ana", "today", 0, CHATTER).await;

    // By its words at once: no job has run, and no vector is needed.
    let found = turns(&app, &key, json!({"user_id": "ana", "query": "billing from Ruby to Kotlin"})).await;
    assert_eq!(found[0]["id"], ids[0].as_str(), "{found:?}");

    // By its meaning within seconds.
    embedded(&app).await;
    let found = turns(
        &app,
        &key,
        json!({"user_id": "ana", "query": "which programming language did we choose for payments?", "limit": 3}),
    )
    .await;
    let turn = found.iter().find(|r| r["id"] == ids[0].as_str()).unwrap_or_else(|| panic!("not found: {found:?}"));
    assert_eq!(turn["kind"], "event");
    assert_eq!(turn["role"], "user");
    assert_eq!(turn["session_id"], "planning-2026");
    assert_eq!(turn["source_event_ids"], json!([ids[0]]));
    let said: DateTime<Utc> = turn["created_at"].as_str().unwrap().parse().unwrap();
    assert!((Utc::now() - said).num_days() == 60, "{said}");

    // The default kinds stay facts and insights: raw turns are asked for.
    let default = app.search(&key, &json!({"user_id": "ana", "query": "billing Kotlin", "min_score": 0.0})).await;
    assert!(default["results"].as_array().unwrap().iter().all(|r| r["kind"] != "event"), "{default}");
}

#[tokio::test]
async fn time_windows_filter_and_time_phrases_weight_what_happened_then() {
    time_windows(spawn_app().await).await;
}

#[tokio::test]
async fn users_past_the_scan_limit_get_the_same_answers_through_the_indexes() {
    time_windows(spawn_indexed_app().await).await;
}

/// An engram whose users are all past the scan limit: every lookup takes the index way.
async fn spawn_indexed_app() -> TestApp {
    let mut settings = test_settings();
    settings.search.scan_limit = 1;
    spawn_app_with(settings).await
}

async fn time_windows(app: TestApp) {
    let key = app.key("acme", "read,ingest").await;
    // 21 days back is always in "three weeks ago" (Monday to Sunday), 7 in "last week".
    let old = session(&app, &key, "ben", "s-old", 21, &[("user", "I went hiking in the hills with my brother.")]).await;
    let week =
        session(&app, &key, "ben", "s-week", 7, &[("user", "I went cycling by the river with my brother.")]).await;
    let recent =
        session(&app, &key, "ben", "s-recent", 1, &[("user", "I went swimming in the lake with my brother.")]).await;
    embedded(&app).await;
    let query = "what did I do with my brother?";
    let ids = |found: Vec<Value>| {
        let mut ids: Vec<String> = found.iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
        ids.sort();
        ids
    };

    let five_days_ago = (Utc::now() - chrono::Duration::days(5)).to_rfc3339();
    let found = turns(&app, &key, json!({"user_id": "ben", "query": query, "since": five_days_ago})).await;
    assert_eq!(ids(found), vec![recent[0].clone()]);
    let found = turns(&app, &key, json!({"user_id": "ben", "query": query, "until": five_days_ago})).await;
    let mut before = vec![old[0].clone(), week[0].clone()];
    before.sort();
    assert_eq!(ids(found), before);

    // A phrase weights, it does not filter: all are found, the one in the window first.
    // On a Monday, yesterday was in last week too.
    let monday = chrono::Datelike::weekday(&Utc::now()) == chrono::Weekday::Mon;
    let last_week = if monday { vec![&week, &recent] } else { vec![&week] };
    for (phrase, inside) in [("yesterday", vec![&recent]), ("three weeks ago", vec![&old]), ("last week", last_week)] {
        let asked = format!("what did I do with my brother {phrase}?");
        let found = turns(&app, &key, json!({"user_id": "ben", "query": asked, "explain": true})).await;
        assert_eq!(found.len(), 3, "{phrase}: {found:?}");
        for (i, result) in found.iter().enumerate() {
            let is_inside = inside.iter().any(|s| result["id"] == s[0].as_str());
            assert_eq!(i < inside.len(), is_inside, "{phrase}: what happened then comes first: {found:?}");
            let time = result["explanation"]["time"].as_f64().unwrap();
            assert_eq!(time == 1.0, is_inside, "{phrase}: {found:?}");
        }
    }
    let phrase = turns(&app, &key, json!({"user_id": "ben", "query": "我上周和哥哥做了什么", "explain": true})).await;
    assert!(phrase.iter().all(|r| r["explanation"]["window"].is_array()), "上周 resolves to a window: {phrase:?}");

    let (later, earlier) = (Utc::now().to_rfc3339(), (Utc::now() - chrono::Duration::days(1)).to_rfc3339());
    let inverted = json!({"user_id": "ben", "query": query, "since": later, "until": earlier});
    let response = app.post_as(&key, "/v1/search", &inverted).await;
    assert_eq!(response.status(), 400);
    assert!(error_of(response).await["message"].as_str().unwrap().contains("until"));
    let response =
        app.post_as(&key, "/v1/search", &json!({"user_id": "ben", "query": query, "since": "last week"})).await;
    assert_eq!(response.status(), 400);
    assert!(error_of(response).await["message"].as_str().unwrap().contains("since"));
}

#[tokio::test]
async fn a_reply_is_found_by_the_words_of_the_question_it_answers() {
    replies(spawn_app().await).await;
}

#[tokio::test]
async fn a_reply_is_found_by_its_question_through_the_indexes_too() {
    replies(spawn_indexed_app().await).await;
}

/// "A sunrise over the lake" says nothing of painting or the art fair; the question it
/// answers does.
async fn replies(app: TestApp) {
    let key = app.key("acme", "read,ingest").await;
    let ids = session(
        &app,
        &key,
        "ida",
        "s-fair",
        12,
        &[
            ("assistant", "What did you end up painting for the art fair?"),
            ("user", "A sunrise over the lake, in watercolours."),
            ("assistant", "That sounds calm and bright."),
        ],
    )
    .await;
    session(&app, &key, "ida", "s-today", 0, CHATTER).await;
    embedded(&app).await;
    let found = turns(
        &app,
        &key,
        json!({"user_id": "ida", "query": "what did I paint for the art fair?", "limit": 2, "explain": true}),
    )
    .await;
    let reply = found.iter().find(|r| r["id"] == ids[1].as_str()).unwrap_or_else(|| panic!("no reply: {found:?}"));
    let keyword = reply["explanation"]["keyword"].as_f64().unwrap();
    assert!(keyword > 0.0 && keyword <= 0.5 + 1e-9, "the question's words count half for its reply: {reply}");
    let question = found.iter().find(|r| r["id"] == ids[0].as_str()).expect("the question");
    assert!(question["explanation"]["keyword"].as_f64().unwrap() > keyword, "{found:?}");
    // A turn's neighbours are in its session: the next session's first turn is not.
    let after = turns(&app, &key, json!({"user_id": "ida", "query": "watercolours", "explain": true})).await;
    let neighbours: Vec<&str> = after
        .iter()
        .filter(|r| r["explanation"]["keyword"].as_f64().unwrap() > 0.0)
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(neighbours.len(), 3, "the reply and the turns on either side: {after:?}");
    assert!(neighbours.iter().all(|id| ids.iter().any(|i| i == id)), "{after:?}");
}

#[tokio::test]
async fn explanations_add_up_and_a_fact_never_shares_a_slot_with_its_turn() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    session(
        &app,
        &key,
        "dee",
        "s1",
        3,
        &[
            ("user", "We use PostgreSQL for the orders database."),
            ("assistant", "Good choice for orders."),
            ("user", "I prefer dark mode in every editor."),
        ],
    )
    .await;
    embedded(&app).await;
    let out = engram(&app, &["job", "run", "extract_facts"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // A fact's tier is 0.8 + 0.2 × its decay.
    let facts = json!({"user_id": "dee", "query": "which database do we use for orders?", "kinds": ["fact"],
                       "min_score": 0.0, "explain": true});
    let facts = app.search(&key, &facts).await["results"].as_array().unwrap().clone();
    assert!(!facts.is_empty(), "extract_facts stored the facts");
    for r in &facts {
        let e = &r["explanation"];
        let decay = e["decay"].as_f64().unwrap();
        assert!((e["tier"].as_f64().unwrap() - (0.8 + 0.2 * decay)).abs() < 1e-9, "{e}");
    }
    let body = json!({"user_id": "dee", "query": "which database do we use for orders last week?", "kinds": ["fact", "event"],
                      "min_score": 0.0, "limit": 10, "explain": true});
    let results = app.search(&key, &body).await["results"].as_array().unwrap().clone();
    for r in results.iter().chain(&facts) {
        let e = &r["explanation"];
        let (similarity, keyword) = (e["similarity"].as_f64().unwrap(), e["keyword"].as_f64().unwrap());
        let relevance = e["relevance"].as_f64().unwrap();
        assert!((relevance - (1.0 - (1.0 - similarity.max(0.0)) * (1.0 - keyword))).abs() < 1e-9, "{e}");
        let score = relevance * e["tier"].as_f64().unwrap() * e["time"].as_f64().unwrap();
        assert!((score - r["score"].as_f64().unwrap()).abs() < 1e-9, "{r}");
    }
    // Each turn takes one slot: as the fact it became, or as itself.
    let mut turns_seen: Vec<Value> =
        results.iter().flat_map(|r| r["source_event_ids"].as_array().unwrap().clone()).collect();
    let all = turns_seen.len();
    turns_seen.sort_by_key(|v| v.to_string());
    turns_seen.dedup();
    assert_eq!(turns_seen.len(), all, "a fact and its turn in one lookup: {results:?}");
    assert_eq!(all, 3, "all three turns, once each: {results:?}");
    let plain = app.search(&key, &json!({"user_id": "dee", "query": "orders database", "kinds": ["event"]})).await;
    assert!(plain["results"][0].get("explanation").is_none(), "explanations only when asked");
}

#[tokio::test]
async fn a_forgotten_users_turns_leave_every_lookup() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    session(&app, &key, "eve", "s1", 2, &[("user", "My locker code at the gym is behind the blue door.")]).await;
    session(&app, &key, "fay", "s1", 2, &[("user", "My locker at the gym is next to the sauna.")]).await;
    embedded(&app).await;
    assert_eq!(turns(&app, &key, json!({"user_id": "eve", "query": "gym locker"})).await.len(), 1);

    let response =
        app.client.delete(format!("{}/admin/v1/users/eve", app.address)).bearer_auth(&key).send().await.unwrap();
    assert_eq!(response.status(), 200);
    for query in ["gym locker", "where do I keep my things when I exercise?"] {
        assert!(turns(&app, &key, json!({"user_id": "eve", "query": query})).await.is_empty(), "{query}");
    }
    let context: Value =
        app.get_as(&key, "/v1/users/eve/context?query=gym%20locker&session_id=s1").await.json().await.unwrap();
    assert_eq!(context["items"], json!([]), "{context}");
    assert_eq!(
        turns(&app, &key, json!({"user_id": "fay", "query": "gym locker"})).await.len(),
        1,
        "others keep theirs"
    );
}

#[tokio::test]
async fn the_embed_events_job_takes_the_backlog() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    // `engram ingest` stores without the API's background embedder.
    let file = std::env::temp_dir().join(format!("events-{}.jsonl", uuid::Uuid::new_v4()));
    let lines: Vec<String> = (0..300)
        .map(|i| json!({"user_id": "gus", "role": "user", "content": format!("Note {i}: the greenhouse needs watering."), "created_at": at(2, i)}).to_string())
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = engram(&app, &["ingest", "--tenant", "acme", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let waiting = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM events WHERE embedding IS NULL")
            .fetch_one(&app.db.pool)
            .await
            .unwrap()
    };
    assert_eq!(waiting().await, 300);
    let out = engram(&app, &["job", "run", "embed_events"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(waiting().await, 0);
    let found = turns(&app, &key, json!({"user_id": "gus", "query": "plants need water", "limit": 3})).await;
    assert_eq!(found.len(), 3);
    assert!(found[0]["similarity"].as_f64().unwrap() > 0.3, "{found:?}");
}
