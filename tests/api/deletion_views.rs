//! What an agent reads after a deletion: `/context` (every section), search and the MCP
//! tools show no empty line, no lone `[deleted]` and no turn left with only markers or an
//! acknowledgement; export still shows that a deletion happened, without its content.

use serde_json::{Value, json};

use crate::helpers::spawn_app;
use crate::pipeline::{ALL_JOBS, run_jobs, urlencode};

const TURNS: &[(&str, &str)] = &[
    ("user", "I live at 12 Rosemary Lane in Bristol."),
    ("user", "Actually, please forget that."),
    ("assistant", "Thanks, noted."),
    ("user", "Thanks!"),
    ("user", "My PIN is 4821."),
    ("user", "I'm training for the Bath half marathon in March."),
    ("user", "我的支付密码是556677"),
    ("user", "好的"),
];

/// Lines an agent should never be given.
fn bad_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| {
            let body = line.trim().trim_start_matches('-').trim();
            // Strip a leading date and the speaker's role.
            let said = body.split_once("] ").map_or(body, |(_, rest)| rest);
            let said = said.split_once(": ").map_or(said, |(_, rest)| rest).trim();
            line.trim_start().starts_with('-') && (said.is_empty() || said == "[deleted]") || line.contains("[deleted]")
        })
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn after_a_deletion_no_view_shows_an_empty_line_or_a_lone_marker() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    let events: Vec<Value> = TURNS
        .iter()
        .enumerate()
        .map(|(i, (role, content))| {
            json!({"user_id": "noor", "session_id": "s1", "role": role, "content": content,
                   "created_at": format!("2026-05-01T10:0{i}:00Z")})
        })
        .collect();
    assert_eq!(app.post_events(&key, &json!({"events": events})).await.status(), 202);
    run_jobs(&app, ALL_JOBS, "2026-05-01T12:00:00Z").await;
    // One memory deleted with the turns it came from: they become `[deleted]` whole.
    let found = app.search(&key, &json!({"user_id": "noor", "query": "half marathon", "min_score": 0})).await;
    let marathon =
        found["results"].as_array().unwrap().iter().find(|r| r["content"].as_str().unwrap().contains("marathon"));
    let id = marathon.expect("the marathon is a memory")["id"].as_str().unwrap().to_owned();
    let deleted = app
        .client
        .delete(format!("{}/v1/users/noor/memories/{id}?sources=true", app.address))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);

    for query in ["where do I live?", "half marathon", "what did I say?", "密码"] {
        let context = app
            .get_as(&key, &format!("/v1/users/noor/context?query={}&session_id=s1&max_tokens=2000", urlencode(query)))
            .await
            .json::<Value>()
            .await
            .unwrap();
        let text = context["text"].as_str().unwrap();
        assert_eq!(bad_lines(text), Vec::<String>::new(), "context for {query}:\n{text}");
        assert!(!text.contains("Rosemary") && !text.contains("marathon"), "{text}");
        let turns = app
            .search(&key, &json!({"user_id": "noor", "query": query, "kinds": ["event"], "limit": 50, "min_score": 0}))
            .await;
        for result in turns["results"].as_array().unwrap() {
            let content = result["content"].as_str().unwrap();
            assert!(
                !content.trim().is_empty() && !content.contains("[deleted]") && content != "[password]",
                "search served {content:?}"
            );
        }
    }
    let export = app.get_as(&key, "/v1/users/noor/export").await.text().await.unwrap();
    assert!(export.contains("[deleted]"), "export shows that a deletion happened");
    assert!(!export.contains("Rosemary") && !export.contains("marathon"));
}
