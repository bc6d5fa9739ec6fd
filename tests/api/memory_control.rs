//! A person's control over single memories, through the public API: add one and find it
//! at once, correct it, pin it, delete it for good (with the turns it came from), and
//! secrets that never reach any table.

use serde_json::{Value, json};

use crate::helpers::{TestApp, error_of, spawn_app};
use crate::pipeline::{ALL_JOBS, hits, run_jobs, urlencode};

async fn send(app: &TestApp, key: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> reqwest::Response {
    let mut request = app.client.request(method, format!("{}{path}", app.address)).bearer_auth(key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.unwrap()
}

async fn add(app: &TestApp, key: &str, user: &str, body: Value) -> (u16, Value) {
    let response = send(app, key, reqwest::Method::POST, &format!("/v1/users/{user}/memories"), Some(body)).await;
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn search_texts(app: &TestApp, key: &str, user: &str, query: &str, kinds: Value) -> Vec<String> {
    let found = app.search(key, &json!({"user_id": user, "query": query, "kinds": kinds, "limit": 20})).await;
    found["results"].as_array().unwrap().iter().map(|r| r["content"].as_str().unwrap().to_owned()).collect()
}

async fn context_text(app: &TestApp, key: &str, user: &str, query: &str) -> String {
    let path = format!("/v1/users/{user}/context?query={}&max_tokens=2000", urlencode(query));
    let body: Value = app.get_as(key, &path).await.json().await.unwrap();
    body["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn an_added_memory_is_found_at_once_and_a_later_one_with_its_key_replaces_it() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let (status, first) =
        add(&app, &key, "ana", json!({"content": "Ana's team ships every Thursday afternoon", "key": "release_day"}))
            .await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["outcome"], "created");
    assert!(first["memory"]["id"].is_string());
    let found = search_texts(&app, &key, "ana", "when does the team release?", json!(["fact"])).await;
    assert!(found.iter().any(|c| c.contains("Thursday")), "searchable at once: {found:?}");
    let context = context_text(&app, &key, "ana", "which day does the team ship?").await;
    assert!(context.contains("Thursday"), "{context}");

    let (status, second) =
        add(&app, &key, "ana", json!({"content": "Releases moved to Monday mornings", "key": "release_day"})).await;
    assert_eq!(status, 201);
    assert_eq!(second["superseded"], json!([first["memory"]["id"]]));
    let old: Value = app
        .get_as(&key, &format!("/v1/users/ana/memories/{}", first["memory"]["id"].as_str().unwrap()))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(old["memory"]["status"], "superseded");
    let found = search_texts(&app, &key, "ana", "which day do we release?", json!(["fact"])).await;
    assert!(found[0].contains("Monday") && !found.iter().any(|c| c.contains("Thursday")), "{found:?}");

    let (status, again) = add(&app, &key, "ana", json!({"content": "Releases moved to Monday mornings."})).await;
    assert_eq!(status, 200, "a near-duplicate is the memory already there: {again}");
    assert_eq!(again["outcome"], "duplicate");
    assert_eq!(again["memory"]["id"], second["memory"]["id"]);
}

#[tokio::test]
async fn an_edit_is_recorded_with_its_author_and_found_by_its_new_words() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let (_, added) = add(&app, &key, "bo", json!({"content": "Bo monitors the cluster with Grafana dashboards"})).await;
    let id = added["memory"]["id"].as_str().unwrap().to_owned();
    let vector_before: String = sqlx::query_scalar("SELECT embedding::text FROM memories WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    let path = format!("/v1/users/bo/memories/{id}");
    let edit = json!({"content": "Bo monitors the cluster with Datadog alerts", "importance": 0.9});
    let response = send(&app, &key, reqwest::Method::PATCH, &path, Some(edit)).await;
    assert_eq!(response.status(), 200);
    let detail: Value = response.json().await.unwrap();
    assert_eq!(detail["memory"]["content"], "Bo monitors the cluster with Datadog alerts");
    let updated =
        detail["history"].as_array().unwrap().iter().find(|h| h["action"] == "updated").expect("an updated row");
    assert_eq!(updated["before"]["content"], "Bo monitors the cluster with Grafana dashboards");
    assert_eq!(updated["after"]["content"], "Bo monitors the cluster with Datadog alerts");
    assert!(updated["actor"].as_str().unwrap().starts_with("key:"));
    let vector_after: String = sqlx::query_scalar("SELECT embedding::text FROM memories WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_ne!(vector_before, vector_after, "a new content gets a new vector");
    let found = search_texts(&app, &key, "bo", "which alerting tool does Bo use?", json!(["fact"])).await;
    assert!(found.iter().any(|c| c.contains("Datadog")) && !found.iter().any(|c| c.contains("Grafana")), "{found:?}");
}

#[tokio::test]
async fn a_pinned_memory_survives_evict() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let (_, pinned) = add(
        &app,
        &key,
        "cy",
        json!({"content": "Cy's allergy card lives in the blue wallet", "category": "event", "importance": 0.05}),
    )
    .await;
    let (_, plain) = add(
        &app,
        &key,
        "cy",
        json!({"content": "Cy watched a documentary about bees", "category": "event", "importance": 0.05}),
    )
    .await;
    let path = format!("/v1/users/cy/memories/{}", pinned["memory"]["id"].as_str().unwrap());
    let response = send(&app, &key, reqwest::Method::PATCH, &path, Some(json!({"pinned": true}))).await;
    assert_eq!(response.status(), 200);
    let status = |id: Value| {
        let pool = app.db.pool.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT status FROM memories WHERE id = $1::uuid")
                .bind(id.as_str().unwrap().to_owned())
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    for _ in 0..4 {
        run_jobs(&app, &["evict"], "2031-01-01T00:00:00Z").await;
        if status(plain["memory"]["id"].clone()).await == "evicted" {
            break;
        }
    }
    assert_eq!(status(plain["memory"]["id"].clone()).await, "evicted", "evict ran and took the unpinned one");
    assert_eq!(status(pinned["memory"]["id"].clone()).await, "active");
}

#[tokio::test]
async fn bad_input_is_named_and_nothing_is_written() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let reader = app.key("acme", "read").await;
    for (body, field) in [
        (json!({"content": "   "}), "content"),
        (json!({"content": "likes tea", "category": "hobbies"}), "category"),
        (json!({"content": "likes tea", "importance": 3}), "importance"),
        (json!({"content": "likes tea", "key": "Favourite Drink"}), "key"),
        (json!({"content": "likes tea", "valid_from": "yesterday"}), "valid_from"),
        (json!({"text": "likes tea"}), "text"),
    ] {
        let response = send(&app, &key, reqwest::Method::POST, "/v1/users/di/memories", Some(body.clone())).await;
        assert_eq!(response.status(), 400, "{body}");
        assert_eq!(error_of(response).await["field"], field, "{body}");
    }
    let response =
        send(&app, &reader, reqwest::Method::POST, "/v1/users/di/memories", Some(json!({"content": "x y z"}))).await;
    assert_eq!(response.status(), 403);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM memories").fetch_one(&app.db.pool).await.unwrap();
    assert_eq!(count, 0);

    let (_, added) = add(&app, &key, "di", json!({"content": "Di collects vinyl records"})).await;
    let id = added["memory"]["id"].as_str().unwrap();
    let unknown = uuid::Uuid::now_v7();
    for (method, path) in [
        (reqwest::Method::DELETE, format!("/v1/users/di/memories/{unknown}")),
        (reqwest::Method::DELETE, format!("/v1/users/ed/memories/{id}")),
        (reqwest::Method::PATCH, format!("/v1/users/ed/memories/{id}")),
    ] {
        let body = (method == reqwest::Method::PATCH).then(|| json!({"pinned": true}));
        let response = send(&app, &key, method.clone(), &path, body).await;
        assert_eq!(response.status(), 404, "{method} {path}");
    }
    let path = format!("/v1/users/di/memories/{id}");
    let response = send(&app, &key, reqwest::Method::PATCH, &path, Some(json!({}))).await;
    assert_eq!(response.status(), 400);
    let response = send(&app, &key, reqwest::Method::PATCH, &path, Some(json!({"category": "hobbies"}))).await;
    assert_eq!(error_of(response).await["field"], "category");
    let response = send(&app, &key, reqwest::Method::DELETE, &format!("{path}?sources=maybe"), None).await;
    assert_eq!(error_of(response).await["field"], "sources");
    let response = send(&app, &reader, reqwest::Method::DELETE, &path, None).await;
    assert_eq!(response.status(), 403);
    let detail: Value = app.get_as(&key, &path).await.json().await.unwrap();
    assert_eq!(detail["memory"]["content"], "Di collects vinyl records", "nothing changed");
}

/// Alice and Bob say the same thing; Alice's fact is deleted with its turns.
#[tokio::test]
async fn a_deleted_memory_and_its_turns_leave_no_trace_and_other_users_keep_theirs() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    for user in ["alice", "bob"] {
        let events = json!({"events": [
            {"user_id": user, "session_id": "s1", "role": "user", "created_at": "2026-03-02T10:00:00Z",
             "content": "I live in Reykjavik and I keep a sourdough starter called Bubbles."},
            {"user_id": user, "session_id": "s1", "role": "assistant", "created_at": "2026-03-02T10:00:05Z",
             "content": "Reykjavik sounds lovely."},
            {"user_id": user, "session_id": "s1", "role": "user", "created_at": "2026-03-02T10:01:00Z",
             "content": "My favourite programming language is Rust."},
        ]});
        assert_eq!(app.post_events(&key, &events).await.status(), 202);
    }
    run_jobs(&app, &["extract_facts", "embed_events", "summarize_sessions"], "2026-03-03T00:00:00Z").await;
    let found =
        app.search(&key, &json!({"user_id": "alice", "query": "where does alice live?", "kinds": ["fact"]})).await;
    let fact = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["content"].as_str().unwrap().contains("Reykjavik"))
        .unwrap_or_else(|| panic!("the fact was extracted: {found}"))
        .clone();
    let id = fact["id"].as_str().unwrap();

    let response =
        send(&app, &key, reqwest::Method::DELETE, &format!("/v1/users/alice/memories/{id}?sources=true"), None).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["deleted"]["memories"], 1, "{body}");
    assert_eq!(body["deleted"]["events_redacted"], 2, "its turn, and the assistant's turn repeating it: {body}");
    let response = app.get_as(&key, &format!("/v1/users/alice/memories/{id}")).await;
    assert_eq!(response.status(), 404);

    // No table holds it for alice; bob's are all there.
    let left: Vec<_> = hits(&app, "Reykjavik").await;
    let alice_rows: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM events WHERE user_id = 'alice' AND content ILIKE '%reykjavik%')
              + (SELECT count(*) FROM memories WHERE user_id = 'alice' AND content ILIKE '%reykjavik%')
              + (SELECT count(*) FROM memory_history WHERE user_id = 'alice' AND (before::text || after::text) ILIKE '%reykjavik%')
              + (SELECT count(*) FROM sessions WHERE user_id = 'alice' AND summary ILIKE '%reykjavik%')
              + (SELECT count(*) FROM relations WHERE user_id = 'alice' AND fact ILIKE '%reykjavik%')
              + (SELECT count(*) FROM entities WHERE user_id = 'alice' AND norm_name ILIKE '%reykjavik%')",
    )
    .fetch_one(&app.db.pool)
    .await
    .unwrap();
    let export: Value = app.get_as(&key, "/v1/users/alice/export").await.json().await.unwrap();
    assert_eq!(alice_rows, 0, "alice's rows are clean; every table holding it: {left:?}; alice: {export}");
    assert!(!export.to_string().to_lowercase().contains("reykjavik"), "{export}");
    let bob: Value = app.get_as(&key, "/v1/users/bob/export").await.json().await.unwrap();
    assert!(bob.to_string().contains("Reykjavik"), "bob keeps his");
    for kinds in [json!(["fact", "insight"]), json!(["event"]), json!(["relation", "session_summary"])] {
        let found = search_texts(&app, &key, "alice", "Reykjavik, where does she live", kinds).await;
        assert!(!found.iter().any(|c| c.contains("Reykjavik")), "{found:?}");
    }
    assert!(!context_text(&app, &key, "alice", "where does alice live?").await.contains("Reykjavik"));
    let found = search_texts(&app, &key, "alice", "favourite programming language", json!(["fact", "event"])).await;
    assert!(found.iter().any(|c| c.contains("Rust")), "what was not deleted stays: {found:?}");
    // Audited without content.
    let audit: Vec<(String, String, Value)> =
        sqlx::query_as("SELECT action, actor, details FROM audit_log WHERE target = $1")
            .bind(id)
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].0, "delete_memory");
    assert!(audit[0].1.starts_with("key:"));
    // A summary made again leaves it out, as the jobs run on.
    run_jobs(&app, ALL_JOBS, "2026-04-20T00:00:00Z").await;
    let again: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM sessions WHERE user_id = 'alice' AND summary ILIKE '%reykjavik%')
              + (SELECT count(*) FROM period_summaries WHERE user_id = 'alice' AND summary ILIKE '%reykjavik%')
              + (SELECT count(*) FROM memories WHERE user_id = 'alice' AND content ILIKE '%reykjavik%')",
    )
    .fetch_one(&app.db.pool)
    .await
    .unwrap();
    assert_eq!(again, 0);
}

