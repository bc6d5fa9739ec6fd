"""The web console in a real headless Chromium against a real engram, served behind a
path prefix: what an operator does with it, and what it must never do."""

from __future__ import annotations

import re

import httpx
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.support.ui import Select

from conftest import ROOT, XSS_MEMORY, XSS_TURNS, Console

POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def memory_row(console, content: str):
    rows = [r for r in console.all("#memories tr[data-memory-id]") if content in r.text]
    return rows[0] if rows else None


def open_memory(console, content: str):
    """Opens the listed memory that says `content`, found again if the list re-drew."""
    def opened() -> bool:
        row = memory_row(console, content)
        if row is None:
            return False
        row.find_element("css selector", "a").click()
        return True

    console.wait_until(opened, f"the memory {content!r} can be opened")


def test_signing_in_shows_the_tenant_and_scopes_and_keeps_the_key_out_of_urls(console, engram, proxy):
    console.open()
    console.find("#key").send_keys("egm_not_a_key")
    console.click("#signin button[type=submit]")
    console.wait_until(lambda: "refused" in console.text(".signin-status"), "a wrong key is refused")

    console.sign_in(engram.keys["admin"])
    assert console.text("#tenant") == "acme"
    assert {"read", "ingest", "admin", "operator"} <= set(console.text("#scopes").split())
    console.wait_until(lambda: len(console.all("#users tr[data-user]")) == 2, "the admin key lists the tenant's users")
    assert [r.get_attribute("data-user") for r in console.all("#users tr[data-user]")] == ["ana", "mallory"]
    console.idle()
    console.screenshot("users")

    key = engram.keys["admin"]
    assert console.driver.execute_script("return sessionStorage.getItem('engram.key')") == key
    assert console.driver.execute_script("return localStorage.length") == 0
    assert not any(key in path for path in proxy.paths), "the key never travels in a URL"
    assert key not in console.driver.current_url
    assert key not in engram.log.read_text(), "nor into engram's log"

    console.click("#signout")
    console.wait_for("#signin")
    assert console.driver.execute_script("return sessionStorage.getItem('engram.key')") is None


def test_a_user_is_found_by_id_with_their_counts(console, engram, api):
    console.sign_in(engram.keys["admin"])
    console.find("#find-user input[name=user]").send_keys("nobody-here")
    console.click("#find-user button")
    console.wait_for("#not-found")

    field = console.find("#find-user input[name=user]")
    field.clear()
    field.send_keys("ana")
    console.click("#find-user button")
    console.wait_for(".stat[data-stat=memories]")
    expected = api.get("/v1/users/ana")
    for stat in ("memories", "events", "sessions", "entities"):
        assert console.text(f".stat[data-stat={stat}] .stat-value") == str(expected[stat]), stat
    assert expected["events"] == 11 and expected["sessions"] == 3
    console.screenshot("user")


def test_a_memory_shows_its_history_after_extraction_dedup_and_eviction(console, engram):
    console.sign_in(engram.keys["admin"])
    console.go("#/users/ana/memories")
    Select(console.find("#memory-filters select[name=status]")).select_by_value("evicted")
    console.click("#memory-filters button")
    console.wait_until(lambda: console.all("#memories tr[data-memory-id]"), "an evicted memory is listed")
    console.click("#memories tr[data-memory-id] a")
    console.wait_for("#history li[data-action=evicted]")
    labels = [li.get_attribute("data-label") for li in console.all("#history li")]
    assert labels[0] == "created" and labels[-1] == "evicted", labels
    evicted = console.find("#history li[data-action=evicted]")
    console.wait_until(lambda: "evict run" in evicted.text, "the eviction names its job run")
    created = console.find("#history li[data-action=created]")
    console.wait_until(lambda: "extract_facts run" in created.text, "the creation names its job run")
    assert "extracted by rules" in created.text
    assert re.search(r"^decay\n\d\.\d{3}$", console.text("dl.facts"), re.M), "the decay score is shown"

    console.click("button[data-action=restore]")
    console.wait_for("#history li[data-action=restored]")
    assert "active" in console.text("dl.facts")

    Select(console.find("#memory-filters select[name=status]")).select_by_value("merged")
    console.click("#memory-filters button")
    console.wait_until(lambda: memory_row(console, "We really like FastAPI"), "the restatement is merged")
    open_memory(console, "We really like FastAPI")
    console.wait_for("#history li[data-action=merged]")
    assert "the same fact, said again" in console.text("#history li[data-action=merged]")

    Select(console.find("#memory-filters select[name=status]")).select_by_value("active")
    console.click("#memory-filters button")
    console.wait_until(lambda: memory_row(console, "Our backend framework is FastAPI."), "the keyed fact is active")
    open_memory(console, "Our backend framework is FastAPI.")
    console.wait_for("#history li[data-label='absorbed a duplicate']")
    assert "framework" in console.text("dl.facts")
    console.idle()
    console.full_screenshot("memory")


