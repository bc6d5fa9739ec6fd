//! Graph memory end to end: events in through the API, `extract_facts`, answers out
//! through search, `/context` and the graph endpoints.

use serde_json::{Value, json};

use crate::consolidation::{day, run_at, say};
use crate::helpers::{TestApp, error_of, scripted_llm, spawn_app, test_settings};
use crate::jobs::{executor, executor_with, job_dir};

const JOBS: &[(&str, &str)] = &[("extract_facts", "schedule = \"0 0 * * * *\"")];

async fn heard(user: &str, said: &[&str]) -> (TestApp, String) {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let executor = executor(&app.db, &job_dir(JOBS));
    say(&app, &key, user, "s1", day(1, 9), said).await;
    run_at(&executor, "extract_facts", day(1, 12), false).await;
    (app, key)
}

async fn get_json(app: &TestApp, key: &str, path: &str) -> (u16, Value) {
    let response = app.get_as(key, path).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn relations_of(found: &Value) -> Vec<String> {
    found["results"].as_array().unwrap().iter().map(|r| r["content"].as_str().unwrap().to_owned()).collect()
}

fn enc(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn the_multi_hop_question_in_chinese_is_answered_through_the_graph() {
    let (app, key) = heard(
        "li",
        &["我是李明，负责电商项目。", "电商项目用的是 FastAPI 和 PostgreSQL。", "张伟是我的同事，负责支付模块。"],
    )
    .await;
    let question = "张伟用的什么数据库？";

    let found =
        app.search(&key, &json!({"user_id": "li", "query": question, "kinds": ["relation"], "explain": true})).await;
    let database = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["content"].as_str().unwrap().contains("PostgreSQL"))
        .unwrap_or_else(|| panic!("a relation names PostgreSQL: {found}"));
    assert_eq!(database["kind"], "relation");
    assert_eq!(database["path"], "张伟 —colleague→ 李明 —leads→ 电商项目 —uses→ PostgreSQL", "{database}");
    let parts = &database["explanation"];
    let relevance = parts["relevance"].as_f64().unwrap();
    let expected = relevance * parts["tier"].as_f64().unwrap() * parts["time"].as_f64().unwrap();
    assert!((database["score"].as_f64().unwrap() - expected).abs() < 1e-9, "{parts}");
    assert_eq!(parts["hop"], 3);

    let (status, context) = get_json(&app, &key, &format!("/v1/users/li/context?query={}", enc(question))).await;
    assert_eq!(status, 200);
    let text = context["text"].as_str().unwrap();
    assert!(text.contains("## Relations") && text.contains("电商项目 —uses→ PostgreSQL"), "{text}");
    assert!(
        context["items"].as_array().unwrap().iter().any(|i| i["section"] == "relations" && i["kind"] == "relation")
    );

    let (status, path) =
        get_json(&app, &key, &format!("/v1/users/li/graph/path?from={}&to=PostgreSQL", enc("张伟"))).await;
    assert_eq!(status, 200, "{path}");
    let hops: Vec<(&str, &str, &str)> = path["relations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["subject"].as_str().unwrap(), r["predicate"].as_str().unwrap(), r["object"].as_str().unwrap()))
        .collect();
    assert_eq!(
        hops,
        vec![("张伟", "colleague", "李明"), ("李明", "leads", "电商项目"), ("电商项目", "uses", "PostgreSQL")]
    );
}

#[tokio::test]
async fn the_multi_hop_question_in_english_is_answered_through_the_graph() {
    let (app, key) = heard(
        "ana",
        &[
            "My name is Ana Lopes.",
            "I lead the checkout project.",
            "The checkout project uses Django and Postgres.",
            "My colleague Priya owns the payment module.",
        ],
    )
    .await;

    let found = app
        .search(&key, &json!({"user_id": "ana", "query": "Which database does Priya use?", "kinds": ["relation"]}))
        .await;
    assert!(relations_of(&found).iter().any(|r| r == "checkout project —uses→ PostgreSQL"), "{found}");
    // The best of one is the best of ten, whether near the seed or three hops away.
    for question in ["What does Priya own?", "Which database does Priya use?"] {
        let ask = |limit: usize| json!({"user_id": "ana", "query": question, "kinds": ["relation"], "limit": limit, "min_score": 0.0});
        let (ten, one) = (app.search(&key, &ask(10)).await, app.search(&key, &ask(1)).await);
        assert!(ten["results"].as_array().is_some_and(|r| r.len() > 1), "{ten}");
        assert_eq!(one["results"].as_array().map(Vec::len), Some(1), "{one}");
        for field in ["id", "score", "content", "path"] {
            assert_eq!(one["results"][0][field], ten["results"][0][field], "{question}: {field}");
        }
    }
    let (status, context) =
        get_json(&app, &key, &format!("/v1/users/ana/context?query={}", enc("What database does Priya work with?")))
            .await;
    assert_eq!(status, 200);
    assert!(context["text"].as_str().unwrap().contains("—uses→ PostgreSQL"), "{}", context["text"]);

    let (status, path) = get_json(&app, &key, "/v1/users/ana/graph/path?from=Priya&to=Postgres").await;
    assert_eq!(status, 200, "{path}");
    assert_eq!(path["relations"].as_array().unwrap().len(), 3, "{path}");
    let (_, neighbourhood) = get_json(&app, &key, "/v1/users/ana/graph?entity=Priya&depth=1").await;
    let names: Vec<&str> =
        neighbourhood["entities"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"Ana Lopes") && names.contains(&"payment module"), "{names:?}");
    assert!(!names.contains(&"PostgreSQL"), "depth 1 stops at Priya's own edges: {names:?}");

    let (status, error) = get_json(&app, &key, "/v1/users/ana/graph?entity=Priya&depth=4").await;
    assert_eq!((status, error["error"]["field"].as_str()), (400, Some("depth")), "{error}");
    let (status, _) = get_json(&app, &key, "/v1/users/ana/graph/path?from=Priya&to=Postgres&max_depth=9").await;
    assert_eq!(status, 400);
    let (status, _) = get_json(&app, &key, "/v1/users/ana/graph?entity=Nobody").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_first_name_a_misspelt_name_or_none_start_the_walk_whether_edges_are_read_at_once_or_hop_by_hop() {
    let (app, key) = heard(
        "ana",
        &[
            "My name is Ana Lopes.",
            "I lead the checkout project.",
            "The checkout project uses Django and Postgres.",
            "My colleague Priya Sharma owns the payment module.",
        ],
    )
    .await;
    // The same database through apps that walk the user's graph row or every graph
    // through the database, with the default budget of relations and with one that ends
    // the walk within its second hop.
    let search_url = |settings: engram_base::configuration::Settings| {
        let db = app.db.clone();
        async move {
            let app = engram_server::startup::Application::build(settings, db).await.unwrap();
            let url = format!("http://127.0.0.1:{}/v1/search", app.port());
            tokio::spawn(app.run_until_stopped());
            url
        }
    };
    for budget in [50, 3] {
        let mut settings = test_settings();
        settings.graph.max_relations = budget;
        let at_once_url = search_url(settings.clone()).await;
        settings.graph.scan_limit = 0;
        let hop_by_hop_url = search_url(settings).await;
        for (question, expected) in [
            ("What does Priya own?", "Priya Sharma"),
            ("Which database does the chekout project use?", "checkout project —uses→ PostgreSQL"),
            ("Tell me more", ""),
        ] {
            let query = json!({"user_id": "ana", "query": question, "kinds": ["relation"], "min_score": 0.0});
            let ask = |url: &str| app.client.post(url).bearer_auth(&key).json(&query).send();
            let at_once: Value = ask(&at_once_url).await.unwrap().json().await.unwrap();
            let walked: Value = ask(&hop_by_hop_url).await.unwrap().json().await.unwrap();
            assert_eq!(relations_of(&at_once), relations_of(&walked), "{question}, budget {budget}");
            assert!(relations_of(&at_once).len() <= budget as usize, "{at_once}");
            if budget == 3 && question.contains("Priya") {
                // Priya's two edges, then one of the several her colleague's lead to.
                assert_eq!(relations_of(&at_once).len(), 3, "the budget ends the second hop: {at_once}");
            }
            match expected {
                "" => {
                    assert!(relations_of(&at_once).is_empty(), "a question naming nothing the graph holds: {at_once}")
                }
                _ => assert!(relations_of(&at_once).iter().any(|r| r.contains(expected)), "{question}: {at_once}"),
            }
        }
    }
}

#[tokio::test]
async fn a_migration_ends_the_old_edge_and_as_of_still_sees_it() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let executor = executor(&app.db, &job_dir(JOBS));
    say(&app, &key, "li", "s1", day(1, 9), &["电商项目用的是 PostgreSQL。"]).await;
    run_at(&executor, "extract_facts", day(1, 12), false).await;
    say(&app, &key, "li", "s2", day(5, 9), &["电商项目已经从 PostgreSQL 迁移到 TiDB 了"]).await;
    run_at(&executor, "extract_facts", day(5, 12), false).await;

    let objects = |graph: &Value| -> Vec<String> {
        graph["relations"].as_array().unwrap().iter().map(|r| r["object"].as_str().unwrap().to_owned()).collect()
    };
    let project = enc("电商项目");
    let (_, now) = get_json(&app, &key, &format!("/v1/users/li/graph?entity={project}")).await;
    assert_eq!(objects(&now), vec!["TiDB"], "{now}");
    let then = day(3, 0).to_rfc3339();
    let (_, before) = get_json(&app, &key, &format!("/v1/users/li/graph?entity={project}&as_of={}", enc(&then))).await;
    assert_eq!(objects(&before), vec!["PostgreSQL"], "{before}");

    let (_, tidb) = get_json(&app, &key, "/v1/users/li/graph?entity=TiDB").await;
    let (_, entity) =
        get_json(&app, &key, &format!("/v1/users/li/entities/{}", now["entities"][0]["id"].as_str().unwrap())).await;
    let statuses: Vec<&str> =
        entity["relations"].as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, vec!["superseded", "active"], "the old edge is kept, ended: {entity}");
    assert!(entity["relations"][0]["valid_to"].is_string());
    assert_eq!(tidb["relations"].as_array().unwrap().len(), 1);

    // A lookup sees the migration too: now from the user's graph row, before it from the tables.
    let ask = json!({"user_id": "li", "query": "电商项目用什么数据库", "kinds": ["relation"], "min_score": 0.0});
    let lines = relations_of(&app.search(&key, &ask).await);
    assert!(lines.iter().any(|l| l.ends_with("TiDB")) && !lines.iter().any(|l| l.contains("PostgreSQL")), "{lines:?}");
    let ask_then = json!({"user_id": "li", "query": "电商项目用什么数据库", "kinds": ["relation"], "min_score": 0.0,
                          "as_of": then});
    let lines = relations_of(&app.search(&key, &ask_then).await);
    assert!(lines.iter().any(|l| l.ends_with("PostgreSQL")) && !lines.iter().any(|l| l.contains("TiDB")), "{lines:?}");
}

