"""A real engram for the tests: a fresh database on the test PostgreSQL for each test
module, the `engram` binary serving it on a free loopback port, and API keys of each
kind. Needs ENGRAM_TEST_DATABASE_URL (as `scripts/test` sets it) and ENGRAM_TEST_PG_BIN;
ENGRAM_BIN names the binary (default: the debug build of this checkout)."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[3]


def _binary() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return Path(os.environ.get("ENGRAM_BIN", target / "debug" / "engram"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A running engram and what the tests need to reach it."""

    url: str
    env: dict[str, str]
    #: Keys by name: `admin` (read, ingest, admin, operator), `reader` (read only),
    #: `limited` (all scopes, 1 request a second), `revoked`.
    keys: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen | None = None
    log: Path | None = None

    def engram(self, *args: str) -> str:
        """Runs the `engram` command line against this server's database."""
        done = subprocess.run([str(_binary()), "--home", str(ROOT / ".engram"), *args], env=self.env,
                              capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def create_key(self, scopes: str, *extra: str) -> tuple[str, str]:
        out = self.engram("keys", "create", "--tenant", "acme", "--scope", scopes, *extra).strip().splitlines()
        key_id = out[0].split()[1]
        return key_id, out[-1]


def _database(admin_url: str, name: str, action: str) -> None:
    pg_bin = Path(os.environ["ENGRAM_TEST_PG_BIN"])
    parsed = urlparse(admin_url)
    tool = "createdb" if action == "create" else "dropdb"
    extra = ["--force", "--if-exists"] if action == "drop" else []
    subprocess.run([str(pg_bin / tool), "-h", parsed.hostname or "127.0.0.1", "-p", str(parsed.port or 5432),
                    "-U", parsed.username or "postgres", *extra, name], check=True, capture_output=True)


def _trust(env: dict[str, str]) -> ssl.SSLContext | bool:
    """The CA a TLS-serving test server's certificate is signed by, if any."""
    ca = env.get("_ENGRAM_TEST_CA")
    return ssl.create_default_context(cafile=ca) if ca else True


def start_server(tmp: Path, settings: dict[str, str] | None = None) -> Server:
    """Starts engram on a fresh database, with `settings` as ENGRAM_* overrides."""
    admin_url = os.environ.get("ENGRAM_TEST_DATABASE_URL")
    if not admin_url:
        pytest.fail("ENGRAM_TEST_DATABASE_URL is not set: run the tests through scripts/test")
    name = f"pyclient_{uuid.uuid4().hex[:12]}"
    _database(admin_url, name, "create")
    database_url = urlparse(admin_url)._replace(path=f"/{name}").geturl()
    port = _free_port()
    env = {
        **os.environ,
        "ENGRAM_DATABASE__URL": database_url,
        "ENGRAM_LOG__FILTER": "warn",
        # A revoked key stops working at once.
        "ENGRAM_SERVER__KEY_CACHE_SECS": "0",
        **(settings or {}),
    }
    scheme = "https" if env.get("ENGRAM_SERVER__TLS_CERT") else "http"
    server = Server(url=f"{scheme}://127.0.0.1:{port}", env=env)
    server.engram("migrate")
    _, server.keys["admin"] = server.create_key("read,ingest,admin,operator")
    _, server.keys["reader"] = server.create_key("read")
    _, server.keys["limited"] = server.create_key("read,ingest,admin", "--rate-limit", "1/s")
    revoked_id, server.keys["revoked"] = server.create_key("read,ingest")
    server.engram("keys", "revoke", revoked_id)
    server.log = tmp / f"engram-{port}.log"
    with open(server.log, "w") as log:
        server.process = subprocess.Popen(
            [str(_binary()), "--home", str(ROOT / ".engram"), "serve", "--bind", f"127.0.0.1:{port}"],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        )
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{server.url}/healthz", timeout=1, verify=_trust(env)).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if server.process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"engram did not start:\n{server.log.read_text()}")
        time.sleep(0.2)
    server.env["_ENGRAM_TEST_DATABASE"] = name
    return server


def stop_server(server: Server) -> None:
    if server.process is not None:
        server.process.terminate()
        try:
            server.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.process.kill()
    _database(os.environ["ENGRAM_TEST_DATABASE_URL"], server.env["_ENGRAM_TEST_DATABASE"], "drop")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    """engram on a database of this module's own (each test uses users of its own)."""
    running = start_server(tmp_path_factory.mktemp("engram"), {"ENGRAM_SERVER__MAX_BODY_BYTES": "65536"})
    yield running
    stop_server(running)


@pytest.fixture
def user() -> str:
    """A user no other test writes to."""
    return f"user-{uuid.uuid4().hex[:10]}"