def test_a_memory_added_with_a_key_supersedes_the_one_it_replaces(console, engram):
    console.sign_in(engram.keys["admin"])
    console.go("#/users/ana/memories")
    console.click("details.add summary")
    console.find("#add-memory textarea[name=content]").send_keys("I moved to Porto.")
    Select(console.find("#add-memory select[name=category]")).select_by_value("personal")
    console.find("#add-memory input[name=key]").send_keys("location")
    console.click("#add-memory button[data-action=add]")
    console.wait_until(lambda: console.all("#memory-content") and console.text("#memory-content") == "I moved to Porto.",
                       "the new memory opens")
    assert "Memory added." in console.text("#flash")
    assert console.find("#history li[data-action=created]").text.count("by key:") == 1

    Select(console.find("#memory-filters select[name=status]")).select_by_value("superseded")
    console.click("#memory-filters button")
    console.wait_until(lambda: memory_row(console, "I live in Lisbon."), "the old home is superseded")
    open_memory(console, "I live in Lisbon.")
    console.wait_for("#history li[data-action=superseded]")
    assert "valid to\n—" not in console.text("dl.facts"), "its validity ended"


def test_an_edited_then_deleted_memory_is_gone_from_search(console, engram, api):
    console.sign_in(engram.keys["admin"])
    console.go("#/users/ana/memories")
    console.wait_until(lambda: memory_row(console, "dark mode"), "the preference is listed")
    open_memory(console, "dark mode")
    console.click("button[data-action=edit]")
    content = console.find("#edit-memory textarea[name=content]")
    content.clear()
    content.send_keys("I prefer dark mode in every editor and terminal.")
    console.click("#edit-memory button[data-action=save]")
    console.wait_until(lambda: console.text("#memory-content") == "I prefer dark mode in every editor and terminal.",
                       "the edit is saved")
    updated = console.find("#history li[data-action=updated]")
    assert "I prefer dark mode in every editor." in updated.text and "and terminal" in updated.text

    console.click("button[data-action=pin]")
    console.wait_until(lambda: "pinned\nyes" in console.text("dl.facts"), "the memory is pinned")

    console.go("#/search")
    search_for = console.find("#search input[name=query]")
    search_for.send_keys("dark mode terminal")
    console.click("#search button[type=submit]")
    console.wait_until(lambda: "and terminal" in console.text("#results"), "search finds the edited memory")

    console.go("#/users/ana/memories")
    console.wait_until(lambda: memory_row(console, "and terminal"), "the edited memory is listed")
    open_memory(console, "and terminal")
    console.click("button[data-action=delete]")
    console.click(".confirm input[name=sources]")
    console.click("button[data-action=confirm-delete]")
    console.wait_until(lambda: "Deleted" in console.text("#flash"), "the deletion is confirmed")
    console.wait_until(lambda: console.all("#memories tr[data-memory-id]") and not memory_row(console, "dark mode"),
                       "the memory left the list")

    console.go("#/search")
    console.click("#search button[type=submit]")  # the same query, kept by the page
    console.wait_for("#search-summary")
    console.idle()
    assert "dark mode" not in console.text("#results"), "neither the memory nor the turn it came from is found"
    found = api.post("/v1/search", {"user_id": "ana", "query": "dark mode terminal", "kinds": ["fact", "insight", "event"]})
    assert not any("dark mode" in r["content"] for r in found["results"])


