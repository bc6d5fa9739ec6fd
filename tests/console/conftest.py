"""The console's browser tests: a real engram (started the way the Python client's tests
start it), a reverse proxy that serves it under a path prefix, data ingested through the
API and consolidated by the jobs, and a headless Chromium driven through WebDriver.

Needs ENGRAM_TEST_DATABASE_URL and ENGRAM_TEST_PG_BIN (as `scripts/test` sets them),
ENGRAM_BIN (default: the debug build), and Debian's `chromium` and `chromium-driver`."""

from __future__ import annotations

import datetime as dt
import http.client
import importlib.util
import os
import shutil
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "console-screenshots"
PREFIX = "/engram"

# The Python client's tests know how to start engram on a fresh database; reuse them.
_spec = importlib.util.spec_from_file_location("engram_test_server", ROOT / "clients/python/tests/conftest.py")
engram_test_server = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = engram_test_server
_spec.loader.exec_module(engram_test_server)


class PrefixProxy(ThreadingHTTPServer):
    """Serves engram under PREFIX, as a reverse proxy that strips it would, and keeps
    every path the browser asked for."""

    daemon_threads = True

    def __init__(self, upstream: str):
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstream = urlparse(upstream)
        self.paths: list[str] = []
        # For working on the console without rebuilding engram: its files from disk.
        self.console_dir = ROOT / "console" if os.environ.get("ENGRAM_CONSOLE_FROM_DISK") else None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{PREFIX}"


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self._forward()

    do_POST = do_PATCH = do_DELETE = do_PUT = do_GET

    def log_message(self, *args):
        pass

    def _reply(self, status: int, headers: list[tuple[str, str]], body: bytes):
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _forward(self):
        proxy: PrefixProxy = self.server
        proxy.paths.append(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.startswith(PREFIX + "/"):
            return self._reply(404, [], b"outside the prefix")
        path = self.path[len(PREFIX):]
        if proxy.console_dir and path.startswith("/console/"):
            return self._from_disk(path)
        upstream = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        upstream.request(self.command, path, body=body or None, headers=headers)
        answer = upstream.getresponse()
        self._reply(answer.status, answer.getheaders(), answer.read())
        upstream.close()

    def _from_disk(self, path: str):
        name = path.removeprefix("/console/").split("?")[0] or "index.html"
        file = self.server.console_dir / name
        if "/" in name or not file.is_file():
            return self._reply(404, [], b"no such console file")
        kind = {"html": "text/html", "js": "text/javascript", "css": "text/css"}[file.suffix[1:]]
        policy = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        self._reply(200, [("Content-Type", f"{kind}; charset=utf-8"), ("Content-Security-Policy", policy),
                          ("Cache-Control", "no-cache")], file.read_bytes())


class Api:
    """Calls to engram with one key, for arranging data and checking what the console did."""

    def __init__(self, url: str, key: str):
        self.client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)

    def get(self, path: str, **params):
        answer = self.client.get(path, params=params)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def post(self, path: str, body: dict):
        answer = self.client.post(path, json=body)
        assert answer.status_code in (200, 201, 202), answer.text
        return answer.json()


ANA_SAID = [
    ("s-checkout", "user", "My name is Ana Lopes."),
    ("s-checkout", "user", "I lead the checkout project."),
    ("s-checkout", "assistant", "Good to know. What does the checkout project run on?"),
    ("s-checkout", "user", "The checkout project uses Django and Postgres."),
    ("s-checkout", "user", "My colleague Priya owns the payment module."),
    ("s-setup", "user", "I live in Lisbon."),
    ("s-setup", "user", "I prefer dark mode in every editor."),
    ("s-setup", "user", "Our backend framework is FastAPI."),
    ("s-setup", "user", "We once tried a hackathon idea about parking apps."),
    ("s-setup", "user", "We had a long discussion about caching strategies for the public API."),
]
NOT_YET_EXTRACTED = "We moved the checkout project from Django to Flask."
XSS_TURNS = ["<img src=x onerror=alert(1)>", "Look: <script>alert(2)</script> and <b>bold</b>?"]
XSS_MEMORY = "<img src=x onerror=alert(3)> likes <i>markup</i>"


