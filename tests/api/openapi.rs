use serde_json::Value;

use crate::helpers::spawn_app;

/// Every route of the API contract.
const ROUTES: &[(&str, &str)] = &[
    ("post", "/v1/events"),
    ("post", "/v1/search"),
    ("get", "/v1/users/{user_id}/context"),
    ("get", "/v1/users/{user_id}/memories"),
    ("get", "/v1/users/{user_id}/memories/{memory_id}"),
    ("post", "/v1/users/{user_id}/memories"),
    ("patch", "/v1/users/{user_id}/memories/{memory_id}"),
    ("delete", "/v1/users/{user_id}/memories/{memory_id}"),
    ("get", "/v1/users/{user_id}"),
    ("get", "/v1/users/{user_id}/events"),
    ("get", "/v1/users/{user_id}/sessions"),
    ("get", "/v1/users/{user_id}/summaries"),
    ("post", "/v1/feedback"),
    ("get", "/v1/users/{user_id}/export"),
    ("post", "/v1/users/{user_id}/import"),
    ("post", "/admin/v1/webhooks"),
    ("get", "/admin/v1/webhooks"),
    ("delete", "/admin/v1/webhooks/{webhook_id}"),
    ("get", "/admin/v1/webhooks/{webhook_id}/deliveries"),
    ("get", "/admin/v1/users"),
    ("delete", "/admin/v1/users/{user_id}"),
    ("get", "/admin/v1/users/{user_id}/deletions"),
    ("post", "/admin/v1/users/{user_id}/memories/{memory_id}/restore"),
    ("get", "/v1/users/{user_id}/entities"),
    ("get", "/v1/users/{user_id}/entities/{entity_id}"),
    ("get", "/v1/users/{user_id}/graph"),
    ("get", "/v1/users/{user_id}/graph/path"),
    ("post", "/admin/v1/users/{user_id}/entities/{entity_id}/restore"),
    ("get", "/admin/v1/jobs"),
    ("post", "/admin/v1/jobs/{job}/runs"),
    ("get", "/admin/v1/jobs/{job}/runs"),
    ("get", "/admin/v1/jobs/runs/{run_id}"),
    ("post", "/admin/v1/jobs/{job}/pause"),
    ("post", "/admin/v1/jobs/{job}/resume"),
    ("get", "/v1/whoami"),
    ("get", "/metrics"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/openapi.json"),
    ("get", "/docs"),
];

#[tokio::test]
async fn the_openapi_document_describes_every_route_and_only_served_ones() {
    let app = spawn_app().await;

    let response = app.get("/openapi.json").await;
    assert_eq!(response.status(), 200);
    let doc: Value = response.json().await.unwrap();

    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    assert_eq!(doc["components"]["securitySchemes"]["api_key"]["scheme"], "bearer");
    for (method, path) in ROUTES {
        let operation = &doc["paths"][path][method];
        assert!(operation.is_object(), "{method} {path} is not documented");
        assert!(operation["responses"].as_object().is_some_and(|r| !r.is_empty()), "{method} {path} has no responses");
    }
    assert!(doc["components"]["schemas"]["SearchRequest"]["properties"]["user_id"].is_object());
    // Every documented path is served: none of them falls through to "no such route".
    let paths = doc["paths"].as_object().unwrap();
    for (path, item) in paths {
        let concrete = path
            .replace("{user_id}", "u1")
            .replace("{memory_id}", &uuid::Uuid::nil().to_string())
            .replace("{run_id}", &uuid::Uuid::nil().to_string())
            .replace("{job}", "evict");
        for method in item.as_object().unwrap().keys() {
            let request =
                app.client.request(method.to_uppercase().parse().unwrap(), format!("{}{concrete}", app.address));
            let response = request.send().await.unwrap();
            if response.status() == 404 {
                let body: Value = response.json().await.unwrap_or_default();
                assert_ne!(body["error"]["message"], "no such route", "{method} {path} is documented but not served");
            }
        }
    }
    let operations: usize = paths.values().map(|item| item.as_object().unwrap().len()).sum();
    assert_eq!(operations, ROUTES.len(), "documented: {:?}", paths.keys().collect::<Vec<_>>());
}

#[tokio::test]
async fn the_docs_page_is_served_without_a_key_and_reads_the_document_from_this_server() {
    let app = spawn_app().await;

    let response = app.get("/docs").await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let page = response.text().await.unwrap();
    assert!(page.contains("fetch(\"/openapi.json\")"), "the page reads this server's document");
    assert!(!page.contains("http://") && !page.contains("https://"), "the page loads nothing from elsewhere");
}
