//! Running engram for real: per-key rate limits, a tenant's daily LLM budget, CORS for
//! browser clients, metrics on a listener of their own, and lookups on a streaming
//! standby.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use engram_base::configuration::{RateLimit, Settings};
use engram_base::db::Database;
use engram_server::startup::Application;
use serde_json::{Value, json};

use crate::helpers::{TestApp, engram, error_of, spawn_app_with, test_settings};

fn search_body() -> Value {
    json!({"user_id": "ann", "query": "which database"})
}

#[tokio::test]
async fn a_key_past_its_rate_limit_gets_429_with_retry_after() {
    let mut settings = test_settings();
    settings.server.rate_limit = Some(RateLimit::parse("4/m").unwrap());
    let app = spawn_app_with(settings).await;
    let created = engram(&app, &["keys", "create", "--tenant", "acme", "--scope", "read", "--rate-limit", "2/m"]);
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let limited = String::from_utf8(created.stdout).unwrap().lines().last().unwrap().to_owned();
    let bad = engram(&app, &["keys", "create", "--tenant", "acme", "--rate-limit", "lots"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--rate-limit"), "a bad rate is named");
    let ordinary = app.key("acme", "read").await;

    let statuses = |key: String, n: usize| {
        let app = &app;
        async move {
            let mut out = Vec::new();
            for _ in 0..n {
                out.push(app.post_as(&key, "/v1/search", &search_body()).await);
            }
            out
        }
    };
    let mut own = statuses(limited.clone(), 3).await;
    let default = statuses(ordinary.clone(), 5).await;

    assert_eq!(own.iter().map(|r| r.status().as_u16()).collect::<Vec<_>>(), [200, 200, 429], "the key's own 2/m");
    assert_eq!(
        default.iter().map(|r| r.status().as_u16()).collect::<Vec<_>>(),
        [200, 200, 200, 200, 429],
        "server.rate_limit 4/m"
    );
    let refused = own.pop().unwrap();
    let retry_after: u64 = refused.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=30).contains(&retry_after), "one request every 30 s: {retry_after}");
    assert_eq!(error_of(refused).await["code"], "rate_limited");
    let metrics = app.metrics().await;
    assert!(
        metrics.contains(r#"engram_http_requests_total{method="POST",route="/v1/search",status="429"} 2"#),
        "{metrics}"
    );
    let listed = engram(&app, &["keys", "list", "--json"]);
    let keys: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(keys.as_array().unwrap().iter().any(|k| k["rate_limit"] == "2/m"), "{keys}");
}

#[tokio::test]
async fn cors_answers_preflights_for_the_configured_origins_only() {
    let mut settings = test_settings();
    settings.server.cors_origins = vec!["https://app.example.com".into()];
    let app = spawn_app_with(settings).await;
    let preflight = |origin: &'static str| {
        app.client
            .request(reqwest::Method::OPTIONS, format!("{}/v1/search", app.address))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "authorization, content-type")
            .send()
    };

    let allowed = preflight("https://app.example.com").await.unwrap();
    let other = preflight("https://evil.example.com").await.unwrap();

    assert!(allowed.status().is_success(), "{}", allowed.status());
    assert_eq!(allowed.headers()["access-control-allow-origin"], "https://app.example.com");
    let headers = allowed.headers()["access-control-allow-headers"].to_str().unwrap().to_ascii_lowercase();
    assert!(headers.contains("authorization") && headers.contains("content-type"), "{headers}");
    assert!(other.headers().get("access-control-allow-origin").is_none());
    let key = app.key("acme", "read").await;
    let actual = app
        .client
        .post(format!("{}/v1/search", app.address))
        .bearer_auth(&key)
        .header("origin", "https://app.example.com")
        .json(&search_body())
        .send()
        .await
        .unwrap();
    assert_eq!(actual.headers()["access-control-allow-origin"], "https://app.example.com");
    assert!(actual.headers()["access-control-expose-headers"].to_str().unwrap().contains("x-request-id"));

    let plain = spawn_app_with(test_settings()).await;
    let response = plain
        .client
        .get(format!("{}/healthz", plain.address))
        .header("origin", "https://app.example.com")
        .send()
        .await
        .unwrap();
    assert!(response.headers().get("access-control-allow-origin").is_none(), "no origins configured, no CORS headers");
}

