//! The learned ranker through the public API: its weights load (and a bad file leaves
//! the blend, with a warning naming it), `explain` shows every feature and what it adds,
//! questions that share no word with the sentence that answers them find it, and
//! questions nothing answers get no hit. The sets are in everyday wording, English and
//! Chinese, none of them used to fit the weights.

use serde_json::{Value, json};

use crate::helpers::{TestApp, first_readiness, spawn_app, spawn_app_with, stop, test_settings};
use crate::pipeline::{run_jobs, urlencode};

const GAP: &str = include_str!("data/vocabulary_gap.json");
const NO_ANSWER: &str = include_str!("data/abstention.json");
const NOW: &str = "2026-06-01T12:00:00Z";

/// An engram that ranks with the shipped weights (`search.ranker = "learned"`).
async fn learned() -> TestApp {
    let mut settings = test_settings();
    settings.search.ranker = engram_base::configuration::RankerChoice::Learned;
    spawn_app_with(settings).await
}

/// Of the questions nothing answers, how many get no hit at least.
const ABSTAINED_FLOOR: usize = 9;
const EVERY_KIND: [&str; 6] = ["fact", "insight", "event", "session_summary", "period_summary", "relation"];

/// Each case as a user of its own (`{prefix}{n}`), its turns a minute apart in one session,
/// with the consolidation jobs run after them.
async fn told(app: &TestApp, key: &str, prefix: &str, cases: &[Value]) {
    let mut events = Vec::new();
    for (n, case) in cases.iter().enumerate() {
        for (i, turn) in case["turns"].as_array().unwrap().iter().enumerate() {
            events.push(json!({
                "user_id": format!("{prefix}{n}"), "session_id": format!("{prefix}{n}"), "role": "user",
                "content": turn, "created_at": format!("2026-06-01T09:{i:02}:00Z"),
            }));
        }
    }
    assert_eq!(app.post_events(key, &json!({ "events": events })).await.status(), 202);
    run_jobs(app, &["embed_events", "extract_facts", "summarize_sessions", "dedup"], NOW).await;
}

#[tokio::test]
async fn explain_shows_every_feature_and_what_each_adds_to_a_learned_score() {
    let app = learned().await;
    let key = app.key("acme", "read,ingest").await;
    let cases = vec![json!({"turns": ["I moved to Porto last spring.", "My sister runs a bakery."]})];
    told(&app, &key, "x", &cases).await;
    let found = app
        .search(
            &key,
            &json!({"user_id": "x0", "query": "Which city did I move to?", "kinds": EVERY_KIND,
                              "explain": true, "min_score": 0.0}),
        )
        .await;
    let results = found["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{found}");
    for result in results {
        let explanation = &result["explanation"];
        assert_eq!(explanation["ranker"], "learned", "the shipped weights load: {explanation}");
        let features = explanation["features"].as_object().unwrap();
        for name in ["similarity", "keyword", "own_keyword", "own_turn", "fact", "recency", "names", "length"] {
            assert!(features.contains_key(name), "{name} in {explanation}");
        }
        let terms = explanation["contributions"].as_array().unwrap();
        assert!(terms.iter().any(|t| t["term"] == "similarity"), "{explanation}");
        let log_odds = explanation["bias"].as_f64().unwrap()
            + terms.iter().map(|t| t["contribution"].as_f64().unwrap()).sum::<f64>();
        let score = result["score"].as_f64().unwrap();
        assert!((1.0 / (1.0 + (-log_odds).exp()) - score).abs() < 1e-9, "the parts make the score: {explanation}");
        for term in terms {
            let (value, weight) = (term["value"].as_f64().unwrap(), term["weight"].as_f64().unwrap());
            assert!((value * weight - term["contribution"].as_f64().unwrap()).abs() < 1e-12, "{term}");
        }
    }
    let first = results[0]["content"].as_str().unwrap_or_default();
    assert!(first.contains("Porto"), "the statement that answers comes first: {found}");
}

