//! TLS on every connection engram makes or serves, with a CA made in the test: HTTPS
//! model endpoints trusted through `tls.ca_file` and refused, in plain words, without
//! it; PostgreSQL's `sslmode` and `sslrootcert`; and engram serving HTTPS itself.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use engram_base::configuration::{EmbeddingProvider, EmbeddingSettings, LlmProvider, LlmSettings, Settings};
use engram_base::metrics::Metrics;
use engram_base::models::{Embedder, Llm, ModelError, Prompt, TokenBudget};
use engram_base::tls::{ConnectFailure, Trust};
use serde_json::{Value, json};

use crate::helpers::{spawn_app_with, test_settings};
use crate::tls_fixtures::{ModelStub, Pki, TlsPostgres, closed_port, start_model_stub};

const LOOPBACK: &str = "IP:127.0.0.1,DNS:localhost";

fn embeddings_at(base_url: &str) -> EmbeddingSettings {
    EmbeddingSettings {
        provider: EmbeddingProvider::Openai,
        base_url: Some(base_url.into()),
        model: Some("stub-embed".into()),
        api_key: Some("sk-stub".into()),
        dimensions: Some(8),
        timeout_secs: 5,
        ..Default::default()
    }
}

fn llm_at(base_url: &str) -> LlmSettings {
    LlmSettings {
        provider: LlmProvider::Openai,
        base_url: Some(base_url.into()),
        model: Some("stub-chat".into()),
        api_key: Some("sk-stub".into()),
        timeout_secs: 5,
        ..Default::default()
    }
}

/// Every model endpoint on `stub`, trusting `ca_file` when given.
fn settings_for(stub: &ModelStub, ca_file: Option<&std::path::Path>) -> Settings {
    let mut settings = test_settings();
    settings.embeddings = embeddings_at(&stub.base_url);
    settings.llm = llm_at(&stub.base_url);
    settings.rerank.url = Some(stub.base_url.clone());
    settings.tls.ca_file = ca_file.map(Into::into);
    settings
}

fn a_prompt() -> Prompt {
    Prompt::parse("t", "Answer in JSON.\n<!-- user -->\nHello", json!({"type": "object"})).unwrap()
}

async fn embed_error(settings: &EmbeddingSettings, trust: &Trust) -> ModelError {
    let embedder = Embedder::from_settings(settings, ".engram".as_ref(), trust, Metrics::new()).unwrap();
    embedder.embed(&["anything".to_owned()]).await.unwrap_err()
}