#[tokio::test]
async fn metrics_can_have_a_listener_of_their_own() {
    let (db, _) = crate::helpers::fresh_database().await;
    let mut settings = test_settings();
    settings.server.metrics_bind = Some("127.0.0.1:0".into());
    let app = Application::build(settings, db).await.unwrap();
    let (api, metrics) = (app.port(), app.metrics_port().expect("a metrics listener"));
    tokio::spawn(app.run_until_stopped());

    let there = crate::helpers::http_client().get(format!("http://127.0.0.1:{metrics}/metrics")).send().await.unwrap();
    let here = crate::helpers::http_client().get(format!("http://127.0.0.1:{api}/metrics")).send().await.unwrap();

    assert_eq!(there.status(), 200);
    assert!(there.text().await.unwrap().contains("engram_lookups_total"));
    assert_eq!(here.status(), 404, "the API port serves no metrics then");
    assert_eq!(
        crate::helpers::http_client()
            .get(format!("http://127.0.0.1:{metrics}/v1/search"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
}

#[tokio::test]
async fn a_tenants_daily_llm_budget_holds_its_units_until_the_next_day() {
    let app = crate::helpers::spawn_app().await;
    let key_a = app.key("tenant-a", "ingest").await;
    let key_b = app.key("tenant-b", "ingest").await;
    let (_server, llm) =
        crate::helpers::scripted_llm(r#"{"summary": "They planned the release.", "topics": ["release"]}"#).await;
    let dir = crate::jobs::job_dir(&[("summarize_sessions", "schedule = \"0 0 * * * *\"")]);
    let mut executor = crate::jobs::executor_with(&app.db, &dir, Some(llm));
    executor.settings.tenant_daily_llm_tokens = Some(100);
    let session = |user: &str, session: &str| json!({"events": [{"user_id": user, "session_id": session, "role": "user", "content": "We planned the release for Friday.", "created_at": "2026-11-01T10:00:00Z"}]});
    app.post_events(&key_a, &session("ann", "s1")).await;
    let first = crate::jobs::run(&executor, "summarize_sessions", engram_core::jobs::Scope::all(), false).await;
    app.post_events(&key_a, &session("bo", "s2")).await;
    app.post_events(&key_b, &session("cy", "s3")).await;

    let second = crate::jobs::run(&executor, "summarize_sessions", engram_core::jobs::Scope::all(), false).await;

    assert_eq!(first.counts["llm_tokens"], 120, "{:?}", first.counts);
    assert_eq!(
        second.counts["skipped_tenant_llm_budget"], 1,
        "tenant A spent its 100 tokens today: {:?}",
        second.counts
    );
    assert_eq!(second.counts["summarized"], 1, "tenant B's unit ran");
    let pending: Vec<String> = sqlx::query_scalar("SELECT user_id FROM sessions WHERE summarized_at IS NULL")
        .fetch_all(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(pending, vec!["bo"], "A's unit waits for tomorrow");
    let spent: i64 = sqlx::query_scalar("SELECT tokens FROM llm_usage WHERE tenant_id = 'tenant-a'")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(spent, 120);
}

/// A PostgreSQL cluster of this test's own, run by the binaries `scripts/test` installs
/// (as the unprivileged server user when the tests run as root).
struct Cluster {
    data: std::path::PathBuf,
    port: u16,
}

impl Cluster {
    fn bin(name: &str) -> Command {
        let dir = std::env::var("ENGRAM_TEST_PG_BIN").expect("ENGRAM_TEST_PG_BIN is set by scripts/test");
        let program = format!("{dir}/{name}");
        if unsafe { libc::geteuid() } == 0 {
            let mut command = Command::new("runuser");
            command.args(["-u", "engram-pg", "--", &program]);
            command
        } else {
            Command::new(program)
        }
    }

    fn run(mut command: Command) {
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "{command:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("engram-cluster-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        if unsafe { libc::geteuid() } == 0 {
            Self::run({
                let mut c = Command::new("chown");
                c.args(["engram-pg"]).arg(&dir);
                c
            });
        }
        dir
    }

    fn start(data: std::path::PathBuf) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut start = Self::bin("pg_ctl");
        start
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(data.join("log"))
            .args(["-w", "-o"])
            .arg(format!("-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off"));
        start.arg("start");
        Self::run(start);
        Self { data, port }
    }

    fn primary() -> Self {
        let data = Self::dir().join("primary");
        let mut init = Self::bin("initdb");
        init.arg("-D").arg(&data).args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-instructions"]);
        Self::run(init);
        Self::start(data)
    }

    /// A streaming standby of `self`, from `pg_basebackup -R`.
    fn standby(&self) -> Self {
        let data = Self::dir().join("standby");
        let mut backup = Self::bin("pg_basebackup");
        backup.arg("-D").arg(&data).args([
            "-R",
            "-X",
            "stream",
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-p",
            &self.port.to_string(),
        ]);
        Self::run(backup);
        Self::start(data)
    }

    fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    fn stop(&self) {
        let mut stop = Self::bin("pg_ctl");
        stop.arg("-D").arg(&self.data).args(["-m", "immediate", "-w", "stop"]);
        let _ = stop.output();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(self.data.parent().unwrap());
    }
}

#[tokio::test]
async fn lookups_are_served_by_a_streaming_standby_and_writes_go_to_the_primary() {
    let primary = Cluster::primary();
    let setup = Database::open(
        &engram_base::configuration::DatabaseSettings { url: Some(primary.url("postgres")), ..Default::default() },
        std::path::Path::new(".engram"),
    )
    .await
    .unwrap();
    setup.migrate().await.unwrap();
    setup.close().await;
    let standby = primary.standby();
    let mut settings: Settings = test_settings();
    settings.database.url = Some(primary.url("postgres"));
    settings.database.read_url = Some(standby.url("postgres"));
    let db = Database::open(&settings.database, std::path::Path::new(".engram")).await.unwrap();
    let built = Application::build(settings, db.clone()).await.unwrap();
    let app = TestApp {
        address: format!("http://127.0.0.1:{}", built.port()),
        access: built.access(),
        embedder: Arc::new(
            engram_base::models::Embedder::from_settings(
                &Default::default(),
                std::path::Path::new(".engram"),
                &Default::default(),
                Default::default(),
            )
            .unwrap(),
        ),
        db: db.clone(),
        database_url: primary.url("postgres"),
        client: crate::helpers::http_client(),
    };
    tokio::spawn(built.run_until_stopped());
    let key = app.key("acme", "read,ingest").await;
    let standby_pool = sqlx::PgPool::connect(&standby.url("postgres")).await.unwrap();
    let replayed = |content: &'static str| {
        let pool = standby_pool.clone();
        async move {
            for _ in 0..200 {
                let n: i64 = sqlx::query_scalar("SELECT count(*) FROM memories WHERE content = $1")
                    .bind(content)
                    .fetch_one(&pool)
                    .await
                    .unwrap();
                if n > 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("the standby did not replay {content}");
        }
    };
    let first = app.remember("acme", "ann", "technical", "Ann's team runs PostgreSQL for every database").await;
    replayed("Ann's team runs PostgreSQL for every database").await;

    // The standby lags: replay paused, a new memory on the primary is not yet there.
    sqlx::query("SELECT pg_wal_replay_pause()").execute(&standby_pool).await.unwrap();
    app.remember("acme", "ann", "technical", "Ann's team moved the database to CockroachDB").await;
    let found =
        app.search(&key, &json!({"user_id": "ann", "query": "which database does the team run", "limit": 5})).await;
    let contents: Vec<&str> =
        found["results"].as_array().unwrap().iter().map(|r| r["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["Ann's team runs PostgreSQL for every database"], "served by the lagging standby");
    // Writes go to the primary while the standby lags.
    let event = json!({"user_id": "ann", "role": "user", "content": "We also keep Redis for caching"});
    assert_eq!(app.post_events(&key, &event).await.status(), 202);
    let feedback =
        app.post_as(&key, "/v1/feedback", &json!({"user_id": "ann", "memory_id": first, "kind": "helpful"})).await;
    assert_eq!(feedback.status(), 201);
    app.access.flush(&app.db.pool).await.unwrap();
    let accesses: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_access").fetch_one(&app.db.pool).await.unwrap();
    assert_eq!(accesses, 1, "access statistics were written to the primary");
    sqlx::query("SELECT pg_wal_replay_resume()").execute(&standby_pool).await.unwrap();
    replayed("Ann's team moved the database to CockroachDB").await;
    let caught_up =
        app.search(&key, &json!({"user_id": "ann", "query": "which database does the team run", "limit": 5})).await;
    assert_eq!(caught_up["results"].as_array().unwrap().len(), 2, "{caught_up}");

    // The standby goes away: lookups answer 503 (retry) — never 500 — and writes go on.
    standby_pool.close().await;
    standby.stop();
    let mut statuses = Vec::new();
    for _ in 0..2 {
        statuses.push(app.post_as(&key, "/v1/search", &search_body()).await.status().as_u16());
    }
    assert!(statuses.iter().all(|s| *s == 503), "lookups without their standby: {statuses:?}");
    assert_eq!(app.post_events(&key, &event).await.status(), 202);
}
