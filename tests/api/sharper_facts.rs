//! What the default configuration (no LLM, the built-in model) remembers from plain
//! sentences: events in through the API, the jobs, answers out through search.

use serde_json::{Value, json};

use crate::consolidation::{day, run_at, say};
use crate::helpers::{TestApp, spawn_app};
use crate::jobs::{executor, job_dir};
use engram_core::jobs::Executor;

const JOBS: &[(&str, &str)] = &[
    ("extract_facts", "schedule = \"0 0 * * * *\""),
    ("evict", "schedule = \"0 0 3 * * *\"\n[budget]\nmax_removed_fraction = 1.0"),
];

/// A fresh engram that heard `user` say `said` on day 1 and ran `extract_facts` after.
async fn extracted(user: &str, said: &[&str]) -> (TestApp, String, Executor) {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let executor = executor(&app.db, &job_dir(JOBS));
    say(&app, &key, user, "s1", day(1, 9), said).await;
    run_at(&executor, "extract_facts", day(1, 12), false).await;
    (app, key, executor)
}

async fn top(app: &TestApp, key: &str, user: &str, query: &str) -> Value {
    let found = app.search(key, &json!({"user_id": user, "query": query})).await;
    found["results"][0].clone()
}

#[tokio::test]
async fn facts_about_named_projects_are_kept_apart() {
    let (app, key, _) = extracted("eve", &["Project A uses PostgreSQL.", "Project B uses MySQL."]).await;

    let b = top(&app, &key, "eve", "which database does project B use").await;
    assert_eq!(b["content"], "Project B uses MySQL.", "{b}");
    let a = top(&app, &key, "eve", "which database does project A use").await;
    assert_eq!(a["content"], "Project A uses PostgreSQL.", "{a}");
}

#[tokio::test]
async fn a_migration_answers_the_question_about_the_key_and_now_states_a_change() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let executor = executor(&app.db, &job_dir(JOBS));
    say(&app, &key, "bo", "s1", day(1, 9), &["We use MySQL for everything.", "Our CI is Jenkins."]).await;
    run_at(&executor, "extract_facts", day(1, 12), false).await;
    say(&app, &key, "bo", "s2", day(5, 9), &["We migrated to PostgreSQL last week, MySQL is gone."]).await;
    say(&app, &key, "bo", "s3", day(6, 9), &["Every build runs on GitHub Actions now."]).await;
    run_at(&executor, "extract_facts", day(6, 12), false).await;

    let database = top(&app, &key, "bo", "which database do we use").await;
    assert!(database["content"].as_str().unwrap().contains("PostgreSQL"), "a hit above min_score: {database}");
    let ci = top(&app, &key, "bo", "Which CI do we use?").await;
    assert_eq!(ci["content"], "Every build runs on GitHub Actions now.", "{ci}");
    let jenkins: String = sqlx::query_scalar("SELECT status::text FROM memories WHERE content = 'Our CI is Jenkins.'")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(jenkins, "superseded");
}

#[tokio::test]
async fn an_introduction_is_the_users_name_job_and_city_and_outlives_a_maybe() {
    let said = ["I'm Daniel Okafor, a nurse at a clinic in Leeds.", "I might take up pottery one day, maybe."];
    let (app, key, executor) = extracted("dan", &said).await;

    let keyed: Vec<(String, f32)> = sqlx::query_as(
        "SELECT key || '=' || value, importance FROM memories WHERE user_id = 'dan' AND key IS NOT NULL ORDER BY key",
    )
    .fetch_all(&app.db.pool)
    .await
    .unwrap();
    let names: Vec<&str> = keyed.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["location=leeds", "name=daniel okafor", "role=nurse"], "{keyed:?}");
    let name = top(&app, &key, "dan", "What is the user's name?").await;
    assert!(name["content"].as_str().unwrap().contains("Daniel Okafor"), "{name}");

    // Six months on, the maybe is gone and who the user is stays.
    run_at(&executor, "evict", day(182, 4), false).await;
    let active: Vec<String> =
        sqlx::query_scalar("SELECT content FROM memories WHERE user_id = 'dan' AND status = 'active'")
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    assert!(active.iter().any(|c| c.contains("Daniel Okafor")), "{active:?}");
    assert!(!active.iter().any(|c| c.contains("pottery")), "{active:?}");
}

#[tokio::test]
async fn five_phrasings_of_one_choice_end_as_one_memory_with_five_sources() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let executor = executor(
        &app.db,
        &job_dir(&[("extract_facts", "schedule = \"0 0 * * * *\""), ("dedup", "schedule = \"0 0 * * * *\"")]),
    );
    let phrasings = [
        "The backend framework is FastAPI.",
        "Our backend is built with FastAPI.",
        "We use FastAPI for the backend.",
        "FastAPI is what we use for our APIs.",
        "All our services are written in FastAPI.",
    ];
    for (i, sentence) in phrasings.iter().enumerate() {
        let d = 1 + 3 * i as i64;
        say(&app, &key, "fay", &format!("s{i}"), day(d, 9), &[sentence]).await;
        run_at(&executor, "extract_facts", day(d, 12), false).await;
    }
    say(&app, &key, "fay", "s9", day(20, 9), &["Our database is PostgreSQL."]).await;
    run_at(&executor, "extract_facts", day(20, 12), false).await;
    run_at(&executor, "dedup", day(20, 13), false).await;

    let active: Vec<(String, Option<String>, i32)> = sqlx::query_as(
        "SELECT content, key, cardinality(source_event_ids) FROM memories WHERE user_id = 'fay' AND status = 'active' ORDER BY created_at",
    )
    .fetch_all(&app.db.pool)
    .await
    .unwrap();
    let fastapi: Vec<_> = active.iter().filter(|(c, ..)| c.contains("FastAPI")).collect();
    assert_eq!(fastapi.len(), 1, "one memory: {active:?}");
    assert_eq!((fastapi[0].1.as_deref(), fastapi[0].2), (Some("framework"), 5), "keyed, with every source: {active:?}");
    assert!(active.iter().any(|(c, ..)| c.contains("PostgreSQL")), "another fact never merges in: {active:?}");
}

/// The default built-in model is multilingual.
#[tokio::test]
async fn the_default_model_answers_across_languages_and_keeps_unrelated_questions_empty() {
    let (app, key, _) =
        extracted("li", &["我们用 MySQL 做主数据库。", "我养了一只猫，叫咪咪。", "我喜欢喝乌龙茶。"]).await;

    let database = top(&app, &key, "li", "database").await;
    assert!(database["content"].as_str().unwrap().contains("MySQL"), "an English query finds it: {database}");
    let pet = top(&app, &key, "li", "我的宠物叫什么名字？").await;
    assert!(pet["content"].as_str().unwrap().contains("咪咪"), "{pet}");
    for unrelated in ["你去过火星吗？", "我的车是什么牌子？"] {
        let found = app.search(&key, &json!({"user_id": "li", "query": unrelated})).await;
        assert_eq!(found["hit"], false, "{unrelated}: {found}");
    }
}
