"""The client against a real engram: every method, and what comes back."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest

from engram_client import (
    AsyncEngram,
    Caller,
    ConflictError,
    Engram,
    EngramError,
    Memory,
    NotFoundError,
    Turn,
    UserSummary,
)
from helpers import run_job


@pytest.fixture
def engram(server) -> Engram:
    with Engram(api_key=server.keys["admin"], base_url=server.url) as client:
        yield client


def remember_facts(engram: Engram, user: str, sentences: list[str]) -> None:
    engram.add_events([{"user_id": user, "role": "user", "content": s, "id": f"{user}-{i}"} for i, s in enumerate(sentences)])
    run_job(engram, "extract_facts", user)


def test_events_are_found_at_once_and_stored_once_per_id(engram: Engram, user: str) -> None:
    first = engram.add_event(user, "user", "We moved our database to PostgreSQL", id="turn-1", session_id="s1")
    again = engram.add_event(user, "user", "We moved our database to PostgreSQL", id="turn-1", session_id="s1")
    assert (first.accepted, first.duplicates) == (1, 0)
    assert (again.accepted, again.duplicates) == (0, 1)
    assert again.ids == first.ids

    found = engram.search(user, "which database do we use?", kinds=["event"])
    assert found.hit and found.results[0].id == first.ids[0]
    assert found.results[0].session_id == "s1" and found.results[0].role == "user"
    explained = engram.search(user, "database", kinds=["event"], explain=True)
    assert explained.results[0].explanation is not None and explained.results[0].explanation.relevance > 0

    context = engram.context(user, "which database do we use?", max_tokens=200)
    assert "PostgreSQL" in context.text and context.tokens <= 200 == context.max_tokens
    assert [s.session_id for s in engram.sessions(user).sessions] == ["s1"]
    assert engram.summaries(user).summaries == []


def test_memories_are_listed_page_by_page_with_their_history(engram: Engram, user: str) -> None:
    remember_facts(engram, user, ["I live in Lisbon.", "My favourite editor is Helix.", "I am allergic to peanuts."])
    everything = list(engram.list_memories(user))
    paged = list(engram.list_memories(user, limit=1))
    assert len(everything) >= 3 and all(isinstance(m, Memory) for m in everything)
    assert [m.id for m in paged] == [m.id for m in everything], "pages of one cover the same memories, in order"
    assert engram.memories_page(user, limit=1).next_cursor == everything[0].id

    lisbon = next(m for m in everything if "Lisbon" in m.content)
    detail = engram.get_memory(user, lisbon.id)
    assert detail.memory.id == lisbon.id and detail.history[0].action == "created"

    found = engram.search(user, "where does the user live?")
    assert found.results and found.results[0].id == lisbon.id

    assert engram.feedback(user, lisbon.id, "helpful").id
    with pytest.raises(ConflictError) as conflict:
        engram.restore_memory(user, lisbon.id)
    assert conflict.value.status == 409 and conflict.value.request_id

    exported = engram.export_user(user)
    assert exported["user_id"] == user and len(exported["memories"]) == len(everything)


def test_forgetting_a_user_removes_everything_and_is_logged(engram: Engram, user: str) -> None:
    engram.add_event(user, "user", "My sister is called Ana.", id="forget-1")
    deleted = engram.forget_user(user)
    assert deleted.user_id == user and deleted.deleted["events"] == 1
    assert engram.search(user, "sister", kinds=["event"]).results == []
    log = engram.deletions(user).deletions
    assert len(log) == 1 and log[0].deleted["events"] == 1
    assert engram.forget_user(user).deleted["events"] == 0, "forgetting again changes nothing"


def test_an_export_imported_into_another_user_and_a_webhook_subscribed(engram: Engram, user: str) -> None:
    engram.add_memory(user, "Keeps a sourdough starter called Clint")
    exported = engram.export_user(user)
    assert exported["format_version"] == 1
    imported = engram.import_user(f"{user}-copy", exported)
    assert imported.added["memories"] == 1 and imported.format == "engram.export"
    assert engram.import_user(f"{user}-copy", exported).already_present["memories"] == 1
    found = engram.search(f"{user}-copy", "what is my sourdough starter called?").results
    assert found[0].content == "Keeps a sourdough starter called Clint"

    hook = engram.create_webhook("https://hooks.example.com/engram", ["memory.created"])
    assert hook.secret.startswith("whsec_")
    assert [w.id for w in engram.webhooks().webhooks if w.id == hook.id] == [hook.id]
    assert engram.webhook_deliveries(hook.id).deliveries is not None
    assert engram.delete_webhook(hook.id).deleted
    assert hook.id not in [w.id for w in engram.webhooks().webhooks]


def test_jobs_are_listed_run_paused_and_resumed(engram: Engram, user: str) -> None:
    names = {job.name for job in engram.jobs()}
    assert {"extract_facts", "dedup", "evict", "embed_events"} <= names
    engram.add_event(user, "user", "I drive a blue Volvo.", id="job-1")
    run = run_job(engram, "extract_facts", user)
    assert run.job == "extract_facts" and run.user_id == user and run.finished
    assert engram.job_run(run.id).counts == run.counts
    assert engram.pause_job("dedup").paused is True
    assert next(j for j in engram.jobs() if j.name == "dedup").paused
    assert engram.resume_job("dedup").paused is False
    with pytest.raises(NotFoundError):
        engram.run_job("no_such_job")
    with pytest.raises(NotFoundError):
        engram.job_run(str(uuid.uuid4()))


def test_a_users_turns_are_counted_and_listed_newest_first(engram: Engram, user: str) -> None:
    said = ["I moved to Porto.", "I started a job at Globex.", "My daughter plays the cello.", "I run on Sundays."]
    engram.add_events([
        {"user_id": user, "role": "user", "content": text, "id": f"{user}-{i}", "session_id": f"s{i % 2}",
         "created_at": f"2026-03-0{i + 1}T10:00:00Z"}
        for i, text in enumerate(said)
    ])
    engram.add_memory(user, "My favourite tea is genmaicha.", category="preference")

    summary = engram.user(user)
    assert isinstance(summary, UserSummary) and summary.user_id == user
    assert (summary.events, summary.sessions, summary.memories) == (4, 2, 1)
    assert summary.entities == 0, "entities come with extract_facts"
    assert summary.last_activity == datetime(2026, 3, 4, 10, tzinfo=timezone.utc), "the newest turn's time"
    assert next(u for u in engram.list_users() if u.user_id == user) == summary

    turns = list(engram.list_turns(user))
    assert all(isinstance(t, Turn) for t in turns)
    assert [t.content for t in turns] == said[::-1], "newest first"
    assert [t.id for t in engram.list_turns(user, limit=1)] == [t.id for t in turns], "pages of one cover them all"
    first = engram.turns_page(user, limit=3)
    assert [t.id for t in first.events] == [t.id for t in turns[:3]] and first.next_cursor == turns[2].id
    rest = engram.turns_page(user, cursor=first.next_cursor, limit=3)
    assert [t.id for t in rest.events] == [turns[3].id] and rest.next_cursor is None
    odd = engram.turns_page(user, session_id="s1")
    assert [(t.session_id, t.content) for t in odd.events] == [("s1", said[3]), ("s1", said[1])]


def test_an_unknown_user_is_not_found(engram: Engram, user: str) -> None:
    with pytest.raises(NotFoundError) as err:
        engram.user(user)
    assert (err.value.status, err.value.code) == (404, "not_found") and user in err.value.message
    assert engram.turns_page(user).events == []


def test_whoami_names_the_keys_tenant_scopes_and_user(server, engram: Engram, user: str) -> None:
    me = engram.whoami()
    assert isinstance(me, Caller) and me.tenant == "acme" and me.user_id is None
    assert sorted(me.scopes) == ["admin", "ingest", "operator", "read"]
    with Engram(api_key=server.keys["reader"], base_url=server.url) as reader:
        assert reader.whoami().scopes == ["read"]
    key_id, bound_key = server.create_key("read,ingest", "--user", user)
    with Engram(api_key=bound_key, base_url=server.url) as bound:
        assert (bound.whoami().key_id, bound.whoami().user_id) == (key_id, user)


def test_a_jobs_runs_are_listed_newest_first(engram: Engram, user: str) -> None:
    engram.add_event(user, "user", "I drive a blue Volvo.", id=f"{user}-runs")
    ids = []
    for _ in range(2):
        queued = engram.run_job("evict", user_id=user, dry_run=True)
        assert engram.wait_for_run(queued.run_id).status == "succeeded"
        ids.append(queued.run_id)
    page = engram.job_runs_page("evict", limit=1)
    assert [run.id for run in page.runs] == [ids[1]] and page.next_cursor == ids[1]
    older = engram.job_runs_page("evict", cursor=page.next_cursor, limit=1)
    assert [run.id for run in older.runs] == [ids[0]]
    run = older.runs[0]
    assert (run.job, run.user_id, run.dry_run, run.trigger) == ("evict", user, True, "admin") and run.finished
    with pytest.raises(NotFoundError):
        engram.job_runs_page("no_such_job")


def test_the_graph_answers_what_no_single_memory_holds(engram: Engram, user: str) -> None:
    remember_facts(engram, user, ["I lead the checkout project.", "The checkout project uses Django and Postgres.",
                                  "My colleague Priya owns the payment module."])
    found = engram.search(user, "Which database does Priya use?", kinds=["relation"])
    assert "checkout project —uses→ PostgreSQL" in [r.content for r in found.results]
    page = engram.entities_page(user, type="technology")
    assert sorted(e.name for e in page.entities) == ["Django", "PostgreSQL"]
    assert engram.user(user).entities == len(engram.entities_page(user, limit=200).entities) > 2
    detail = engram.get_entity(user, next(e.id for e in page.entities if e.name == "PostgreSQL"))
    assert [r.subject for r in detail.relations] == ["checkout project"]
    path = engram.graph_path(user, "Priya", "postgres")
    assert [r.predicate for r in path.relations] == ["colleague", "leads", "uses"]
    assert {e.name for e in engram.graph(user, "Priya").entities} == {"Priya", "user", "payment module"}
    with pytest.raises(NotFoundError):
        engram.graph(user, "nobody")
    with pytest.raises(ConflictError):
        engram.restore_entity(user, detail.entity.id)


def test_health_and_readiness(engram: Engram) -> None:
    assert engram.health().status == "ok"
    assert engram.readiness().status == "ready"


def test_settings_come_from_the_environment(server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_API_KEY", server.keys["reader"])
    monkeypatch.setenv("ENGRAM_BASE_URL", server.url)
    with Engram() as engram:
        assert engram.search("nobody", "anything").results == []
    monkeypatch.delenv("ENGRAM_API_KEY")
    with pytest.raises(EngramError, match="ENGRAM_API_KEY"):
        Engram(base_url=server.url)


async def test_the_async_client_does_the_same(server, user: str) -> None:
    async with AsyncEngram(api_key=server.keys["admin"], base_url=server.url) as engram:
        stored = await engram.add_event(user, "user", "Our staging cluster runs on Hetzner.", id="async-1")
        found = await engram.search(user, "staging cluster", kinds=["event"])
        assert found.results[0].id == stored.ids[0]
        context = await engram.context(user, "staging")
        assert "Hetzner" in context.text
        run = await engram.run_job("extract_facts", user_id=user)
        assert (await engram.wait_for_run(run.run_id)).status == "succeeded"
        memories = [m async for m in engram.list_memories(user, limit=1)]
        assert memories and (await engram.get_memory(user, memories[0].id)).memory.id == memories[0].id
        assert (await engram.health()).status == "ok"
        with pytest.raises(NotFoundError):
            await engram.get_memory(user, str(uuid.uuid4()))
        assert (await engram.whoami()).tenant == "acme"
        summary = await engram.user(user)
        assert (summary.user_id, summary.events, summary.sessions) == (user, 1, 1)
        assert [t.id async for t in engram.list_turns(user, limit=1)] == stored.ids
        assert (await engram.turns_page(user)).events[0].content == "Our staging cluster runs on Hetzner."
        runs = await engram.job_runs_page("extract_facts", limit=200)
        assert run.run_id in [r.id for r in runs.runs]
        with pytest.raises(NotFoundError):
            await engram.user(f"{user}-nobody")
