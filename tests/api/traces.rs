//! Traces: a real `engram serve` and `engram job run`, with `telemetry.otlp_endpoint`
//! pointing at a stub OTLP/HTTP receiver on loopback, send spans for a request (a child
//! of the caller's `traceparent`), its statements and model calls, and a job run and its
//! units; the model endpoint receives the trace; no span holds a turn's content.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpResponse, HttpServer, web};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;
use serde_json::json;

use crate::helpers::{fresh_database, http_client};
use crate::tls_fixtures::{Pki, closed_port, start_model_stub};

/// One received span, flattened: its ids in hex, its attributes and its events' as text.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    trace_id: String,
    span_id: String,
    parent: String,
    attributes: HashMap<String, String>,
    events: Vec<(String, HashMap<String, String>)>,
}

fn text(value: &Option<AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn pairs(attributes: &[KeyValue]) -> HashMap<String, String> {
    attributes.iter().map(|kv| (kv.key.clone(), text(&kv.value))).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn receive(spans: web::Data<Arc<Mutex<Vec<Span>>>>, body: web::Bytes) -> HttpResponse {
    let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
    let mut received = spans.lock().unwrap();
    for span in request.resource_spans.iter().flat_map(|r| &r.scope_spans).flat_map(|s| &s.spans) {
        received.push(Span {
            name: span.name.clone(),
            trace_id: hex(&span.trace_id),
            span_id: hex(&span.span_id),
            parent: hex(&span.parent_span_id),
            attributes: pairs(&span.attributes),
            events: span.events.iter().map(|e| (e.name.clone(), pairs(&e.attributes))).collect(),
        });
    }
    HttpResponse::Ok().content_type("application/x-protobuf").body(Vec::<u8>::new())
}

/// A collector's OTLP/HTTP traces endpoint: its base URL and what it received.
fn start_receiver() -> (String, Arc<Mutex<Vec<Span>>>) {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let data = web::Data::new(spans.clone());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server =
        HttpServer::new(move || App::new().app_data(data.clone()).route("/v1/traces", web::post().to(receive)))
            .workers(1)
            .listen(listener)
            .unwrap()
            .run();
    tokio::spawn(server);
    (format!("http://127.0.0.1:{port}"), spans)
}

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const SAID: &str = "I moved the spare key to the allotment shed under the blue watering can";

#[tokio::test(flavor = "multi_thread")]
async fn a_request_its_model_calls_and_a_job_run_arrive_as_linked_spans_without_content() {
    let (collector, spans) = start_receiver();
    let pki = Pki::new("traces");
    let (cert, key) = pki.server_cert("models", "IP:127.0.0.1", 2);
    let models = start_model_stub(&cert, &key);
    let (_db, url) = fresh_database().await;
    let env: Vec<(&str, String)> = vec![
        ("ENGRAM_DATABASE__URL", url.clone()),
        ("ENGRAM_LOG__FILTER", "warn".into()),
        ("ENGRAM_TELEMETRY__OTLP_ENDPOINT", collector.clone()),
        ("ENGRAM_TLS__CA_FILE", pki.ca.display().to_string()),
        ("ENGRAM_EMBEDDINGS__PROVIDER", "openai".into()),
        ("ENGRAM_EMBEDDINGS__BASE_URL", models.base_url.clone()),
        ("ENGRAM_EMBEDDINGS__MODEL", "stub-embed".into()),
        ("ENGRAM_EMBEDDINGS__DIMENSIONS", "8".into()),
        ("ENGRAM_LLM__PROVIDER", "openai".into()),
        ("ENGRAM_LLM__BASE_URL", models.base_url.clone()),
        ("ENGRAM_LLM__MODEL", "stub-chat".into()),
    ];
    let engram = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_engram"));
        command.args(args).envs(env.iter().map(|(k, v)| (*k, v.as_str())));
        command
    };
    let made = engram(&["keys", "create", "--tenant", "acme", "--scope", "read,ingest"]).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let api_key = String::from_utf8(made.stdout).unwrap().trim().lines().last().unwrap().to_owned();
    let port = closed_port();
    let server = engram(&["serve", "--role", "api", "--bind", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = http_client();
    assert_eq!(crate::helpers::first_readiness(port).await, 200);
    let posted = client
        .post(format!("{base}/v1/events"))
        .bearer_auth(&api_key)
        .json(&json!({"user_id": "june", "role": "user", "content": SAID}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 202);
    let searched = client
        .post(format!("{base}/v1/search"))
        .bearer_auth(&api_key)
        .header("traceparent", format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
        .json(&json!({"user_id": "june", "query": "where is the shed key?", "kinds": ["event"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(searched.status(), 200);
    let ran = engram(&["job", "run", "extract_facts"]).output().unwrap();
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    let (stopped, log) = crate::helpers::stop(server);
    assert!(stopped, "{log}");

    let mut received = Vec::new();
    for _ in 0..100 {
        received = spans.lock().unwrap().clone();
        if received.iter().any(|s| s.name == "POST /v1/search") && received.iter().any(|s| s.name.starts_with("job ")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let by_id: HashMap<&str, &Span> = received.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let descends = |span: &Span, ancestor: &Span| {
        let mut at = span;
        while let Some(parent) = by_id.get(at.parent.as_str()) {
            if parent.span_id == ancestor.span_id {
                return true;
            }
            at = parent;
        }
        false
    };

    let request = received.iter().find(|s| s.name == "POST /v1/search").expect("the request's span arrived");
    assert_eq!(
        (request.trace_id.as_str(), request.parent.as_str()),
        (CALLER_TRACE, CALLER_SPAN),
        "a child of the caller"
    );
    assert_eq!(request.attributes["http.response.status_code"], "200");
    let embedding = received
        .iter()
        .find(|s| {
            s.trace_id == CALLER_TRACE
                && s.attributes.get("gen_ai.request.model").map(String::as_str) == Some("stub-embed")
        })
        .expect("the query's embedding call is in the caller's trace");
    assert!(descends(embedding, request), "the model call is below the request");
    assert_eq!(embedding.attributes["outcome"], "ok");
    let statements: Vec<_> = received
        .iter()
        .filter(|s| s.trace_id == CALLER_TRACE)
        .flat_map(|s| &s.events)
        .filter(|(_, attributes)| attributes.contains_key("rows_returned"))
        .collect();
    assert!(!statements.is_empty(), "the lookup's statements are events with their row counts");
    let sent_on = models.calls.traceparents.lock().unwrap().clone();
    assert!(sent_on.iter().any(|p| p.contains(CALLER_TRACE)), "the model endpoint got the trace: {sent_on:?}");

    let run = received.iter().find(|s| s.name == "job extract_facts").expect("the job run's span arrived");
    let unit = received.iter().find(|s| s.name == "extract_facts unit").expect("a unit's span arrived");
    assert!(descends(unit, run), "the unit is below its run");
    let names: Vec<&str> = received.iter().map(|s| s.name.as_str()).collect();
    let llm = received.iter().find(|s| s.name == "llm stub-chat").unwrap_or_else(|| {
        panic!(
            "the LLM call's span arrived: {names:?}, chat calls {}",
            models.calls.chat.load(std::sync::atomic::Ordering::SeqCst)
        )
    });
    assert!(descends(llm, unit), "the LLM call is below its unit");
    assert_eq!(llm.attributes["purpose"], "extract_facts");
    assert!(llm.attributes.contains_key("gen_ai.usage.input_tokens"), "{:?}", llm.attributes);

    for span in &received {
        let texts = span.attributes.values().chain(span.events.iter().flat_map(|(name, a)| a.values().chain([name])));
        for value in texts {
            assert!(
                !value.contains("watering can") && !value.contains("allotment"),
                "{} holds content: {value}",
                span.name
            );
        }
    }
}
