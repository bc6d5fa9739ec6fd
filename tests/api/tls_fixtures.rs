//! What the TLS tests stand on: a throwaway CA made with openssl, an HTTPS
//! OpenAI-compatible model server (embeddings, chat, models, rerank) on loopback, and a
//! PostgreSQL that speaks TLS only (Debian's PostgreSQL 15: the embedded wheel's server is
//! built without SSL).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use actix_web::{App, HttpResponse, HttpServer, web};
use serde_json::{Value, json};

/// A certificate authority of the test's own, and the certificates it signs.
pub struct Pki {
    pub dir: tempfile::TempDir,
    pub ca: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl runs");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

impl Pki {
    /// A CA named `name` (its files `name.pem`, `name.key`).
    pub fn new(name: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (key, pem) = (format!("ca-{name}.key"), format!("ca-{name}.pem"));
        let subject = format!("/CN={name} test CA");
        openssl(
            dir.path(),
            &[
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &pem, "-days", "2", "-subj",
                &subject,
            ],
        );
        let ca = dir.path().join(pem);
        Self { dir, ca }
    }

    /// A server certificate and key for `alt_names` (`IP:127.0.0.1,DNS:localhost`),
    /// valid for `days` (0 makes one that expired a moment after it was made).
    pub fn server_cert(&self, file: &str, alt_names: &str, days: i32) -> (PathBuf, PathBuf) {
        let d = self.dir.path();
        let (key, csr, pem, ext) =
            (format!("{file}.key"), format!("{file}.csr"), format!("{file}.pem"), format!("{file}.ext"));
        openssl(
            d,
            &["req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj", "/CN=test server"],
        );
        std::fs::write(d.join(&ext), format!("subjectAltName={alt_names}\n")).unwrap();
        let ca_key = self.ca.with_extension("key");
        let ca_key = ca_key.to_str().unwrap();
        let days = days.to_string();
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                self.ca.to_str().unwrap(),
                "-CAkey",
                ca_key,
                "-CAcreateserial",
                "-out",
                &pem,
                "-days",
                &days,
                "-extfile",
                &ext,
            ],
        );
        (d.join(pem), d.join(key))
    }
}

/// Requests the model stub answered, by endpoint.
#[derive(Default)]
pub struct Calls {
    pub embeddings: AtomicUsize,
    pub chat: AtomicUsize,
    pub rerank: AtomicUsize,
    /// The `traceparent` headers requests came with.
    pub traceparents: std::sync::Mutex<Vec<String>>,
}

impl Calls {
    fn saw(&self, request: &actix_web::HttpRequest) {
        if let Some(parent) = request.headers().get("traceparent").and_then(|v| v.to_str().ok()) {
            self.traceparents.lock().unwrap().push(parent.to_owned());
        }
    }
}

pub struct ModelStub {
    /// `https://127.0.0.1:PORT/v1`
    pub base_url: String,
    pub calls: Arc<Calls>,
}

/// The stub's embedding: a bag of words hashed into 8 dimensions, so texts that share
/// words are near.
fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.01f32; 8];
    for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2) {
        let h = word.bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
        v[(h % 8) as usize] += 1.0;
    }
    v
}

async fn embeddings(
    calls: web::Data<Arc<Calls>>,
    request: actix_web::HttpRequest,
    body: web::Json<Value>,
) -> HttpResponse {
    calls.embeddings.fetch_add(1, Ordering::SeqCst);
    calls.saw(&request);
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().map(|i| i.as_str().unwrap_or_default().to_owned()).collect(),
        _ => Vec::new(),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": vector(text)}))
        .collect();
    HttpResponse::Ok().json(json!({"object": "list", "data": data, "model": "stub-embed",
        "usage": {"prompt_tokens": 1, "total_tokens": 1}}))
}