#[tokio::test]
async fn a_memory_deleted_while_extract_facts_runs_stays_deleted() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let first = json!({"user_id": "fay", "session_id": "s0", "role": "user", "created_at": "2026-02-01T09:00:00Z",
                       "content": "I work at Initech as a data engineer."});
    assert_eq!(app.post_events(&key, &first).await.status(), 202);
    run_jobs(&app, &["extract_facts"], "2026-02-02T00:00:00Z").await;
    let page: Value = app.get_as(&key, "/v1/users/fay/memories").await.json().await.unwrap();
    let id = page["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"].as_str().unwrap().contains("Initech"))
        .expect("the fact exists")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Plenty of new turns, so the next run is under way when the deletion comes.
    let events: Vec<Value> = (0..600)
        .map(|i| {
            json!({"user_id": "fay", "session_id": format!("s{}", 1 + i / 50), "role": "user",
                        "created_at": format!("2026-02-{:02}T10:{:02}:{:02}Z", 3 + i / 50, (i / 10) % 60, i % 60),
                        "content": format!("We moved service number {i} to Kubernetes and it uses PostgreSQL.")})
        })
        .collect();
    assert_eq!(app.post_events(&key, &json!({"events": events})).await.status(), 202);
    let job = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["job", "run", "extract_facts", "--now", "2026-03-01T00:00:00Z"])
        .env("ENGRAM_DATABASE__URL", &app.database_url)
        .env("ENGRAM_LOG__FILTER", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let response = send(&app, &key, reqwest::Method::DELETE, &format!("/v1/users/fay/memories/{id}"), None).await;
    assert_eq!(response.status(), 200);
    let out = job.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let left: i64 =
        sqlx::query_scalar("SELECT count(*) FROM memories WHERE id = $1::uuid OR content ILIKE '%initech%'")
            .bind(&id)
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
    assert_eq!(left, 0, "stays deleted");
}

