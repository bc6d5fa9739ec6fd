//! Data in: a user exported from one installation and imported into another answers
//! search and `/context` as before, with the history; a second import adds nothing; a
//! bad document is refused whole; Mem0's `get_all` becomes memories searchable at once.

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_of, spawn_app_with, test_settings};
use crate::pipeline::{ALL_JOBS, hits, run_jobs};

const QUESTIONS: [&str; 6] = [
    "where does Maya work?",
    "which database does the clinic app use?",
    "what is Maya allergic to?",
    "when is the half marathon?",
    "who is Daniel?",
    "what did Maya cook on Sunday?",
];

/// An app whose lookups rank the same on every run: access statistics are not flushed
/// while the test runs.
async fn app() -> TestApp {
    let mut settings = test_settings();
    settings.search.access_flush_ms = 3_600_000;
    spawn_app_with(settings).await
}

async fn told(app: &TestApp, key: &str) {
    let say = |session: &str, role: &str, content: &str, at: &str| json!({"user_id": "maya", "session_id": session, "role": role, "content": content, "created_at": at});
    let events = json!({"events": [
        say("s1", "user", "Hi, I'm Maya. I work as a nurse at St. Mary's hospital in Leeds.", "2026-03-02T09:00:00Z"),
        say("s1", "assistant", "Nice to meet you, Maya. How can I help?", "2026-03-02T09:00:10Z"),
        say("s1", "user", "We use PostgreSQL for the clinic's scheduling app, and I'm allergic to penicillin.", "2026-03-02T09:01:00Z"),
        say("s1", "user", "My brother Daniel is visiting from Lagos next month.", "2026-03-02T09:02:00Z"),
        say("s2", "user", "I signed up for the Leeds half marathon on 19 April.", "2026-03-09T18:00:00Z"),
        say("s2", "assistant", "Great! Do you want a training plan?", "2026-03-09T18:00:20Z"),
        say("s2", "user", "Yes please. On Sunday I cooked jollof rice for the whole ward.", "2026-03-09T18:01:00Z"),
    ]});
    assert_eq!(app.post_events(key, &events).await.status(), 202);
    crate::episodic::embedded(app).await;
}

async fn answers(app: &TestApp, key: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    for question in QUESTIONS {
        let found = app.search(key, &json!({"user_id": "maya", "query": question, "limit": 5})).await;
        let top: Vec<String> = found["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{} {}", r["kind"], r["content"].as_str().unwrap()))
            .collect();
        let path = format!("/v1/users/maya/context?max_tokens=400&query={}", crate::pipeline::urlencode(question));
        let context = app.get_as(key, &path).await.json::<Value>().await.unwrap()["text"].as_str().unwrap().to_owned();
        out.push((top, context));
    }
    out
}

async fn import(app: &TestApp, key: &str, user: &str, doc: &Value) -> reqwest::Response {
    app.client.post(format!("{}/v1/users/{user}/import", app.address)).bearer_auth(key).json(doc).send().await.unwrap()
}

async fn rows_of(app: &TestApp, user: &str) -> Vec<(String, i64)> {
    let mut counts = Vec::new();
    for table in ["events", "sessions", "memories", "memory_history", "entities", "relations", "graph_history"] {
        let sql = format!("SELECT count(*) FROM {table} WHERE user_id = $1");
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(user).fetch_one(&app.db.pool).await.unwrap();
        counts.push((table.to_owned(), n));
    }
    counts
}

