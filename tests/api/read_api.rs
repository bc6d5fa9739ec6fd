use serde_json::{Value, json};

use crate::helpers::{error_of, spawn_app};

#[tokio::test]
async fn context_shows_the_answer_first_keeps_the_profile_within_its_share_and_never_exceeds_max_tokens() {
    let app = spawn_app().await;
    let key = app.key("acme", "read").await;
    app.remember("acme", "gus", "identity", "My name is Gus and I live in Porto").await;
    for i in 0..30 {
        app.remember(
            "acme",
            "gus",
            "technical",
            &format!("Service number {i} runs on Kubernetes with PostgreSQL storage"),
        )
        .await;
    }

    let full: Value = app
        .get_as(&key, "/v1/users/gus/context?query=kubernetes%20services&max_tokens=2000")
        .await
        .json()
        .await
        .unwrap();
    let small: Value = app
        .get_as(&key, "/v1/users/gus/context?query=kubernetes%20services&max_tokens=120")
        .await
        .json()
        .await
        .unwrap();
    let tiny: Value =
        app.get_as(&key, "/v1/users/gus/context?query=kubernetes%20services&max_tokens=40").await.json().await.unwrap();

    let text = full["text"].as_str().unwrap();
    assert!(text.starts_with("## Relevant memories\n- "), "what answers the query first: {text}");
    assert!(text.contains("\n\n## About the user\n- My name is Gus"), "{text}");
    assert_eq!(full["items"][0]["section"], "relevant");
    assert!(full["items"].as_array().unwrap().len() > 5);
    let profile: u64 = full["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["section"] == "profile")
        .map(|i| i["tokens"].as_u64().unwrap())
        .sum();
    assert!(profile <= 400, "the profile keeps to its share (0.2): {profile}");
    for (context, budget) in [(&small, 120), (&tiny, 40)] {
        let tokens = context["tokens"].as_u64().unwrap();
        assert!(tokens <= budget, "{tokens}");
        let text = context["text"].as_str().unwrap();
        assert!(engram_core::context::estimate_tokens(text) <= budget as usize, "{text}");
    }
    // The profile takes its share of the budget before the relevant memories take the rest.
    let sections = |context: &Value| -> Vec<String> {
        context["items"].as_array().unwrap().iter().map(|i| i["section"].as_str().unwrap().to_owned()).collect()
    };
    assert!(sections(&small).contains(&"profile".to_owned()), "{small}");
    // 40 tokens leave the profile 8, too few for its line: the relevant memories get them.
    assert!(!sections(&tiny).contains(&"profile".to_owned()), "{tiny}");
    assert_eq!(tiny["items"][0]["section"], "relevant", "{tiny}");

    let bad = app.get_as(&key, "/v1/users/gus/context?max_tokens=0").await;
    assert_eq!(bad.status(), 400);
    assert_eq!(error_of(bad).await["field"], "max_tokens");
}

#[tokio::test]
async fn pagination_visits_every_row_exactly_once_while_rows_are_inserted() {
    let app = spawn_app().await;
    let key = app.key("acme", "read").await;
    let mut originals = Vec::new();
    for i in 0..23 {
        originals.push(app.remember("acme", "hal", "event", &format!("event memory {i}")).await);
    }

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/users/hal/memories?limit=5&cursor={c}"),
            None => "/v1/users/hal/memories?limit=5".to_owned(),
        };
        let page: Value = app.get_as(&key, &path).await.json().await.unwrap();
        seen.extend(
            page["memories"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["id"].as_str().unwrap().parse::<uuid::Uuid>().unwrap()),
        );
        app.remember("acme", "hal", "event", "a memory inserted while paging").await;
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }

    for id in &originals {
        assert_eq!(seen.iter().filter(|s| *s == id).count(), 1, "{id} seen exactly once");
    }
    let bad = app.get_as(&key, "/v1/users/hal/memories?cursor=garbage").await;
    assert_eq!(error_of(bad).await["field"], "cursor");
    let bad = app.get_as(&key, "/v1/users/hal/memories?category=gossip").await;
    assert_eq!(error_of(bad).await["field"], "category");
    let bad = app.get_as(&key, "/v1/users/hal/memories?sort=asc").await;
    assert_eq!(error_of(bad).await["field"], "sort");
}

