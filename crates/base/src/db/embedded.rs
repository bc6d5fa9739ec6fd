//! The embedded PostgreSQL 18 + pgvector: engram's default database when no
//! `database.url` is configured.
//!
//! The server's files live in `<home>/postgres/` (`data/`, `postgres.log`, `password`).
//! PostgreSQL's own `postmaster.pid` is the state file: a command that finds the
//! server running attaches to it (and leaves it running); otherwise it starts the
//! server on a free loopback port and stops it when done. PostgreSQL refuses to run
//! as root, so under root the server runs as the system user `engram-pg`, which
//! `scripts/bootstrap` creates.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use sqlx::postgres::PgConnectOptions;

const PG_USER: &str = "engram-pg";
const SUPERUSER: &str = "postgres";
const INSTALL_HINT: &str = "run `scripts/bootstrap` to install them";

pub struct EmbeddedPostgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    password: String,
    run_as: Option<(u32, u32)>,
    /// Only the process that started the server stops it.
    started_here: bool,
    shared_buffers: String,
}

impl EmbeddedPostgres {
    /// Initialises the cluster on first use, then attaches to the running server or starts it.
    /// `shared_buffers` is PostgreSQL's setting (`2GB`), applied at every start.
    pub async fn start(home: &Path, bin_dir: Option<&Path>, shared_buffers: &str) -> anyhow::Result<Self> {
        let bin = find_bin_dir(home, bin_dir)?;
        let run_as = run_as()?;
        std::fs::create_dir_all(home).with_context(|| format!("cannot create {}", home.display()))?;
        let home = home.canonicalize()?;
        let root = home.join("postgres");
        let mut server = Self {
            bin,
            data: root.join("data"),
            port: 0,
            password: String::new(),
            run_as,
            started_here: false,
            shared_buffers: shared_buffers.to_owned(),
        };
        if !server.data.join("PG_VERSION").exists() {
            server.init(&home, &root)?;
        }
        server.password = std::fs::read_to_string(root.join("password"))
            .with_context(|| format!("cannot read {}", root.join("password").display()))?
            .trim()
            .to_owned();
        let server = tokio::task::spawn_blocking(move || server.attach_or_start()).await??;
        Ok(server)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Plain TCP on loopback: the embedded server is built without TLS, and asking for it
    /// first would cost every new connection a round trip.
    pub fn connect_options(&self, database: &str) -> PgConnectOptions {
        PgConnectOptions::new()
            .ssl_mode(sqlx::postgres::PgSslMode::Disable)
            .host("127.0.0.1")
            .port(self.port)
            .username(SUPERUSER)
            .password(&self.password)
            .database(database)
    }

    pub async fn create_database(&self, name: &str) -> anyhow::Result<()> {
        super::create_database(&self.connect_options("postgres"), name).await
    }

    /// Stops the server if this process started it.
    pub async fn stop(self) {
        let _ = tokio::task::spawn_blocking(move || drop(self)).await;
    }

    fn init(&self, home: &Path, root: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(root)?;
        let password_file = root.join("password");
        std::fs::write(&password_file, random_password())?;
        std::fs::set_permissions(&password_file, std::fs::Permissions::from_mode(0o600))?;
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700))?;
        if let Some((uid, gid)) = self.run_as {
            // The server's user must reach its data directory through the home directory.
            let mode = std::fs::metadata(home)?.permissions().mode();
            std::fs::set_permissions(home, std::fs::Permissions::from_mode(mode | 0o711))?;
            for path in [root, &password_file] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))?;
            }
        }
        let output = self
            .command("initdb")
            .arg("-D")
            .arg(&self.data)
            .args(["-U", SUPERUSER, "--auth=scram-sha-256", "-E", "UTF8"])
            .args(["--locale-provider=builtin", "--builtin-locale=C.UTF-8", "--no-instructions"])
            .arg(format!("--pwfile={}", password_file.display()))
            .output()
            .context("cannot run initdb")?;
        if !output.status.success() {
            bail!("initdb failed for {}: {}", self.data.display(), String::from_utf8_lossy(&output.stderr).trim());
        }
        let conf = "\n# engram: loopback TCP only\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n";
        let conf_path = self.data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf_path)?;
        text.push_str(conf);
        std::fs::write(&conf_path, text)?;
        Ok(())
    }

    fn attach_or_start(mut self) -> anyhow::Result<Self> {
        self.wait_while_stopping();
        if let Some(port) = self.running_port() {
            self.port = port;
            return Ok(self);
        }
        self.port = free_port()?;
        let log = self.data.parent().expect("data has a parent").join("postgres.log");
        let status = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(&log)
            .args([
                "-w",
                "-t",
                "60",
                "-o",
                &format!("-p {} -c shared_buffers={}", self.port, self.shared_buffers),
                "start",
            ])
            .stdout(std::process::Stdio::null())
            .status()
            .context("cannot run pg_ctl")?;
        if status.success() {
            self.started_here = true;
            return Ok(self);
        }
        // Another engram process may have started it a moment ago.
        if let Some(port) = self.running_port() {
            self.port = port;
            return Ok(self);
        }
        let tail = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = tail.lines().rev().take(5).collect();
        bail!(
            "the embedded PostgreSQL did not start (log {}): {}",
            log.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        )
    }

    /// A server another engram process is stopping refuses connections; wait for it to
    /// be gone (PostgreSQL's `postmaster.pid` says `stopping` meanwhile), then start anew.
    fn wait_while_stopping(&self) {
        let stopping = || {
            std::fs::read_to_string(self.data.join("postmaster.pid"))
                .is_ok_and(|pid_file| pid_file.lines().nth(7).is_some_and(|status| status.trim() == "stopping"))
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while stopping() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// The port of the running server, from its `postmaster.pid`, if it is running.
    fn running_port(&self) -> Option<u16> {
        let running = self
            .command("pg_ctl")
            .arg("status")
            .arg("-D")
            .arg(&self.data)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?
            .success();
        if !running {
            return None;
        }
        let pid_file = std::fs::read_to_string(self.data.join("postmaster.pid")).ok()?;
        pid_file.lines().nth(3)?.trim().parse().ok()
    }

    /// A command for one of PostgreSQL's programs, as the right user and in its own
    /// process group, so a Ctrl-C meant for engram reaches the server only through engram.
    fn command(&self, program: &str) -> Command {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(self.bin.join(program));
        command.process_group(0).current_dir(self.data.parent().expect("data has a parent"));
        if let Some((uid, gid)) = self.run_as {
            command.uid(uid).gid(gid);
        }
        command
    }
}

impl Drop for EmbeddedPostgres {
    fn drop(&mut self) {
        if !self.started_here {
            return;
        }
        self.started_here = false;
        let stopped = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "fast", "-w", "stop"])
            .stdout(std::process::Stdio::null())
            .status();
        if !matches!(stopped, Ok(status) if status.success()) {
            tracing::warn!(data = %self.data.display(), "the embedded PostgreSQL did not stop cleanly");
        }
    }
}