async fn chat(calls: web::Data<Arc<Calls>>, request: actix_web::HttpRequest) -> HttpResponse {
    calls.chat.fetch_add(1, Ordering::SeqCst);
    calls.saw(&request);
    HttpResponse::Ok().json(json!({
        "id": "c1", "object": "chat.completion", "created": 1, "model": "stub-chat",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "{\"facts\": []}"}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
    }))
}

async fn rerank(calls: web::Data<Arc<Calls>>, body: web::Json<Value>) -> HttpResponse {
    calls.rerank.fetch_add(1, Ordering::SeqCst);
    let n = body["documents"].as_array().map_or(0, Vec::len);
    HttpResponse::Ok().json((0..n).map(|i| json!({"index": i, "score": 1.0 / (1.0 + i as f64)})).collect::<Vec<_>>())
}

/// The stub serving HTTPS with `cert` and `key` on a free loopback port.
pub fn start_model_stub(cert: &Path, key: &Path) -> ModelStub {
    let calls = Arc::new(Calls::default());
    let data = web::Data::new(calls.clone());
    let config = engram_base::tls::server_config(cert, key).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/v1/embeddings", web::post().to(embeddings))
            .route("/v1/chat/completions", web::post().to(chat))
            .route("/v1/rerank", web::post().to(rerank))
            .route(
                "/v1/models",
                web::get()
                    .to(|| async { HttpResponse::Ok().json(json!({"object": "list", "data": [{"id": "stub"}]})) }),
            )
    })
    .workers(1)
    .listen_rustls_0_23(listener, config)
    .unwrap()
    .run();
    tokio::spawn(server);
    ModelStub { base_url: format!("https://127.0.0.1:{port}/v1"), calls }
}

/// A loopback port nothing listens on.
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A PostgreSQL 15 that accepts TLS connections only, from the loopback address.
pub struct TlsPostgres {
    pub port: u16,
    data: tempfile::TempDir,
    bin: PathBuf,
}

/// As root, PostgreSQL runs as the unprivileged user `scripts/bootstrap` created.
fn as_server_user(program: &Path) -> Command {
    let root = unsafe { libc::geteuid() } == 0;
    let mut command = if root { Command::new("runuser") } else { Command::new(program) };
    if root {
        command.args(["-u", "engram-pg", "--"]).arg(program);
    }
    command
}

impl TlsPostgres {
    pub fn start(cert: &Path, key: &Path) -> Self {
        let bin = PathBuf::from(
            std::env::var("ENGRAM_TEST_PG15_BIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into()),
        );
        let data = tempfile::Builder::new().prefix("engram-tls-pg").tempdir_in("/tmp").unwrap();
        let dir = data.path().join("data");
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            assert!(Command::new("chown").args(["engram-pg"]).arg(data.path()).status().unwrap().success());
        }
        let out = as_server_user(&bin.join("initdb"))
            .args(["-D", dir.to_str().unwrap(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-instructions"])
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        std::fs::copy(cert, dir.join("server.crt")).unwrap();
        std::fs::copy(key, dir.join("server.key")).unwrap();
        std::fs::write(
            dir.join("pg_hba.conf"),
            "hostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n",
        )
        .unwrap();
        if root {
            assert!(Command::new("chown").args(["-R", "engram-pg"]).arg(&dir).status().unwrap().success());
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("server.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        let port = closed_port();
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c ssl=on \
             -c ssl_cert_file=server.crt -c ssl_key_file=server.key -c fsync=off"
        );
        let out = as_server_user(&bin.join("pg_ctl"))
            .args(["-D", dir.to_str().unwrap(), "-l", dir.join("log").to_str().unwrap(), "-w", "-o", &options, "start"])
            .output()
            .unwrap();
        let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
        assert!(out.status.success(), "pg_ctl start: {}\n{log}", String::from_utf8_lossy(&out.stderr));
        Self { port, data, bin }
    }
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        let dir = self.data.path().join("data");
        let _ = as_server_user(&self.bin.join("pg_ctl"))
            .args(["-D", dir.to_str().unwrap(), "-m", "immediate", "-w", "stop"])
            .output();
    }
}