#[tokio::test]
async fn an_exported_user_imported_elsewhere_answers_the_same_and_a_second_import_adds_nothing() {
    let (from, to) = (app().await, app().await);
    let (key_from, key_to) = (from.key("acme", "read,ingest,admin").await, to.key("globex", "read,ingest,admin").await);
    told(&from, &key_from).await;
    let made = from
        .post_as(
            &key_from,
            "/v1/users/maya/memories",
            &json!({"content": "Maya prefers night shifts", "category": "preference"}),
        )
        .await;
    let edited = made.json::<Value>().await.unwrap()["memory"]["id"].as_str().unwrap().to_owned();
    let patched = from
        .client
        .patch(format!("{}/v1/users/maya/memories/{edited}", from.address))
        .bearer_auth(&key_from)
        .json(&json!({"content": "Maya prefers early shifts now"}))
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 200);
    run_jobs(&from, ALL_JOBS, "2026-03-10T00:00:00Z").await;

    let export: Value = from.get_as(&key_from, "/v1/users/maya/export").await.json().await.unwrap();
    assert_eq!(export["format"], "engram.export");
    assert_eq!(export["format_version"], 1);
    assert!(export["memories"].as_array().unwrap().len() >= 3, "jobs made memories: {}", export["memories"]);
    let response = import(&to, &key_to, "maya", &export).await;
    assert_eq!(response.status(), 200);
    let imported: Value = response.json().await.unwrap();
    assert_eq!(imported["added"]["events"], 7, "{imported}");
    assert_eq!(imported["added"]["memories"], json!(export["memories"].as_array().unwrap().len()), "{imported}");
    assert!(imported["vectors_made"].as_u64().unwrap() >= 7, "{imported}");

    // The same answers, question by question, in search and in /context.
    let (before, after) = (answers(&from, &key_from).await, answers(&to, &key_to).await);
    for ((question, (top_before, context_before)), (top_after, context_after)) in
        QUESTIONS.iter().zip(&before).zip(&after)
    {
        assert!(!top_before.is_empty(), "{question}: found something");
        assert_eq!(top_after, top_before, "{question}: the same top results");
        assert_eq!(context_after, context_before, "{question}: the same context");
    }
    // The history came too: the edit, by whom, with what it replaced.
    let detail: Value = to.get_as(&key_to, &format!("/v1/users/maya/memories/{edited}")).await.json().await.unwrap();
    assert_eq!(detail["memory"]["content"], "Maya prefers early shifts now");
    let history: Vec<&str> =
        detail["history"].as_array().unwrap().iter().map(|h| h["action"].as_str().unwrap()).collect();
    assert!(history.contains(&"created") && history.contains(&"updated"), "{history:?}");

    // Twice: nothing added, nothing changed.
    let rows = rows_of(&to, "maya").await;
    let again: Value = import(&to, &key_to, "maya", &export).await.json().await.unwrap();
    assert!(again["added"].as_object().unwrap().values().all(|n| n == 0), "{again}");
    assert_eq!(again["already_present"]["events"], 7, "{again}");
    assert_eq!(rows_of(&to, "maya").await, rows);
    // The jobs' watermarks came along: extraction reads no imported turn again.
    run_jobs(&to, &["extract_facts"], "2026-03-10T00:00:00Z").await;
    assert_eq!(rows_of(&to, "maya").await, rows, "nothing extracted twice");

    // Into another user of the same tenant: ids of its own, found as well, and idempotent too.
    let copied: Value = import(&to, &key_to, "maya-copy", &export).await.json().await.unwrap();
    assert_eq!(copied["added"]["events"], 7, "{copied}");
    let found = to.search(&key_to, &json!({"user_id": "maya-copy", "query": QUESTIONS[1]})).await;
    assert!(found["results"][0]["content"].as_str().unwrap().contains("PostgreSQL"), "{found}");
    let copied_ids: Vec<String> = sqlx::query_scalar("SELECT id::text FROM memories WHERE user_id = 'maya-copy'")
        .fetch_all(&to.db.pool)
        .await
        .unwrap();
    assert!(!copied_ids.contains(&edited), "another user's rows take ids of their own");
    let again: Value = import(&to, &key_to, "maya-copy", &export).await.json().await.unwrap();
    assert!(again["added"].as_object().unwrap().values().all(|n| n == 0), "{again}");
}

