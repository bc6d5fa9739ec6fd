//! Webhooks, to real receivers on loopback: a signed `memory.created`; a receiver that
//! is down while a memory is deleted gets the signed `memory.deleted`, without content,
//! once it is back, after the change made before it; another tenant's changes and
//! subscriptions stay out of sight; an engram killed with -9 while a delivery is in flight
//! delivers it after restart.

use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::{TestApp, error_of, spawn_app, spawn_app_with, test_settings};

/// A receiver on `listener` that answers every post 200.
async fn receiver(listener: std::net::TcpListener) -> MockServer {
    let server = MockServer::builder().listener(listener).start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200)).mount(&server).await;
    server
}

/// A loopback port nothing listens on yet, and the listener that holds it.
fn port() -> (u16, std::net::TcpListener) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    (listener.local_addr().unwrap().port(), listener)
}

async fn subscribe(app: &TestApp, key: &str, port: u16, events: &[&str]) -> Value {
    let response = app
        .post_as(
            key,
            "/admin/v1/webhooks",
            &json!({"url": format!("http://127.0.0.1:{port}/hooks/engram"), "events": events}),
        )
        .await;
    assert_eq!(response.status(), 201);
    response.json().await.unwrap()
}

/// The bodies `server` received, once it has at least `n`, within 20 s.
async fn received(server: &MockServer, n: usize) -> Vec<(Value, String)> {
    let started = Instant::now();
    loop {
        let requests = server.received_requests().await.unwrap_or_default();
        if requests.len() >= n {
            return requests
                .iter()
                .map(|r| {
                    let signature = r.headers.get("engram-signature").expect("signed").to_str().unwrap().to_owned();
                    (
                        serde_json::from_slice(&r.body).unwrap(),
                        format!("{signature}|{}", String::from_utf8_lossy(&r.body)),
                    )
                })
                .collect();
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{} of {n} deliveries arrived", requests.len());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether `signed` (`header|body`) carries HMAC-SHA256(secret, "t.body").
fn signed_by(secret: &str, signed: &str) -> bool {
    let (header, body) = signed.split_once('|').unwrap();
    let t = header.split(',').find_map(|p| p.strip_prefix("t=")).expect("t=");
    let v1 = header.split(',').find_map(|p| p.strip_prefix("v1=")).expect("v1=");
    let age = chrono::Utc::now().timestamp() - t.parse::<i64>().unwrap();
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    let expected: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    expected == v1 && (0..300).contains(&age)
}

fn worker_settings() -> engram_base::configuration::Settings {
    let mut settings = test_settings();
    settings.server.role = engram_base::configuration::Role::All;
    settings.webhooks.timeout_ms = 2_000;
    settings
}

#[tokio::test]
async fn a_receiver_gets_signed_changes_in_order_even_after_being_down_and_nothing_of_another_tenant() {
    let app = spawn_app_with(worker_settings()).await;
    let (acme, globex) = (app.key("acme", "read,ingest,admin").await, app.key("globex", "read,ingest,admin").await);
    let (acme_port, acme_listener) = port();
    let (globex_port, globex_listener) = port();
    let hook = subscribe(&app, &acme, acme_port, &["memory.created", "memory.deleted"]).await;
    let secret = hook["secret"].as_str().unwrap().to_owned();
    assert!(secret.len() >= 32, "{hook}");
    let theirs = subscribe(&app, &globex, globex_port, &["memory.created", "memory.deleted", "user.deleted"]).await;
    let (acme_receiver, globex_receiver) = (receiver(acme_listener).await, receiver(globex_listener).await);

    let made =
        app.post_as(&acme, "/v1/users/ann/memories", &json!({"content": "Ann keeps bees on her allotment"})).await;
    let memory = made.json::<Value>().await.unwrap()["memory"]["id"].as_str().unwrap().to_owned();
    let got = received(&acme_receiver, 1).await;
    let (body, signed) = &got[0];
    assert_eq!(body["event"], "memory.created");
    assert_eq!((body["tenant_id"].as_str(), body["user_id"].as_str()), (Some("acme"), Some("ann")));
    assert_eq!(body["memory_id"], memory.as_str());
    assert_eq!(body["content"], "Ann keeps bees on her allotment");
    assert!(signed_by(&secret, signed), "the signature checks out: {signed}");
    assert!(!signed_by("whsec_another", signed), "and only under its own secret");

    // Down while another memory is made and the first deleted: the attempts fail, saying
    // why, and the deliveries wait; back up, they arrive signed, in the order they were
    // made, the deletion with ids and no content.
    let address = acme_receiver.address().to_owned();
    drop(acme_receiver);
    let made = app.post_as(&acme, "/v1/users/ann/memories", &json!({"content": "Ann sells honey at the market"})).await;
    let second = made.json::<Value>().await.unwrap()["memory"]["id"].as_str().unwrap().to_owned();
    let deleted = app
        .client
        .delete(format!("{}/v1/users/ann/memories/{memory}", app.address))
        .bearer_auth(&acme)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    let id = hook["id"].as_str().unwrap();
    let started = Instant::now();
    let failed = loop {
        let page: Value = app.get_as(&acme, &format!("/admin/v1/webhooks/{id}/deliveries")).await.json().await.unwrap();
        if let Some(failed) = page["deliveries"].as_array().unwrap().iter().find(|d| d["outcome"] == "failed") {
            break failed.clone();
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no failed attempt recorded: {page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(failed["error"].as_str().unwrap().contains("refused"), "{failed}");
    let listed: Value = app.get_as(&acme, "/admin/v1/webhooks").await.json().await.unwrap();
    assert_eq!(listed["webhooks"][0]["pending"], 2, "{listed}");
    assert!(listed["webhooks"][0].get("secret").is_none(), "a listing never shows the secret");
    let back = receiver(std::net::TcpListener::bind(address).unwrap()).await;
    let got = received(&back, 2).await;
    assert_eq!(got[0].0["event"], "memory.created");
    assert_eq!(got[0].0["memory_id"], second.as_str());
    let (body, signed) = &got[1];
    assert_eq!(body["event"], "memory.deleted");
    assert_eq!(body["memory_id"], memory.as_str());
    assert_eq!(body["status"], "deleted", "{body}");
    assert!(body.get("content").is_none(), "a deletion carries ids only: {body}");
    assert!(signed_by(&secret, signed) && signed_by(&secret, &got[0].1));
    let metrics = app.metrics().await;
    assert!(metrics.contains("engram_webhook_deliveries_total{outcome=\"failed\"}"), "{metrics}");
    assert!(metrics.contains("engram_webhook_outbox_age_seconds"), "{metrics}");

    // The other tenant got nothing of acme's, and cannot see, delete or read acme's hook.
    assert!(globex_receiver.received_requests().await.unwrap().is_empty());
    let listed: Value = app.get_as(&globex, "/admin/v1/webhooks").await.json().await.unwrap();
    let ids: Vec<&str> = listed["webhooks"].as_array().unwrap().iter().map(|w| w["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [theirs["id"].as_str().unwrap()]);
    let response = app.get_as(&globex, &format!("/admin/v1/webhooks/{id}/deliveries")).await;
    assert_eq!(response.status(), 404);
    let response =
        app.client.delete(format!("{}/admin/v1/webhooks/{id}", app.address)).bearer_auth(&globex).send().await.unwrap();
    assert_eq!(response.status(), 404);
    // A user deleted in globex reaches globex's receiver, with the user's id only.
    assert_eq!(
        app.post_as(&globex, "/v1/users/gil/memories", &json!({"content": "Gil rows at dawn"})).await.status(),
        201
    );
    received(&globex_receiver, 1).await;
    let response =
        app.client.delete(format!("{}/admin/v1/users/gil", app.address)).bearer_auth(&globex).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let got = received(&globex_receiver, 2).await;
    let events: Vec<&str> = got.iter().map(|(b, _)| b["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["memory.created", "user.deleted"], "in order");
    assert_eq!(got[1].0["user_id"], "gil");
}

#[tokio::test]
async fn a_subscription_is_checked_before_it_is_stored() {
    let mut settings = test_settings();
    settings.webhooks.allowed_hosts = vec!["hooks.example.com".into(), "*.example.org".into()];
    let app = spawn_app_with(settings).await;
    let key = app.key("acme", "admin").await;
    let refused = |body: Value| {
        let (app, key) = (&app, &key);
        async move {
            let response = app.post_as(key, "/admin/v1/webhooks", &body).await;
            assert_eq!(response.status(), 400, "{body}");
            error_of(response).await["field"].as_str().unwrap().to_owned()
        }
    };
    assert_eq!(refused(json!({"url": "http://127.0.0.1:9/x", "events": ["memory.created"]})).await, "url");
    assert_eq!(refused(json!({"url": "ftp://hooks.example.com/x", "events": ["memory.created"]})).await, "url");
    assert_eq!(refused(json!({"url": "https://hooks.example.com/x", "events": []})).await, "events");
    assert_eq!(refused(json!({"url": "https://hooks.example.com/x", "events": ["memory.eaten"]})).await, "events[0]");
    let ok = app
        .post_as(&key, "/admin/v1/webhooks", &json!({"url": "https://a.b.example.org/x", "events": ["job.failed"]}))
        .await;
    assert_eq!(ok.status(), 201);
    let bound = app.key_for_user("acme", "admin", "ann").await;
    assert_eq!(
        app.get_as(&bound, "/admin/v1/webhooks").await.status(),
        403,
        "a key bound to one user sees no tenant-wide hook"
    );
    let reader = app.key("acme", "read").await;
    assert_eq!(app.get_as(&reader, "/admin/v1/webhooks").await.status(), 403);
}

#[tokio::test]
async fn a_delivery_survives_engram_killed_while_it_is_in_flight() {
    let app = spawn_app().await;
    let key = app.key("acme", "read,ingest,admin").await;
    // A receiver that takes the connection and never answers: the attempt is in flight.
    let (port, stalled) = port();
    let hook = subscribe(&app, &key, port, &["memory.created"]).await;
    let jobs = tempfile::tempdir().unwrap();
    let worker = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(["serve", "--role", "worker", "--bind", "127.0.0.1:0"])
            .env("ENGRAM_DATABASE__URL", &app.database_url)
            .env("ENGRAM_JOBS__DIR", jobs.path())
            .env("ENGRAM_WEBHOOKS__TIMEOUT_MS", "2000")
            .env("ENGRAM_LOG__FILTER", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("engram starts")
    };
    let mut first = worker();
    let made = app.post_as(&key, "/v1/users/ann/memories", &json!({"content": "Ann's allotment is plot 14"})).await;
    assert_eq!(made.status(), 201);
    // The worker took the delivery and waits for the receiver's answer: killed then.
    let started = Instant::now();
    loop {
        let leased: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_outbox WHERE attempts > 0")
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
        if leased > 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the worker never took the delivery");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let recorded: i64 =
        sqlx::query_scalar("SELECT count(*) FROM webhook_deliveries").fetch_one(&app.db.pool).await.unwrap();
    assert_eq!(recorded, 0, "killed before the attempt ended");
    drop(stalled);
    let back = receiver(std::net::TcpListener::bind(("127.0.0.1", port)).unwrap()).await;
    let second = worker();
    let got = received(&back, 1).await;
    crate::helpers::stop(second);
    assert_eq!(got[0].0["event"], "memory.created");
    assert_eq!(got[0].0["content"], "Ann's allotment is plot 14");
    assert!(signed_by(hook["secret"].as_str().unwrap(), &got[0].1));
    let waiting: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_outbox").fetch_one(&app.db.pool).await.unwrap();
    assert_eq!(waiting, 0, "delivered once and gone from the outbox");
    let attempts: Vec<(i32, String)> =
        sqlx::query_as("SELECT attempt, outcome FROM webhook_deliveries").fetch_all(&app.db.pool).await.unwrap();
    assert_eq!(attempts, [(2, "delivered".to_owned())], "the killed attempt's lease ran out, the next delivered");
}
