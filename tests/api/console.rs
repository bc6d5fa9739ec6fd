//! The console's files and the routes it reads that nothing else did: the calling key,
//! one user's counts, a user's raw turns.

use serde_json::{Value, json};

use crate::helpers::{error_of, spawn_app, spawn_app_with, test_settings};

#[tokio::test]
async fn the_console_is_served_without_a_key_under_a_strict_policy() {
    let app = spawn_app().await;

    let page = app.get("/console").await;
    assert_eq!(page.url().path(), "/console/", "`/console` leads to `console/`, so relative links resolve");
    assert_eq!(page.status(), 200);
    let policy = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(policy.contains("script-src 'self'") && policy.contains("default-src 'none'"), "{policy}");
    assert!(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"), "{policy}");
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = page.text().await.unwrap();
    assert!(!html.contains("<script>") && !has_inline_handler(&html), "no inline script nor handler in the page");

    for (file, kind) in [("app.js", "text/javascript"), ("graph.js", "text/javascript"), ("app.css", "text/css")] {
        let asset = app.get(&format!("/console/{file}")).await;
        assert_eq!(asset.status(), 200, "{file}");
        assert!(asset.headers()["content-type"].to_str().unwrap().starts_with(kind), "{file}");
    }
    let missing = app.get("/console/../Cargo.toml").await;
    assert_eq!(missing.status(), 404);
    assert_eq!(app.get("/console/secrets.txt").await.status(), 404);
}

#[tokio::test]
async fn server_console_false_turns_it_off() {
    let mut settings = test_settings();
    settings.server.console = false;
    let app = spawn_app_with(settings).await;
    assert_eq!(app.get("/console/").await.status(), 404);
    assert_eq!(app.get("/console/app.js").await.status(), 404);
}

#[tokio::test]
async fn whoami_names_the_tenant_and_scopes_of_any_valid_key() {
    let app = spawn_app().await;
    let reader = app.key("acme", "read").await;
    let me: Value = app.get_as(&reader, "/v1/whoami").await.json().await.unwrap();
    assert_eq!(me["tenant"], "acme");
    assert_eq!(me["scopes"], json!(["read"]));
    assert_eq!(me["user_id"], Value::Null);

    let bound = engram(&app, &["keys", "create", "--tenant", "acme", "--scope", "read", "--user", "alice"]);
    let me: Value = app.get_as(&bound, "/v1/whoami").await.json().await.unwrap();
    assert_eq!(me["user_id"], "alice");

    assert_eq!(app.get("/v1/whoami").await.status(), 401);
}

/// Whether `html` has an attribute like `onclick=`.
fn has_inline_handler(html: &str) -> bool {
    html.match_indices(" on").any(|(at, _)| {
        let name: String = html[at + 3..].chars().take_while(char::is_ascii_alphabetic).collect();
        !name.is_empty() && html[at + 3 + name.len()..].starts_with('=')
    })
}

fn engram(app: &crate::helpers::TestApp, args: &[&str]) -> String {
    let out = crate::helpers::engram(app, args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().last().unwrap().to_owned()
}

#[tokio::test]
async fn a_user_is_found_by_id_with_counts_and_turns_page_newest_first() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    let events: Vec<Value> = (0..5)
        .map(|i| {
            json!({"user_id": "maya", "session_id": if i < 3 { "s1" } else { "s2" }, "role": "user",
                   "content": format!("turn {i}"), "created_at": format!("2026-11-0{}T10:00:00Z", i + 1)})
        })
        .collect();
    assert_eq!(app.post_events(&key, &json!({"events": events})).await.status(), 202);
    app.remember("acme", "maya", "preference", "Prefers tea").await;

    let maya: Value = app.get_as(&key, "/v1/users/maya").await.json().await.unwrap();
    assert_eq!(
        (maya["events"].as_i64(), maya["sessions"].as_i64(), maya["memories"].as_i64()),
        (Some(5), Some(2), Some(1))
    );
    assert_eq!(maya["entities"], 0);
    let memories: Value = app.get_as(&key, "/v1/users/maya/memories").await.json().await.unwrap();
    let decay = memories["memories"][0]["decay"].as_f64().unwrap();
    assert!(decay > 0.0 && decay <= 1.0, "a new memory's decay score: {decay}");
    let listed: Value = app.get_as(&key, "/admin/v1/users").await.json().await.unwrap();
    assert_eq!(listed["users"][0]["sessions"], 2);

    let unknown = app.get_as(&key, "/v1/users/nobody").await;
    assert_eq!(unknown.status(), 404);
    assert_eq!(error_of(unknown).await["code"], "not_found");

    let first: Value = app.get_as(&key, "/v1/users/maya/events?limit=2").await.json().await.unwrap();
    let contents = |page: &Value| -> Vec<String> {
        page["events"].as_array().unwrap().iter().map(|e| e["content"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(contents(&first), ["turn 4", "turn 3"]);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second: Value =
        app.get_as(&key, &format!("/v1/users/maya/events?limit=2&cursor={cursor}")).await.json().await.unwrap();
    assert_eq!(contents(&second), ["turn 2", "turn 1"]);
    let session: Value = app.get_as(&key, "/v1/users/maya/events?session_id=s2").await.json().await.unwrap();
    assert_eq!(contents(&session), ["turn 4", "turn 3"]);
    assert_eq!(session["events"][0]["role"], "user");

    let bad = app.get_as(&key, "/v1/users/maya/events?cursor=yesterday").await;
    assert_eq!(bad.status(), 400);
    assert_eq!(error_of(bad).await["field"], "cursor");
    let bound = engram(&app, &["keys", "create", "--tenant", "acme", "--scope", "read", "--user", "alice"]);
    assert_eq!(app.get_as(&bound, "/v1/users/maya/events").await.status(), 403);
    assert_eq!(app.get_as(&bound, "/v1/users/maya").await.status(), 403);
}