def test_the_graph_draws_a_three_hop_path_and_answers_as_of(console, engram):
    console.sign_in(engram.keys["admin"])
    console.go("#/users/ana/graph")
    console.wait_until(lambda: len(console.all("svg#graph g.node")) >= 4, "the neighbourhood is drawn")
    console.find("#path input[name=from]").send_keys("Priya")
    console.find("#path input[name=to]").send_keys("Postgres")
    console.click("#path button")
    console.wait_until(lambda: "3 hops" in console.text("#path-text"), "a three-hop path is found")
    assert console.text("#path-text") == "3 hops: Priya —colleague→ Ana Lopes —leads→ checkout project —uses→ PostgreSQL"
    assert len(console.all("svg#graph line.edge.on-path")) == 3
    names = {n.text for n in console.all("svg#graph .node-label")}
    assert {"Priya", "Ana Lopes", "checkout project", "PostgreSQL"} <= names

    console.click("svg#graph g.node")
    console.wait_until(lambda: "Relations" in console.text("#entity"), "an entity's relations are shown")
    console.idle()
    console.full_screenshot("graph")

    as_of = console.find("#graph-controls input[name=as_of]")
    console.driver.execute_script("arguments[0].value = '2020-01-01T00:00'", as_of)
    console.click("#graph-controls button")
    console.wait_until(lambda: "as of 2020-01-01T00:00" in console.text("#graph-status"), "as_of is asked")
    assert not console.all("svg#graph line.edge"), "nothing held in 2020"


def test_search_explains_its_scores_and_context_is_the_agents_block(console, engram, api):
    console.sign_in(engram.keys["admin"])
    console.go("#/users/ana")
    console.wait_for(".stat")
    console.go("#/search")
    assert console.find("#search input[name=user]").get_attribute("value") == "ana"
    console.find("#search input[name=query]").send_keys("which database does the checkout project use?")
    console.click("#search input[value=relation]")
    console.click("#search button[type=submit]")
    console.wait_for("#search-results tbody tr")
    header = console.text("#search-results thead")
    for part in ("SIMILARITY", "KEYWORD", "RELEVANCE", "TIER", "TIME"):
        assert part in header
    first = console.all("#search-results tbody tr")[0].text
    assert "PostgreSQL" in first or "Postgres" in first, first

    console.find("#context-form input[name=query]").send_keys("which database does the checkout project use?")
    console.click("#context-form button")
    console.wait_for("#context-text")
    expected = api.get("/v1/users/ana/context", query="which database does the checkout project use?")
    assert console.text("#context-text") == expected["text"].strip()
    console.idle()
    console.full_screenshot("search")


def test_a_dry_run_shows_what_would_change_and_changes_nothing(console, engram, api):
    def memories():
        return [(m["id"], m["content"], m["status"]) for m in api.get("/v1/users/ana/memories", limit=200)["memories"]]

    before = memories()
    console.sign_in(engram.keys["admin"])
    console.go("#/jobs")
    console.wait_for("#jobs tr[data-job=evict]")
    scope = console.find("input[name=user]")
    scope.clear()
    scope.send_keys("ana")
    console.click("#jobs tr[data-job=extract_facts] button[data-action=dry-run]")
    run = "#runs .run[data-run-id]"
    console.wait_until(lambda: console.find(run).get_attribute("data-status") == "succeeded", "the dry run finishes",
                       timeout=60)
    card = console.find(run)
    assert "Dry run of extract_facts" in card.text and "Nothing was changed" in card.text
    assert "events_read\n1" in card.text, card.text
    run_id = card.get_attribute("data-run-id")
    assert memories() == before

    console.click("#jobs tr[data-job=purge] button[data-action=pause]")
    console.wait_until(lambda: "paused" in console.text("#jobs tr[data-job=purge]"), "purge is paused")
    assert next(j for j in api.get("/admin/v1/jobs")["jobs"] if j["name"] == "purge")["paused"]
    console.click("#jobs tr[data-job=purge] button[data-action=resume]")
    console.wait_until(lambda: console.all("#jobs tr[data-job=purge] button[data-action=pause]"), "purge resumed")

    console.click("#jobs tr[data-job=extract_facts] button[data-action=history]")
    console.wait_until(lambda: console.all(f"#recent-runs tr[data-run-id='{run_id}']"), "the dry run is in the job's runs")
    listed = api.get("/admin/v1/jobs/extract_facts/runs", limit=20)["runs"]
    assert listed[0]["id"] == run_id and listed[0]["dry_run"], "newest first"
    first_row = console.all("#recent-runs tbody tr")[0]
    assert first_row.get_attribute("data-run-id") == run_id and "dry run" in first_row.text
    console.idle()
    console.full_screenshot("jobs")