#[tokio::test]
async fn secrets_never_reach_a_table_a_route_or_a_log() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    let secrets = [
        "Hunter2!Lagoon",
        "sk-live4f9aQ2zXk81LmNoPq",
        "4556 7375 8689 9855",
        "078-05-1120",
        "11010519491231002X",
        "Qz8#river",
    ];
    let turns = [
        "My online banking password is Hunter2!Lagoon, I keep forgetting it.",
        "Here's the key for the staging box: sk-live4f9aQ2zXk81LmNoPq — it's our OpenAI account.",
        "Please book it on my Visa, card 4556 7375 8689 9855, expiry next May.",
        "For the tax form: SSN 078-05-1120.",
        "我的身份证号码是11010519491231002X，帮我填一下表。",
        "wifi 密码：Qz8#river 记得别外传",
    ];
    let events: Vec<Value> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"user_id": "gil", "session_id": "s1", "role": "user", "content": t,
                             "created_at": format!("2026-05-01T10:0{i}:00Z")})
        })
        .collect();
    assert_eq!(app.post_events(&key, &json!({"events": events})).await.status(), 202);
    for secret in secrets {
        assert_eq!(hits(&app, secret).await, vec![], "{secret} after ingest");
    }
    let logs = run_jobs(&app, ALL_JOBS, "2026-06-15T00:00:00Z").await;
    for secret in secrets {
        assert_eq!(hits(&app, secret).await, vec![], "{secret} after every job");
        assert!(!logs.contains(secret), "{secret} in the logs");
    }
    let export: Value = app.get_as(&key, "/v1/users/gil/export").await.json().await.unwrap();
    for secret in secrets {
        assert!(!export.to_string().contains(secret));
    }
    // The redacted turn is still found by its other words.
    let found = search_texts(&app, &key, "gil", "online banking", json!(["event"])).await;
    assert!(found.iter().any(|c| c.contains("online banking password is [password]")), "{found:?}");
    let found = search_texts(&app, &key, "gil", "tax form", json!(["event"])).await;
    assert!(found.iter().any(|c| c.contains("[national id]")), "{found:?}");
}