#[tokio::test(flavor = "multi_thread")]
async fn https_model_endpoints_signed_by_a_private_ca_serve_once_tls_ca_file_names_it() {
    let pki = Pki::new("models");
    let (cert, key) = pki.server_cert("stub", LOOPBACK, 2);
    let stub = start_model_stub(&cert, &key);
    let app = spawn_app_with(settings_for(&stub, Some(&pki.ca))).await;
    let key = app.key("acme", "read,ingest").await;

    for content in ["The billing service keeps its ledger in CockroachDB", "The billing team reviews the ledger weekly"]
    {
        let stored = app.post_as(&key, "/v1/users/ana/memories", &json!({"content": content})).await;
        assert_eq!(stored.status(), 201, "{}", stored.text().await.unwrap());
    }
    let found =
        app.search(&key, &json!({"user_id": "ana", "query": "billing ledger CockroachDB", "min_score": 0})).await;

    assert!(found["results"][0]["content"].as_str().unwrap().contains("CockroachDB"), "{found}");
    assert!(stub.calls.embeddings.load(Ordering::SeqCst) >= 2, "the memory and the query were embedded over HTTPS");
    assert!(stub.calls.rerank.load(Ordering::SeqCst) >= 1, "the rerank stage was asked over HTTPS");
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 200, "{}", ready.text().await.unwrap());

    let llm = Llm::from_settings(&llm_at(&stub.base_url), &Trust::new(Some(pki.ca.as_path())).unwrap(), Metrics::new())
        .unwrap()
        .unwrap();
    let prompt = a_prompt();
    let answer: Value = llm.complete("test", &prompt, &HashMap::new(), &TokenBudget::new(None)).await.unwrap();
    assert_eq!(answer, json!({"facts": []}));
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_ca_every_model_endpoint_fails_naming_the_unknown_authority() {
    let pki = Pki::new("models");
    let (cert, key) = pki.server_cert("stub", LOOPBACK, 2);
    let stub = start_model_stub(&cert, &key);
    let app = spawn_app_with(settings_for(&stub, None)).await;

    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 503);
    let body = ready.text().await.unwrap();
    let endpoint = stub.base_url.trim_end_matches("/v1");
    for named in ["embeddings endpoint", "LLM endpoint", "unknown certificate authority", endpoint] {
        assert!(body.contains(named), "/readyz names {named:?}: {body}");
    }
    assert!(!body.contains("0 attempt"), "{body}");
    assert_eq!(stub.calls.embeddings.load(Ordering::SeqCst), 0, "no request got through");

    let metrics = Metrics::new();
    let llm = Llm::from_settings(&llm_at(&stub.base_url), &Trust::default(), metrics.clone()).unwrap().unwrap();
    let prompt = a_prompt();
    let err = llm.complete::<Value>("test", &prompt, &HashMap::new(), &TokenBudget::new(None)).await.unwrap_err();
    assert!(matches!(&err, ModelError::Connect { cause: ConnectFailure::UnknownAuthority, .. }), "{err}");
    let exposed = metrics.render();
    assert!(
        exposed.lines().any(|l| l.starts_with("engram_llm_requests_total")
            && l.contains("status=\"tls_error\"")
            && l.ends_with(" 1")),
        "{exposed}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_log_of_a_serving_engram_names_the_tls_failure() {
    let pki = Pki::new("models");
    let (cert, key) = pki.server_cert("stub", LOOPBACK, 2);
    let stub = start_model_stub(&cert, &key);
    let (_db, url) = crate::helpers::fresh_database().await;
    let port = closed_port();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["serve", "--role", "api", "--bind", &format!("127.0.0.1:{port}")])
        .env("ENGRAM_DATABASE__URL", &url)
        .env("ENGRAM_LOG__FILTER", "warn")
        .env("ENGRAM_EMBEDDINGS__PROVIDER", "openai")
        .env("ENGRAM_EMBEDDINGS__BASE_URL", &stub.base_url)
        .env("ENGRAM_EMBEDDINGS__MODEL", "stub-embed")
        .env("ENGRAM_EMBEDDINGS__DIMENSIONS", "8")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = crate::helpers::first_readiness(port).await;
    let (stopped, log) = crate::helpers::stop(child);
    assert_eq!(status, 503, "{log}");
    assert!(stopped, "{log}");
    assert!(log.contains("unknown certificate authority"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_name_an_expired_certificate_and_a_closed_port_are_each_named() {
    let pki = Pki::new("models");
    let trust = Trust::new(Some(pki.ca.as_path())).unwrap();
    let (cert, key) = pki.server_cert("elsewhere", "DNS:models.example.com", 2);
    let wrong_name = start_model_stub(&cert, &key);
    let (cert, key) = pki.server_cert("expired", LOOPBACK, 0);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let expired = start_model_stub(&cert, &key);
    let closed = format!("https://127.0.0.1:{}/v1", closed_port());

    for (base_url, cause, words) in [
        (&wrong_name.base_url, ConnectFailure::NameMismatch, "certificate name mismatch"),
        (&expired.base_url, ConnectFailure::Expired, "certificate has expired"),
        (&closed, ConnectFailure::Refused, "connection refused"),
    ] {
        let err = embed_error(&embeddings_at(base_url), &trust).await;
        let text = err.to_string();
        assert!(matches!(&err, ModelError::Connect { cause: c, .. } if *c == cause), "{base_url}: {text}");
        assert!(text.contains(words) && text.contains("127.0.0.1"), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn engram_serves_https_with_its_own_certificate() {
    let pki = Pki::new("engram");
    let (cert, key) = pki.server_cert("engram", LOOPBACK, 2);
    let mut settings = test_settings();
    settings.server.tls_cert = Some(cert);
    settings.server.tls_key = Some(key);
    let app = spawn_app_with(settings).await;
    let https = app.address.replace("http://", "https://");

    let trusting = crate::helpers::http_builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&std::fs::read(&pki.ca).unwrap()).unwrap()])
        .build()
        .unwrap();
    let health = trusting.get(format!("{https}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);

    let curl = |extra: &[&str]| {
        std::process::Command::new("curl")
            .args(["-sS", "--max-time", "10"])
            .args(extra)
            .arg(format!("{https}/healthz"))
            .output()
            .unwrap()
    };
    let with_ca = curl(&["--cacert", pki.ca.to_str().unwrap()]);
    assert!(with_ca.status.success(), "{}", String::from_utf8_lossy(&with_ca.stderr));
    assert!(String::from_utf8_lossy(&with_ca.stdout).contains("ok"));
    assert!(!curl(&[]).status.success(), "an unknown CA is refused by curl");
    let plain = app.client.get(format!("{}/healthz", app.address)).send().await;
    assert!(plain.is_err() || !plain.unwrap().status().is_success(), "plain HTTP is not served on the TLS port");
}

/// `engram migrate` against the TLS-only PostgreSQL with `url`, and what it printed.
fn migrate(url: &str, env: &[(&str, &str)]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("migrate")
        .env("ENGRAM_DATABASE__URL", url)
        .env("ENGRAM_LOG__FILTER", "error")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(!out.status.success(), "the server has no pgvector, so migrate cannot finish");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Past the handshake, the server answers queries: it lacks only pgvector.
const CONNECTED: &str = "lacks the pgvector extension";

#[test]
fn postgres_sslmode_and_sslrootcert_mean_what_they_mean_to_libpq() {
    let pki = Pki::new("db");
    let other = Pki::new("other");
    let (cert, key) = pki.server_cert("db", "DNS:db.internal.example", 2);
    let server = TlsPostgres::start(&cert, &key);
    let base = format!("postgres://postgres@127.0.0.1:{}/postgres", server.port);
    let ca = pki.ca.to_str().unwrap();

    let verify_ca = migrate(&format!("{base}?sslmode=verify-ca&sslrootcert={ca}"), &[]);
    assert!(verify_ca.contains(CONNECTED), "verify-ca with the right CA connects: {verify_ca}");
    let through_setting = migrate(&format!("{base}?sslmode=verify-ca"), &[("ENGRAM_TLS__CA_FILE", ca)]);
    assert!(through_setting.contains(CONNECTED), "tls.ca_file is trusted by PostgreSQL too: {through_setting}");
    let required = migrate(&format!("{base}?sslmode=require"), &[]);
    assert!(required.contains(CONNECTED), "require encrypts without verifying: {required}");

    let wrong_ca = migrate(&format!("{base}?sslmode=verify-full&sslrootcert={}", other.ca.to_str().unwrap()), &[]);
    assert!(wrong_ca.contains("unknown certificate authority") && wrong_ca.contains("database.url"), "{wrong_ca}");
    let wrong_host = migrate(&format!("{base}?sslmode=verify-full&sslrootcert={ca}"), &[]);
    assert!(
        wrong_host.contains("certificate name mismatch"),
        "the certificate names db.internal.example: {wrong_host}"
    );
    let disabled = migrate(&format!("{base}?sslmode=disable"), &[]);
    assert!(disabled.contains("the server requires TLS"), "{disabled}");
}

#[test]
fn postgres_verify_full_connects_when_the_name_matches() {
    let pki = Pki::new("db");
    let (cert, key) = pki.server_cert("db", LOOPBACK, 2);
    let server = TlsPostgres::start(&cert, &key);
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=verify-full&sslrootcert={}",
        server.port,
        pki.ca.to_str().unwrap()
    );
    let out = migrate(&url, &[]);
    assert!(out.contains(CONNECTED), "{out}");
}
