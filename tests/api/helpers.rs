//! `spawn_app`: a fresh database and a running engram for one test.

use engram_base::auth::{self, Scope};
use engram_base::configuration::Settings;
use engram_base::db::Database;
use engram_base::domain::TenantId;
use engram_server::startup::Application;
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};

pub struct TestApp {
    pub address: String,
    pub access: std::sync::Arc<engram_core::access::AccessRecorder>,
    pub embedder: std::sync::Arc<engram_base::models::Embedder>,
    pub db: Database,
    /// The URL of this test's database, for running the `engram` binary against it.
    pub database_url: String,
    pub client: reqwest::Client,
}

fn admin_options() -> PgConnectOptions {
    let url = std::env::var("ENGRAM_TEST_DATABASE_URL")
        .expect("ENGRAM_TEST_DATABASE_URL is unset: run the tests with scripts/test");
    url.parse().expect("ENGRAM_TEST_DATABASE_URL is a PostgreSQL URL")
}

/// A new, migrated database of its own, and its URL.
pub async fn fresh_database() -> (Database, String) {
    let (db, url) = empty_database().await;
    db.migrate().await.expect("migrations apply to a fresh database");
    (db, url)
}

/// A new database of its own with no migration applied yet, and its URL.
pub async fn empty_database() -> (Database, String) {
    let name = format!("test_{}", uuid::Uuid::new_v4().simple());
    let mut admin = admin_options().connect().await.expect("the test PostgreSQL is reachable");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
    admin.close().await.unwrap();
    let pool = PgPoolOptions::new().max_connections(8).connect_with(admin_options().database(&name)).await.unwrap();
    let mut url = url::Url::parse(&std::env::var("ENGRAM_TEST_DATABASE_URL").unwrap()).unwrap();
    url.set_path(&name);
    (Database::from_pool(pool), url.to_string())
}

pub fn test_settings() -> Settings {
    let mut settings = Settings::default();
    settings.server.bind = "127.0.0.1:0".into();
    settings.server.workers = Some(1);
    settings.server.key_cache_secs = 0;
    // Tests that need the scheduler opt in (see tests/api/jobs.rs).
    settings.server.role = engram_base::configuration::Role::Api;
    settings
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(test_settings()).await
}

pub async fn spawn_app_with(settings: Settings) -> TestApp {
    let (db, database_url) = fresh_database().await;
    spawn_app_on(settings, db, database_url).await
}

/// A running engram on `db`, whose URL is `database_url`.
pub async fn spawn_app_on(settings: Settings, db: Database, database_url: String) -> TestApp {
    let embedder = std::sync::Arc::new(
        engram_base::models::Embedder::from_settings(
            &Default::default(),
            std::path::Path::new(".engram"),
            &Default::default(),
            Default::default(),
        )
        .expect("the local model is installed"),
    );
    let app = Application::build(settings, db.clone()).await.expect("the application builds");
    let address = format!("http://127.0.0.1:{}", app.port());
    let access = app.access();
    tokio::spawn(app.run_until_stopped());
    // A connection per request: a test that waits for an `engram` process without
    // yielding holds the server's runtime up, and a kept-alive connection the server then
    // closes would fail the next request on it.
    let client = http_builder().pool_max_idle_per_host(0).build().expect("an HTTP client");
    TestApp { address, access, embedder, db, database_url, client }
}

/// A reqwest builder for the tests' own requests, with engram's TLS provider installed
/// (reqwest is built without one of its own).
pub fn http_builder() -> reqwest::ClientBuilder {
    engram_base::tls::provider();
    reqwest::Client::builder()
}

/// A plain client for the tests' own requests.
pub fn http_client() -> reqwest::Client {
    http_builder().build().expect("an HTTP client")
}