def test_markup_in_turns_and_memories_renders_as_text_and_runs_nothing(console, engram, proxy):
    console.sign_in(engram.keys["admin"])
    console.go("#/users/mallory/turns")
    console.wait_until(lambda: len(console.all("#turns .turn-content")) == 2, "both turns are shown")
    shown = {t.text for t in console.all("#turns .turn-content")}
    assert shown == set(XSS_TURNS)
    console.go("#/users/mallory/memories")
    console.wait_until(lambda: memory_row(console, XSS_MEMORY), "the memory shows its markup as text")
    open_memory(console, XSS_MEMORY)
    console.wait_until(lambda: console.text("#memory-content") == XSS_MEMORY, "the detail shows it as text")
    console.go("#/users/mallory/turns")
    console.wait_until(lambda: len(console.all("#turns .turn-content")) == 2, "the turns again")
    console.idle()

    try:
        alert = console.driver.switch_to.alert
        raise AssertionError(f"an alert opened: {alert.text}")
    except NoAlertPresentException:
        pass
    assert not console.all("#main img, #main script, #main b, #main i")
    loaded = console.driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert not [url for url in loaded if re.search(r"/x($|\?)", url)], loaded
    assert not [path for path in proxy.paths if re.search(r"/x($|\?)", path)], "no request for the image"
    assert console.driver.execute_script("return window.__xss") is None
    violations = [entry["message"] for entry in console.driver.get_log("browser")
                  if "Content Security Policy" in entry["message"]]
    assert not violations, violations
    console.screenshot("turns-markup")

    console.go("#/users/ana/turns")
    console.wait_until(lambda: len(console.all("#turns .turn")) == 11, "Ana's turns")
    console.wait_until(lambda: console.all("#sessions .session[data-session]"), "her sessions")
    console.idle()
    console.screenshot("turns")


def test_a_read_only_key_sees_no_write_controls_and_the_api_refuses_it(console, engram):
    console.sign_in(engram.keys["reader"])
    assert "read-only" in console.text("#who")
    assert not console.all("#nav a[data-nav=jobs]")
    console.go("#/users/ana/memories")
    console.wait_until(lambda: console.all("#memories tr[data-memory-id]"), "memories are listed")
    console.click("#memories tr[data-memory-id] a")
    console.wait_for("#history li")
    assert not console.all("[data-action=add], [data-action=edit], [data-action=pin], [data-action=delete], [data-action=restore]")
    assert not console.all("#add-memory")
    console.idle()
    console.screenshot("read-only")
    memory_id = console.driver.execute_script("return location.hash").split("/")[-1]
    console.go("#/jobs")
    console.wait_until(lambda: "admin scope" in console.text("#main"), "jobs say what they need")
    assert not console.all("button[data-action=run], button[data-action=dry-run]")

    attempts = console.driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const key = sessionStorage.getItem('engram.key');
        const base = new URL('../', location.href);
        const headers = {Authorization: `Bearer ${key}`, 'Content-Type': 'application/json'};
        const call = (method, path, body) => fetch(new URL(path, base), {method, headers, body: body && JSON.stringify(body)})
          .then(r => r.json().then(j => [r.status, j.error && j.error.code]));
        Promise.all([
          call('POST', 'v1/users/ana/memories', {content: 'a read-only key wrote this'}),
          call('PATCH', 'v1/users/ana/memories/' + arguments[0], {pinned: true}),
          call('DELETE', 'v1/users/ana/memories/' + arguments[0]),
          call('POST', 'admin/v1/jobs/evict/runs', {dry_run: true}),
          call('POST', 'admin/v1/jobs/evict/pause'),
        ]).then(done, e => done(String(e)));
    """, memory_id)
    assert attempts == [[403, "forbidden"]] * 5, attempts


def test_the_console_is_served_strictly_and_relatively(engram, proxy):
    direct = httpx.get(f"{engram.url}/console", follow_redirects=False)
    assert direct.status_code in (301, 302, 307, 308) and direct.headers["location"] == "console/"
    for url in (f"{engram.url}/console/", f"{proxy.url}/console/"):
        page = httpx.get(url)
        assert page.status_code == 200 and page.headers["content-security-policy"] == POLICY
    files = sorted((ROOT / "console").iterdir())
    assert all(f.is_file() for f in files), "console/ is flat"
    for file in files:  # every file is compiled in and served with its type and the policy
        served = httpx.get(f"{engram.url}/console/{file.name}")
        assert served.status_code == 200 and served.text == file.read_text(), file.name
        kind = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}[file.suffix]
        assert served.headers["content-type"].startswith(kind) and served.headers["content-security-policy"] == POLICY
    html = (ROOT / "console/index.html").read_text()
    assert re.findall(r"<script\b[^>]*>", html) == ['<script type="module" src="app.js">']
    scripts = [f for f in files if f.suffix == ".js"]
    sources = html + "".join(f.read_text() for f in scripts)
    imported = {name for f in scripts for name in re.findall(r"""^import .* from '([^']+)';$""", f.read_text(), re.M)}
    assert imported and all(re.fullmatch(r"\./[a-z-]+\.js", name) for name in imported), "modules import each other relatively"
    assert {f"./{f.name}" for f in scripts} - imported == {"./app.js"}, "every module is used"
    assert [f.name for f in scripts if "sessionStorage" in f.read_text()] == ["api.js"], "one module holds the key"
    for forbidden in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                      "style=", "setAttribute('style'", "http://", "https://"):
        assert forbidden not in sources.replace("http://www.w3.org/2000/svg", ""), forbidden
    assert not re.search(r"\son[a-z]+=", html)
    assert not re.search(r"""(href|src)=["']/""", html), "assets are referenced relatively"
    assert not re.search(r"""fetch\(\s*['"`]/""", sources), "API calls are relative"