#[tokio::test]
async fn a_ranker_file_that_cannot_be_read_leaves_the_blend_and_says_which_file() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let corrupt = dir.path().join("weights.json");
    std::fs::write(&corrupt, r#"{"format": "engram-ranker", "version": 1, "bias": 0.1, "weights": {"sim"#).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["serve", "--role", "api", "--bind", &format!("127.0.0.1:{port}")])
        .env("ENGRAM_DATABASE__URL", &app.database_url)
        .env("ENGRAM_SEARCH__RANKER", "learned")
        .env("ENGRAM_SEARCH__RANKER_FILE", &corrupt)
        .env("ENGRAM_LOG__FILTER", "warn")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert_eq!(first_readiness(port).await, 200);
    let key = app.key("acme", "read,ingest").await;
    let cases = vec![json!({"turns": ["I keep bees on the roof of our building."]})];
    told(&app, &key, "b", &cases).await;
    let found: Value = crate::helpers::http_client()
        .post(format!("http://127.0.0.1:{port}/v1/search"))
        .bearer_auth(&key)
        .json(&json!({"user_id": "b0", "query": "what do I keep on the roof", "kinds": ["event"], "explain": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (_, log) = stop(server);
    assert!(log.contains(&corrupt.display().to_string()) && log.contains("ranking by the blend"), "{log}");
    assert!(log.contains("is not a weights file"), "the warning says what is wrong: {log}");
    let first = &found["results"][0];
    assert_eq!(first["explanation"]["ranker"], "blend", "{found}");
    assert!(first["content"].as_str().unwrap().contains("bees"), "lookups still answer: {found}");
}

/// What questions found of the statements that answer them.
#[derive(Default)]
struct Answered {
    /// In the top 3 of what is stored, every kind.
    ranked: usize,
    /// Among the results of a lookup with the default `min_score` (printed: a statement in
    /// other words scores as low as an unrelated one, and that `min_score` is chosen to
    /// leave questions nothing answers without a hit).
    hit: usize,
    /// In a 256-token context.
    in_context: usize,
    misses: Vec<String>,
}

/// How `cases`' questions find the statement that answers them: as the turn or as what
/// was taken from it.
async fn answered(app: &TestApp, key: &str, prefix: &str, cases: &[Value]) -> Answered {
    let mut answered = Answered::default();
    for (n, case) in cases.iter().enumerate() {
        let (question, answer) = (case["question"].as_str().unwrap(), case["answer"].as_str().unwrap());
        let user = format!("{prefix}{n}");
        let holds = |r: &Value| {
            [&r["content"], &r["fact"]].iter().any(|text| text.as_str().is_some_and(|t| t.contains(answer)))
        };
        let all = json!({"user_id": user, "query": question, "kinds": EVERY_KIND, "limit": 3, "min_score": 0.0});
        let found = app.search(key, &all).await;
        if found["results"].as_array().unwrap().iter().any(holds) {
            answered.ranked += 1;
        } else {
            answered.misses.push(format!("{}: the top 3 for {question:?} lack {answer:?}: {found}", case["id"]));
        }
        let found = app.search(key, &json!({"user_id": user, "query": question, "kinds": EVERY_KIND})).await;
        if found["results"].as_array().unwrap().iter().any(holds) {
            answered.hit += 1;
        } else {
            answered.misses.push(format!("{}: no hit for {question:?}", case["id"]));
        }
        let path = format!("/v1/users/{user}/context?query={}&max_tokens=256", urlencode(question));
        let context: Value = app.get_as(key, &path).await.json().await.unwrap();
        if context["text"].as_str().unwrap_or_default().contains(answer) {
            answered.in_context += 1;
        } else {
            answered.misses.push(format!("{}: the context for {question:?} lacks {answer:?}", case["id"]));
        }
    }
    answered
}

#[tokio::test]
async fn a_question_finds_the_statement_that_answers_it_in_other_words() {
    let cases: Vec<Value> = serde_json::from_str(GAP).unwrap();
    let app = learned().await;
    let key = app.key("acme", "read,ingest").await;
    told(&app, &key, "v", &cases).await;
    let Answered { ranked, hit, in_context, misses } = answered(&app, &key, "v", &cases).await;
    let of = cases.len();
    println!("vocabulary gap: top 3 {ranked}/{of}, hit {hit}/{of}, context {in_context}/{of}\n{}", misses.join("\n"));
    for lang in ["en", "zh"] {
        assert!(cases.iter().filter(|c| c["lang"] == lang).count() >= 6, "at least six stories in {lang}");
    }
    assert!(ranked * 10 >= of * 9, "the statement that answers is in the top 3 for {ranked} of {of}");
    assert!(in_context * 10 >= of * 9, "the context shows {in_context} of {of}");
}

#[tokio::test]
async fn a_question_nothing_answers_gets_no_hit() {
    let cases: Vec<Value> = serde_json::from_str(NO_ANSWER).unwrap();
    assert!(cases.len() >= 8);
    let app = learned().await;
    let key = app.key("acme", "read,ingest").await;
    told(&app, &key, "n", &cases).await;
    let mut wrong = Vec::new();
    for (n, case) in cases.iter().enumerate() {
        let question = case["question"].as_str().unwrap();
        let found = app
            .search(
                &key,
                &json!({"user_id": format!("n{n}"), "query": question, "kinds": ["fact", "insight", "event"]}),
            )
            .await;
        if found["hit"] != false || !found["results"].as_array().unwrap().is_empty() {
            wrong.push(format!("{}: {question:?} found {found}", case["id"]));
        }
    }
    let abstained = cases.len() - wrong.len();
    println!("abstention: {abstained}/{}\n{}", cases.len(), wrong.join("\n"));
    assert!(abstained >= ABSTAINED_FLOOR, "{abstained} of {} questions with no answer got none", cases.len());
}