#[tokio::test]
async fn one_memory_comes_with_its_history_and_feedback_counts_corrections() {
    let app = spawn_app().await;
    let key = app.key("acme", "read").await;
    let id = app.remember("acme", "ida", "preference", "I prefer tabs over spaces").await;

    let wrong = app
        .post_as(
            &key,
            "/v1/feedback",
            &json!({"user_id": "ida", "memory_id": id, "kind": "wrong", "note": "spaces now"}),
        )
        .await;
    let helpful =
        app.post_as(&key, "/v1/feedback", &json!({"user_id": "ida", "memory_id": id, "kind": "helpful"})).await;
    let detail: Value = app.get_as(&key, &format!("/v1/users/ida/memories/{id}")).await.json().await.unwrap();

    assert_eq!(wrong.status(), 201);
    assert_eq!(helpful.status(), 201);
    assert_eq!(detail["memory"]["content"], "I prefer tabs over spaces");
    assert_eq!(detail["memory"]["confidence"], 0.5);
    let actions: Vec<&str> =
        detail["history"].as_array().unwrap().iter().map(|h| h["action"].as_str().unwrap()).collect();
    assert_eq!(actions, vec!["created", "updated"]);
    assert!(app.metrics().await.contains(r#"engram_memory_corrections_total{source="feedback"} 1"#));

    let unknown = app
        .post_as(&key, "/v1/feedback", &json!({"user_id": "ida", "memory_id": uuid::Uuid::now_v7(), "kind": "wrong"}))
        .await;
    assert_eq!(unknown.status(), 404);
    let bad = app.post_as(&key, "/v1/feedback", &json!({"user_id": "ida", "memory_id": "nope", "kind": "wrong"})).await;
    assert_eq!(error_of(bad).await["field"], "memory_id");
    let bad = app.post_as(&key, "/v1/feedback", &json!({"user_id": "ida", "memory_id": id, "kind": "meh"})).await;
    assert_eq!(error_of(bad).await["field"], "kind");
    assert_eq!(app.get_as(&key, "/v1/users/ida/memories/not-a-uuid").await.status(), 400);
    assert_eq!(app.get_as(&key, &format!("/v1/users/ida/memories/{}", uuid::Uuid::now_v7())).await.status(), 404);
}

#[tokio::test]
async fn a_user_correcting_served_memories_is_detected_and_linked() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let id = app.remember("acme", "jo", "preference", "My editor is Emacs").await;
    app.search(&key, &json!({"user_id": "jo", "query": "which editor do I use"})).await;
    app.access.flush(&app.db.pool).await.unwrap();

    let small_talk = json!({"user_id": "jo", "role": "user", "content": "thanks, that helps"});
    let correction =
        json!({"user_id": "jo", "role": "user", "content": "That's wrong, I switched to Neovim last year"});
    assert_eq!(app.post_events(&key, &small_talk).await.status(), 202);
    assert_eq!(app.post_events(&key, &correction).await.status(), 202);

    assert!(app.metrics().await.contains(r#"engram_memory_corrections_total{source="detected"} 1"#));
    let (memory, source, kind): (uuid::Uuid, String, String) =
        sqlx::query_as("SELECT memory_id, source, kind FROM feedback").fetch_one(&app.db.pool).await.unwrap();
    assert_eq!((memory, source.as_str(), kind.as_str()), (id, "detected", "wrong"));
}

#[tokio::test]
async fn export_then_delete_leaves_nothing_of_the_user_and_an_audit_row() {
    let app = spawn_app().await;
    let admin = app.key("acme", "read,ingest,admin").await;
    let event = json!({"user_id": "kim", "role": "user", "content": "My passport number is secret"});
    assert_eq!(app.post_events(&admin, &event).await.status(), 202);
    let id = app.remember("acme", "kim", "personal", "Kim has a dog called Rex").await;
    app.post_as(&admin, "/v1/feedback", &json!({"user_id": "kim", "memory_id": id, "kind": "helpful"})).await;
    app.remember("acme", "other", "personal", "Other user stays").await;
    app.search(&admin, &json!({"user_id": "kim", "query": "what is my dog called"})).await;
    app.access.flush(&app.db.pool).await.unwrap();

    let export: Value = app.get_as(&admin, "/v1/users/kim/export").await.json().await.unwrap();
    assert_eq!(export["events"].as_array().unwrap().len(), 1);
    assert_eq!(export["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(export["memories"][0]["content"], "Kim has a dog called Rex");
    assert_eq!(export["memory_history"].as_array().unwrap().len(), 1);
    assert_eq!(export["feedback"].as_array().unwrap().len(), 1);
    assert_eq!(export["memory_access"][0]["access_count"], 1);
    assert!(export["memories"][0].get("embedding").is_none());

    let deleted =
        app.client.delete(format!("{}/admin/v1/users/kim", app.address)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    let deleted: Value = deleted.json().await.unwrap();
    assert_eq!(deleted["deleted"]["events"], 1);
    assert_eq!(deleted["deleted"]["memories"], 1);

    let after: Value = app.get_as(&admin, "/v1/users/kim/export").await.json().await.unwrap();
    for table in ["events", "sessions", "memories", "memory_history", "memory_access", "feedback", "period_summaries"] {
        assert_eq!(after[table], json!([]), "{table}");
    }
    assert_eq!(app.search(&admin, &json!({"user_id": "kim", "query": "dog"})).await["hit"], false);
    let listed: Value = app.get_as(&admin, "/v1/users/kim/memories").await.json().await.unwrap();
    assert_eq!(listed["memories"], json!([]));
    let (action, target, details): (String, String, Value) =
        sqlx::query_as("SELECT action, target, details FROM audit_log").fetch_one(&app.db.pool).await.unwrap();
    assert_eq!(action, "delete_user");
    assert!(
        target.starts_with("hmac:") && !target.contains("kim"),
        "the audit log keeps a keyed hash, not the id: {target}"
    );
    assert!(!details.to_string().contains("Rex") && !details.to_string().contains("passport"));
    let deletions: Value = app.get_as(&admin, "/admin/v1/users/kim/deletions").await.json().await.unwrap();
    assert_eq!(deletions["deletions"].as_array().unwrap().len(), 1, "{deletions}");
    assert_eq!(deletions["deletions"][0]["deleted"]["memories"], 1);
    let never: Value = app.get_as(&admin, "/admin/v1/users/other/deletions").await.json().await.unwrap();
    assert_eq!(never["deletions"], json!([]));
    let others: i64 = sqlx::query_scalar("SELECT count(*) FROM memories WHERE user_id = 'other'")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(others, 1);

    let reader = app.key("acme", "read").await;
    assert_eq!(app.get_as(&reader, "/v1/users/kim/export").await.status(), 403);
    let response =
        app.client.delete(format!("{}/admin/v1/users/kim", app.address)).bearer_auth(&reader).send().await.unwrap();
    assert_eq!(response.status(), 403);
}

#[tokio::test]
async fn no_route_shows_one_tenant_or_user_anything_of_another() {
    let app = spawn_app().await;
    let a = app.key("tenant-a", "read,ingest,admin").await;
    let b = app.key("tenant-b", "read,ingest,admin").await;
    let id = app.remember("tenant-a", "lee", "personal", "Lee's secret project is called Bluebird").await;
    let event = json!({"user_id": "lee", "session_id": "s-a", "role": "user", "content": "Bluebird launches soon"});
    assert_eq!(app.post_events(&a, &event).await.status(), 202);

    let search = app
        .search(
            &b,
            &json!({"user_id": "lee", "query": "secret project Bluebird", "kinds": ["fact", "session_summary"]}),
        )
        .await;
    assert_eq!(search["results"], json!([]));
    let context: Value = app.get_as(&b, "/v1/users/lee/context?query=Bluebird").await.json().await.unwrap();
    assert_eq!(context["items"], json!([]));
    for path in ["/v1/users/lee/memories", "/v1/users/lee/sessions", "/v1/users/lee/summaries"] {
        let body: Value = app.get_as(&b, path).await.json().await.unwrap();
        let list = body.as_object().unwrap().values().find(|v| v.is_array()).unwrap();
        assert_eq!(list, &json!([]), "{path}");
    }
    assert_eq!(app.get_as(&b, &format!("/v1/users/lee/memories/{id}")).await.status(), 404);
    let feedback = app.post_as(&b, "/v1/feedback", &json!({"user_id": "lee", "memory_id": id, "kind": "wrong"})).await;
    assert_eq!(feedback.status(), 404);
    let export: Value = app.get_as(&b, "/v1/users/lee/export").await.json().await.unwrap();
    assert_eq!(export["memories"], json!([]));
    assert_eq!(export["events"], json!([]));
    app.client.delete(format!("{}/admin/v1/users/lee", app.address)).bearer_auth(&b).send().await.unwrap();
    let still_there: i64 = sqlx::query_scalar("SELECT count(*) FROM memories WHERE id = $1")
        .bind(id)
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(still_there, 1, "tenant B cannot delete tenant A's user");

    // Another user of the same tenant sees nothing of lee's either.
    assert_eq!(app.get_as(&a, &format!("/v1/users/someone-else/memories/{id}")).await.status(), 404);
    let other = app.search(&a, &json!({"user_id": "someone-else", "query": "Bluebird"})).await;
    assert_eq!(other["results"], json!([]));
}