#[tokio::test]
async fn an_alias_in_a_later_message_names_the_same_entity() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let executor = executor(&app.db, &job_dir(JOBS));
    say(&app, &key, "bo", "s1", day(1, 9), &["The billing service uses PostgreSQL."]).await;
    run_at(&executor, "extract_facts", day(1, 12), false).await;
    say(&app, &key, "bo", "s2", day(2, 9), &["The reporting service runs on PG too."]).await;
    run_at(&executor, "extract_facts", day(2, 12), false).await;

    let (status, page) = get_json(&app, &key, "/v1/users/bo/entities?type=technology").await;
    assert_eq!(status, 200);
    let names: Vec<&str> = page["entities"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["PostgreSQL"], "{page}");
    let id = page["entities"][0]["id"].as_str().unwrap();
    let (_, entity) = get_json(&app, &key, &format!("/v1/users/bo/entities/{id}")).await;
    let subjects: Vec<&str> =
        entity["relations"].as_array().unwrap().iter().map(|r| r["subject"].as_str().unwrap()).collect();
    assert_eq!(subjects, vec!["billing service", "reporting service"]);
    assert!(entity["entity"]["aliases"].as_array().unwrap().iter().any(|a| a == "pg"));
    let (status, error) = get_json(&app, &key, "/v1/users/bo/entities?type=animal").await;
    assert_eq!((status, error["error"]["field"].as_str()), (400, Some("type")));
}