/// What `/readyz` first answers on `port` once something listens there, within 30 s
/// (0 when nothing did).
pub async fn first_readiness(port: u16) -> u16 {
    let client = http_client();
    for _ in 0..300 {
        if let Ok(response) = client.get(format!("http://127.0.0.1:{port}/readyz")).send().await {
            return response.status().as_u16();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    0
}

/// Stops an `engram` process with SIGTERM: whether it exited cleanly, and its log.
pub fn stop(mut child: std::process::Child) -> (bool, String) {
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().expect("the process ends");
    let mut log = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        std::io::Read::read_to_string(&mut stderr, &mut log).expect("its log reads");
    }
    (status.success(), log)
}

impl TestApp {
    /// A new key for `tenant` with `scopes` (comma-separated).
    pub async fn key(&self, tenant: &str, scopes: &str) -> String {
        let scopes: Vec<Scope> = auth::parse_scopes(scopes).unwrap();
        let key = auth::NewKey::new(TenantId::parse(tenant).unwrap(), &scopes);
        auth::create_key(&self.db.pool, &key).await.unwrap().secret
    }

    /// A new key for `tenant` with `scopes`, bound to `user`.
    pub async fn key_for_user(&self, tenant: &str, scopes: &str, user: &str) -> String {
        let scopes: Vec<Scope> = auth::parse_scopes(scopes).unwrap();
        let mut key = auth::NewKey::new(TenantId::parse(tenant).unwrap(), &scopes);
        key.user = Some(engram_base::domain::UserId::parse(user).unwrap());
        auth::create_key(&self.db.pool, &key).await.unwrap().secret
    }

    pub async fn post_events(&self, key: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(format!("{}/v1/events", self.address))
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .expect("the request reaches the server")
    }

    pub async fn post_raw(&self, key: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
        self.client
            .post(format!("{}/v1/events", self.address))
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap()
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(format!("{}{path}", self.address)).send().await.unwrap()
    }

    pub async fn get_as(&self, key: &str, path: &str) -> reqwest::Response {
        self.client.get(format!("{}{path}", self.address)).bearer_auth(key).send().await.unwrap()
    }

    pub async fn post_as(&self, key: &str, path: &str, body: &Value) -> reqwest::Response {
        self.client.post(format!("{}{path}", self.address)).bearer_auth(key).json(body).send().await.unwrap()
    }

    pub async fn search(&self, key: &str, body: &Value) -> Value {
        let response = self.post_as(key, "/v1/search", body).await;
        assert_eq!(response.status(), 200, "search failed");
        response.json().await.unwrap()
    }

    /// Stores a memory directly, as a consolidation job would, valid from `valid_from`.
    pub async fn remember_at(
        &self,
        tenant: &str,
        user: &str,
        category: &str,
        content: &str,
        valid_from: chrono::DateTime<chrono::Utc>,
    ) -> uuid::Uuid {
        let tenant = TenantId::parse(tenant).unwrap();
        let embedding = self.embedder.embed_one(content).await.unwrap();
        let memory = engram_core::memories::NewMemory {
            user_id: engram_base::domain::UserId::parse(user).unwrap(),
            kind: engram_core::memories::Kind::Fact,
            category: engram_base::domain::Category::parse(category).expect("a category"),
            key: None,
            value: None,
            content: content.into(),
            importance: 0.6,
            source_event_ids: vec![uuid::Uuid::now_v7()],
            source_quote: Some(content.into()),
            derived_from: vec![],
            valid_from,
            pinned: false,
        };
        let mut tx = self.db.tenant_tx(&tenant).await.unwrap();
        let id = engram_core::memories::insert(
            &mut tx,
            &tenant,
            &memory,
            &embedding,
            self.embedder.model(),
            &engram_core::memories::Change::by("test", None, "test"),
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        id
    }

    pub async fn remember(&self, tenant: &str, user: &str, category: &str, content: &str) -> uuid::Uuid {
        self.remember_at(tenant, user, category, content, chrono::Utc::now()).await
    }

    pub async fn metrics(&self) -> String {
        self.get("/metrics").await.text().await.unwrap()
    }

    /// Events stored for every tenant, read as the service role.
    pub async fn event_count(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM events").fetch_one(&self.db.pool).await.unwrap()
    }
}

/// The `{"error": {...}}` object of a response, checked for shape.
pub async fn error_of(response: reqwest::Response) -> Value {
    let body: Value = response.json().await.expect("errors are JSON");
    let error = body["error"].clone();
    assert!(error["code"].is_string() && error["message"].is_string(), "error shape: {body}");
    error
}

/// Runs the `engram` binary against this test's database.
pub fn engram(app: &TestApp, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(args)
        .env("ENGRAM_DATABASE__URL", &app.database_url)
        .env("ENGRAM_LOG__FILTER", "warn")
        .output()
        .expect("the engram binary runs")
}

/// An OpenAI-compatible chat endpoint on loopback that answers every completion with
/// `content` and a usage of 100 prompt and 20 completion tokens, and the LLM client of it.
pub async fn scripted_llm(content: &str) -> (wiremock::MockServer, std::sync::Arc<engram_base::models::Llm>) {
    let server = wiremock::MockServer::start().await;
    answer_every_completion(&server, content).await;
    let settings = engram_base::configuration::LlmSettings {
        provider: engram_base::configuration::LlmProvider::Openai,
        base_url: Some(server.uri()),
        model: Some("scripted".into()),
        api_key: Some("unused".into()),
        timeout_secs: 10,
        ..Default::default()
    };
    let llm = std::sync::Arc::new(
        engram_base::models::Llm::from_settings(&settings, &Default::default(), Default::default()).unwrap().unwrap(),
    );
    (server, llm)
}

/// Makes `server` answer every completion with `content` (100 + 20 tokens).
pub async fn answer_every_completion(server: &wiremock::MockServer, content: &str) {
    use wiremock::matchers::{method, path};
    server.reset().await;
    wiremock::Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "id": "c1", "object": "chat.completion", "created": 1, "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        })))
        .mount(server)
        .await;
}

/// The contents of a search's results, lowercased, best first.
pub fn contents_lowercased(found: &Value) -> Vec<String> {
    let results = found["results"].as_array().into_iter().flatten();
    results.map(|r| r["content"].as_str().unwrap_or_default().to_lowercase()).collect()
}