@pytest.fixture(scope="session")
def engram(tmp_path_factory: pytest.TempPathFactory):
    """engram with the data every test reads: Ana's turns, consolidated by extract_facts,
    summarize_sessions, dedup and evict; and Mallory, whose turns are markup."""
    server = engram_test_server.start_server(tmp_path_factory.mktemp("engram"))
    _, server.keys["tenant_admin"] = server.create_key("read,ingest,admin")
    api = Api(server.url, server.keys["admin"])
    # The tests decide when the memory jobs run; their schedules stay out of the way.
    for job in ("extract_facts", "summarize_sessions", "summarize_periods", "dedup", "evict", "reflect"):
        api.post(f"/admin/v1/jobs/{job}/pause", {})
    start = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=40)
    api.post("/v1/events", {"events": [
        {"user_id": "ana", "session_id": session, "role": role, "content": text,
         "created_at": (start + dt.timedelta(days=i // 5, minutes=i)).isoformat()}
        for i, (session, role, text) in enumerate(ANA_SAID)]})
    api.post("/v1/events", {"events": [
        {"user_id": "mallory", "session_id": "s-markup", "role": "user", "content": text} for text in XSS_TURNS]})
    api.post("/v1/users/mallory/memories", {"content": XSS_MEMORY})
    for job in ("extract_facts", "summarize_sessions"):
        server.engram("job", "run", job, "--tenant", "acme", "--user", "ana")
    # Said again in other words: dedup folds it into the keyed fact.
    api.post("/v1/users/ana/memories", {"content": "We really like FastAPI as the framework of our backend."})
    server.engram("job", "run", "dedup", "--tenant", "acme", "--user", "ana")
    # Months later, what was never used again has decayed away.
    server.engram("job", "run", "evict", "--tenant", "acme", "--user", "ana", "--now", "2027-06-01T00:00:00Z")
    # A change not yet extracted, for a dry run to find.
    api.post("/v1/events", {"user_id": "ana", "session_id": "s-later", "role": "user", "content": NOT_YET_EXTRACTED})
    yield server
    engram_test_server.stop_server(server)


@pytest.fixture(scope="session")
def proxy(engram):
    running = PrefixProxy(engram.url)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running
    running.shutdown()


@pytest.fixture(scope="session")
def api(engram) -> Api:
    return Api(engram.url, engram.keys["admin"])


@pytest.fixture(scope="session")
def browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_bin = shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.fail("chromium and chromedriver are missing: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
                     "--disable-dev-shm-usage", "--lang=en-US", "--hide-scrollbars"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_bin), options=options)
    driver.set_script_timeout(20)
    yield driver
    driver.quit()


class Console:
    """The console in the browser, with the few moves every test makes."""

    def __init__(self, driver, url: str):
        self.driver, self.url = driver, url

    def open(self, hash_path: str = ""):
        self.driver.get(f"{self.url}/console/{hash_path}")

    def sign_in(self, key: str):
        self.driver.get(f"{self.url}/console/")
        self.driver.execute_script("sessionStorage.clear()")
        self.driver.get(f"{self.url}/console/")
        self.find("#key").send_keys(key)
        self.find("#signin button[type=submit]").click()
        self.wait_for("#tenant")

    def go(self, hash_path: str):
        self.driver.execute_script("location.hash = arguments[0]", hash_path)

    def find(self, css: str, timeout: float = 10):
        return self.wait_for(css, timeout)

    def all(self, css: str):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def wait_for(self, css: str, timeout: float = 10):
        try:
            return WebDriverWait(self.driver, timeout).until(lambda d: d.find_element(By.CSS_SELECTOR, css))
        except TimeoutException:
            raise AssertionError(f"no {css} on the page:\n{self.driver.find_element(By.TAG_NAME, 'body').text}")

    def wait_until(self, condition, what: str, timeout: float = 15):
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1,
                                 ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: condition())
        except TimeoutException:
            raise AssertionError(f"{what}; the page shows:\n{self.driver.find_element(By.TAG_NAME, 'body').text}")

    def click(self, css: str, timeout: float = 10):
        """Clicks what `css` names, found again if the page re-drew it in between."""
        self.wait_until(lambda: self.find(css, timeout).click() is None, f"{css} can be clicked", timeout)

    def text(self, css: str) -> str:
        return self.find(css).text

    def idle(self):
        """Waits until no 'Loading…' is left on the page."""
        self.wait_until(lambda: not self.all(".loading"), "the page finished loading")

    def screenshot(self, name: str):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        time.sleep(0.2)
        self.driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))

    def full_screenshot(self, name: str):
        """The whole page, however long, at the window's width."""
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(1280, max(900, min(height + 140, 2400)))
        try:
            self.screenshot(name)
        finally:
            self.driver.set_window_size(1280, 900)


@pytest.fixture
def console(browser, proxy) -> Console:
    return Console(browser, proxy.url)