def test_a_key_bound_to_one_user_opens_on_that_user_and_reaches_no_other(console, engram):
    _, bound = engram.create_key("read,ingest", "--user", "mallory")
    console.sign_in(bound)
    console.wait_until(lambda: console.driver.execute_script("return location.hash") == "#/users/mallory",
                       "the console opens on the key's user")
    assert console.text("#bound-user") == "mallory"
    console.wait_for(".stat[data-stat=events]")
    console.go("#/users/ana/memories")
    console.wait_until(lambda: "403 forbidden" in console.text("#main"), "another user is refused")


def test_without_a_prefix_the_console_is_reached_through_its_redirect(browser, engram):
    browser.get(f"{engram.url}/console")
    assert browser.current_url == f"{engram.url}/console/"
    console = Console(browser, engram.url)
    console.sign_in(engram.keys["reader"])
    assert console.text("#tenant") == "acme"


def test_the_webhooks_page_subscribes_shows_the_secret_once_and_lists_deliveries(console, engram, api):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    got = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the name http.server calls)
            got.append(self.rfile.read(int(self.headers["content-length"])))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hook_url = f"http://127.0.0.1:{receiver.server_address[1]}/engram"

    console.sign_in(engram.keys["admin"])
    console.go("#/webhooks")
    console.wait_for("#no-webhooks")
    console.find("#subscribe input[name=url]").send_keys(hook_url)
    console.click("#subscribe button[type=submit]")
    secret = console.wait_for("#webhook-secret").text
    assert secret.startswith("whsec_")
    console.wait_for("#webhooks tr[data-webhook]")
    assert hook_url in console.text("#webhooks")
    listed = api.get("/admin/v1/webhooks")["webhooks"]
    assert [h["url"] for h in listed] == [hook_url] and "secret" not in listed[0]

    api.post("/v1/users/wendy/memories", {"content": "Wendy restores old clocks"})
    console.wait_until(lambda: got, "the receiver got the delivery", timeout=30)
    console.click("#webhooks button[data-action=deliveries]")
    console.wait_for("#webhook-deliveries tr[data-outcome=delivered]")
    assert "memory.created" in console.text("#webhook-deliveries")
    console.go("#/users")
    console.go("#/webhooks")
    console.wait_for("#webhooks tr[data-webhook]")
    assert not console.all("#webhook-secret"), "the secret is not shown again"
    console.click("#webhooks button[data-action=delete]")
    console.wait_for("#no-webhooks")
    assert api.get("/admin/v1/webhooks")["webhooks"] == []