#[tokio::test]
async fn another_tenant_sees_no_entity_and_forgetting_leaves_none() {
    let (app, key) = heard("li", &["我是李明，负责电商项目。", "电商项目用的是 FastAPI 和 PostgreSQL。"]).await;
    let (_, mine) = get_json(&app, &key, "/v1/users/li/entities").await;
    let id = mine["entities"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(mine["entities"].as_array().unwrap().len(), 4, "{mine}");

    let other = app.key("globex", "read,ingest").await;
    let (_, theirs) = get_json(&app, &other, "/v1/users/li/entities").await;
    assert_eq!(theirs["entities"], json!([]));
    let (status, _) = get_json(&app, &other, &format!("/v1/users/li/entities/{id}")).await;
    assert_eq!(status, 404);
    let (status, _) = get_json(&app, &key, &format!("/v1/users/someone-else/entities/{id}")).await;
    assert_eq!(status, 404);
    let found = app.search(&other, &json!({"user_id": "li", "query": "电商项目用什么", "kinds": ["relation"]})).await;
    assert_eq!(found["results"], json!([]));

    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM user_graphs").fetch_one(&app.db.pool).await.unwrap();
    assert_eq!(rows, 1, "extraction wrote the user's graph row");
    let admin = app.key("acme", "admin").await;
    let response =
        app.client.delete(format!("{}/admin/v1/users/li", app.address)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(response.status(), 200);
    for table in ["entities", "relations", "graph_history", "user_graphs"] {
        let left: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
        assert_eq!(left, 0, "{table}");
    }
}

#[tokio::test]
async fn the_llm_path_stores_valid_relations_and_drops_one_naming_an_unknown_entity() {
    let answer = json!({
        "relations": [
            {"subject": {"id": null, "name": "ledger", "type": "product"}, "predicate": "uses",
             "object": {"id": null, "name": "CockroachDB", "type": "technology"}, "ends": null,
             "source_quote": "The ledger runs on CockroachDB", "message": 1},
            {"subject": {"id": "0190a1b2-0000-7000-8000-000000000000", "name": "ghost", "type": "person"},
             "predicate": "owns", "object": {"id": null, "name": "ledger", "type": "product"}, "ends": null,
             "source_quote": "The ledger runs on CockroachDB", "message": 1},
            {"subject": {"id": null, "name": "Kafka", "type": "technology"}, "predicate": "uses",
             "object": {"id": null, "name": "ledger", "type": "product"}, "ends": null,
             "source_quote": "We never said this", "message": 1}
        ],
        "user_name": null
    });
    let (_server, llm) = scripted_llm(&answer.to_string()).await;
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest").await;
    let executor = executor_with(&app.db, &job_dir(JOBS), Some(llm));
    say(&app, &key, "cy", "s1", day(1, 9), &["The ledger runs on CockroachDB."]).await;
    let run = run_at(&executor, "extract_facts", day(1, 12), false).await;

    assert_eq!(run.counts["graph_invalid"], 2, "{}", run.counts);
    assert_eq!(run.counts["relations_created"], 1, "{}", run.counts);
    let (_, ledger) = get_json(&app, &key, "/v1/users/cy/graph?entity=ledger").await;
    assert_eq!(ledger["relations"][0]["object"], "CockroachDB", "{ledger}");
    assert_eq!(ledger["relations"].as_array().unwrap().len(), 1);
    let error = error_of(app.get_as(&key, "/v1/users/cy/graph").await).await;
    assert_eq!(error["field"], "entity");
}

#[tokio::test]
async fn a_merge_keeps_its_lineage_and_restoring_undoes_it() {
    let (app, key) = heard("ana", &["Ana owns the payment module.", "My name is Ana."]).await;
    let (_, page) = get_json(&app, &key, "/v1/users/ana/entities?type=person").await;
    let people = page["entities"].as_array().unwrap();
    assert_eq!(people.len(), 1, "the user is the Ana they spoke of: {page}");
    let me = &people[0];
    assert_eq!((me["name"].as_str(), me["is_user"].as_bool()), (Some("Ana"), Some(true)));
    let (_, detail) = get_json(&app, &key, &format!("/v1/users/ana/entities/{}", me["id"].as_str().unwrap())).await;
    assert_eq!(detail["relations"][0]["subject"], "Ana", "the relation moved to the user: {detail}");
    let merged: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM entities WHERE status = 'merged'").fetch_one(&app.db.pool).await.unwrap();

    let admin = app.key("acme", "admin").await;
    let restore = format!("/admin/v1/users/ana/entities/{merged}/restore");
    let response = app.post_as(&admin, &restore, &json!({})).await;
    assert_eq!(response.status(), 409, "the user's entity holds the name now");
    sqlx::query("UPDATE entities SET name = 'Ana L', norm_name = 'ana l' WHERE is_user")
        .execute(&app.db.pool)
        .await
        .unwrap();
    let response = app.post_as(&admin, &restore, &json!({})).await;
    assert_eq!(response.status(), 200);
    let restored: Value = response.json().await.unwrap();
    assert_eq!(restored["entity"]["status"], "active");
    assert_eq!(restored["relations"][0]["object"], "payment module", "{restored}");
    let actions: Vec<&str> =
        restored["history"].as_array().unwrap().iter().map(|h| h["action"].as_str().unwrap()).collect();
    assert_eq!(actions, vec!["created", "merged", "restored"]);
    let response = app.post_as(&key, &restore, &json!({})).await;
    assert_eq!(response.status(), 403, "restoring takes the admin scope");
}

#[tokio::test]
async fn a_user_over_the_scan_limit_has_no_graph_row_and_gets_one_back_under_it() {
    let (app, _) = heard("li", &["我是李明，负责电商项目。", "电商项目用的是 FastAPI 和 PostgreSQL。"]).await;
    let (tenant, user) =
        (engram_base::domain::TenantId::parse("acme").unwrap(), engram_base::domain::UserId::parse("li").unwrap());
    let rows = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM user_graphs").fetch_one(&app.db.pool).await.unwrap()
    };
    assert_eq!(rows().await, 1);
    let mut conn = app.db.pool.acquire().await.unwrap();
    // Four entities and two relations: over a limit of three entities.
    engram_core::graph::snapshot::refresh(&mut conn, &tenant, &user, 3).await.unwrap();
    assert_eq!(rows().await, 0, "over the limit, the lookups walk the tables");
    engram_core::graph::snapshot::refresh(&mut conn, &tenant, &user, 4).await.unwrap();
    assert_eq!(rows().await, 1);
}