#[tokio::test]
async fn a_bad_document_is_refused_whole_naming_the_field() {
    let app = app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    told(&app, &key).await;
    run_jobs(&app, &["extract_facts"], "2026-03-10T00:00:00Z").await;
    let export: Value = app.get_as(&key, "/v1/users/maya/export").await.json().await.unwrap();

    let refused = |status: u16, field: &str, words: &str, error: Value| {
        assert_eq!(error["field"], field, "{error}");
        assert!(error["message"].as_str().unwrap().contains(words), "{status}: {error}");
    };
    let mut doc = export.clone();
    doc["format_version"] = json!(7);
    let response = import(&app, &key, "newcomer", &doc).await;
    assert_eq!(response.status(), 400);
    refused(400, "format_version", "7 is not a version", error_of(response).await);

    let mut doc = export.clone();
    doc.as_object_mut().unwrap().remove("format_version");
    let response = import(&app, &key, "newcomer", &doc).await;
    assert_eq!(response.status(), 400);
    refused(400, "format_version", "missing", error_of(response).await);

    let text = serde_json::to_string(&export).unwrap();
    let truncated = app
        .client
        .post(format!("{}/v1/users/newcomer/import", app.address))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(text[..text.len() / 2].to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(truncated.status(), 400);

    let mut doc = export.clone();
    doc["memories"][0]["importance"] = json!("very");
    let response = import(&app, &key, "newcomer", &doc).await;
    assert_eq!(response.status(), 400);
    refused(400, "memories[0].importance", "a number", error_of(response).await);

    let mut doc = export.clone();
    doc["events"][6]["created_at"] = json!("last Tuesday");
    let response = import(&app, &key, "newcomer", &doc).await;
    refused(400, "events[6].created_at", "RFC 3339", error_of(response).await);

    // A value only the database can judge: the rows before it were written in the same
    // transaction, and are gone with it.
    let mut doc = export.clone();
    doc["memories"][0]["status"] = json!("forgotten-ish");
    let response = import(&app, &key, "newcomer", &doc).await;
    assert_eq!(response.status(), 400);
    let error = error_of(response).await;
    assert_eq!(error["field"], "memories", "{error}");
    assert!(!error["message"].as_str().unwrap().contains("SQL"), "{error}");

    let mut doc = export.clone();
    doc["memories"][0]["category"] = json!("hobby");
    let response = import(&app, &key, "newcomer", &doc).await;
    refused(400, "memories[0].category", "not a category", error_of(response).await);

    let mut doc = export.clone();
    doc["favourites"] = json!([]);
    let response = import(&app, &key, "newcomer", &doc).await;
    refused(400, "favourites", "not a table", error_of(response).await);

    assert!(rows_of(&app, "newcomer").await.iter().all(|(_, n)| *n == 0), "nothing was half-imported");
}

#[tokio::test]
async fn mem0_memories_come_over_searchable_at_once_without_duplicates_or_secrets() {
    let app = crate::helpers::spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    let had = app.post_as(&key, "/v1/users/alex/memories", &json!({"content": "Alex is vegetarian"})).await;
    assert_eq!(had.status(), 201);
    let doc = json!({"results": [
        {"id": "3f1d2c9a-7b1e-4c55-9a0f-1b2c3d4e5f60", "memory": "alex is Vegetarian.", "hash": "a1", "metadata": null,
         "created_at": "2024-07-20T01:02:03.123456-07:00", "updated_at": null, "user_id": "alex"},
        {"id": "5e0f9b1c-2d3a-4b5c-8d9e-0f1a2b3c4d5e", "memory": "Works as a landscape architect in Porto",
         "hash": "b2", "metadata": {"source": "onboarding"}, "categories": ["professional_details"],
         "created_at": "2024-08-01T10:00:00-07:00", "updated_at": "2024-09-01T10:00:00-07:00", "user_id": "alex"},
        {"id": "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d", "memory": "Plays the cello in a community orchestra",
         "hash": "c3", "categories": ["hobbies", "music"], "created_at": "2024-08-03T10:00:00", "user_id": "alex"},
        {"id": "9c8b7a6d-5e4f-4321-8765-4321fedcba98", "memory": "Wifi password is Zr8#kLp2wQ for the studio",
         "hash": "d4", "created_at": "2024-08-05T10:00:00Z", "user_id": "alex"},
        {"id": "mem-legacy-17", "memory": "Alex is vegetarian", "hash": "e5", "user_id": "alex"}
    ]});
    // Entries of two Mem0 users are refused: one user at a time.
    let mut mixed = doc.clone();
    mixed["results"][2]["user_id"] = json!("bea");
    let response = import(&app, &key, "alex", &mixed).await;
    assert_eq!(error_of(response).await["field"], "results[2].user_id");
    // Mem0's graph memory, beside the results, is counted and left.
    let mut doc = doc;
    doc["relations"] = json!([{"source": "alex", "relationship": "plays", "target": "cello"}]);
    let response = import(&app, &key, "alex", &doc).await;
    assert_eq!(response.status(), 200);
    let imported: Value = response.json().await.unwrap();
    assert_eq!(imported["skipped"]["relations"], 1, "{imported}");
    assert_eq!(imported["format"], "mem0");
    assert_eq!(imported["added"]["memories"], 3, "{imported}");
    assert_eq!(imported["duplicates"], 2, "two say what Alex's memory already says: {imported}");
    assert_eq!(imported["secrets_redacted"], 1, "{imported}");

    // Searchable as soon as the import returns: no job has run.
    let found = app.search(&key, &json!({"user_id": "alex", "query": "which instrument do I play?", "limit": 3})).await;
    assert_eq!(found["results"][0]["content"], "Plays the cello in a community orchestra", "{found}");
    let found = app.search(&key, &json!({"user_id": "alex", "query": "landscape architecture", "limit": 3})).await;
    assert_eq!(found["results"][0]["content"], "Works as a landscape architect in Porto", "{found}");
    let listed: Value = app.get_as(&key, "/v1/users/alex/memories?limit=50").await.json().await.unwrap();
    let architect = listed["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"] == "Works as a landscape architect in Porto")
        .expect("listed")
        .clone();
    assert_eq!(architect["metadata"]["mem0_id"], "5e0f9b1c-2d3a-4b5c-8d9e-0f1a2b3c4d5e", "{architect}");
    assert_eq!(architect["metadata"]["mem0_metadata"]["source"], "onboarding");
    assert_eq!(architect["category"], "identity");
    assert_eq!(architect["created_at"], "2024-08-01T17:00:00Z");
    assert_eq!(architect["updated_at"], "2024-09-01T17:00:00Z");
    assert!(hits(&app, "Zr8#kLp2wQ").await.is_empty(), "the password is stored nowhere");
    let hashes: Vec<Value> =
        sqlx::query_scalar("SELECT metadata -> 'mem0_hash' FROM memories WHERE content LIKE 'Wifi%'")
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(hashes, [Value::Null], "the hash of the words with the password is not kept");

    // The list form, by the command line: the same memories are found, nothing is added.
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), serde_json::to_string(&doc["results"]).unwrap()).unwrap();
    let out = crate::helpers::engram(&app, &["import", file.path().to_str().unwrap(), "--tenant", "acme"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["user_id"], "alex");
    assert_eq!(again["added"]["memories"], 0, "{again}");
    assert_eq!(again["already_present"]["memories"], 3, "{again}");

    // A document of the wrong shape is refused by the command line as by the API.
    std::fs::write(file.path(), r#"{"results": [{"id": "x1", "memory": "Likes tea", "created_at": "teatime"}]}"#)
        .unwrap();
    let out =
        crate::helpers::engram(&app, &["import", file.path().to_str().unwrap(), "--tenant", "acme", "--user", "alex"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("results[0].created_at") && said.contains("nothing was imported"), "{said}");
}