/// `database.pg_bin_dir`, else the `pgbin` link that `scripts/bootstrap` leaves in the
/// home directory or in `./.engram`.
fn find_bin_dir(home: &Path, configured: Option<&Path>) -> anyhow::Result<PathBuf> {
    let candidates: Vec<PathBuf> = match configured {
        Some(dir) => vec![dir.to_path_buf()],
        None => vec![home.join("pgbin"), PathBuf::from(".engram/pgbin")],
    };
    for dir in &candidates {
        if dir.join("postgres").is_file() && dir.join("pg_ctl").is_file() {
            return Ok(dir.canonicalize()?);
        }
    }
    bail!(
        "the embedded PostgreSQL binaries are missing (looked in {}); {INSTALL_HINT}",
        candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )
}

/// Under root, the uid and gid of `engram-pg`; otherwise the server runs as the caller.
fn run_as() -> anyhow::Result<Option<(u32, u32)>> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").context("cannot read /etc/passwd")?;
    for line in passwd.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        if fields.len() > 3 && fields[0] == PG_USER {
            return Ok(Some((fields[2].parse()?, fields[3].parse()?)));
        }
    }
    bail!("PostgreSQL cannot run as root and the user {PG_USER} does not exist; {INSTALL_HINT}")
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn random_password() -> String {
    use rand::Rng;
    let bytes: [u8; 24] = rand::rng().random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
