"""Memories written directly: added (searchable at once), updated, pinned and deleted,
with what each change leaves in the history and in search."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from engram_client import (
    AddedMemory,
    AsyncEngram,
    Engram,
    InvalidRequestError,
    MemoryDeleted,
    NotFoundError,
    PermissionDeniedError,
    ServiceUnavailableError,
)
from helpers import run_job


@pytest.fixture
def engram(server) -> Engram:
    with Engram(api_key=server.keys["admin"], base_url=server.url) as client:
        yield client


def test_an_added_memory_is_found_at_once(engram: Engram, user: str) -> None:
    added = engram.add_memory(user, "My favourite tea is genmaicha.", category="preference", importance=0.8)
    assert isinstance(added, AddedMemory) and (added.outcome, added.superseded) == ("created", [])
    memory = added.memory
    assert (memory.user_id, memory.content, memory.category) == (user, "My favourite tea is genmaicha.", "preference")
    assert memory.status == "active" and memory.pinned is False and memory.importance == pytest.approx(0.8)

    found = engram.search(user, "which tea does the user like?")
    assert found.results and found.results[0].id == memory.id
    assert "genmaicha" in engram.context(user, "which tea do I like?").text
    assert engram.get_memory(user, memory.id).history[0].action == "created"


def test_a_memory_with_the_key_of_another_supersedes_it(engram: Engram, user: str) -> None:
    first = engram.add_memory(user, "My code editor is Vim.", category="technical", key="editor")
    second = engram.add_memory(user, "These days I write all my code in Helix.", category="technical", key="editor")
    assert second.outcome == "created" and second.memory.id != first.memory.id
    assert second.superseded == [first.memory.id]
    old = engram.get_memory(user, first.memory.id).memory
    assert old.status == "superseded" and old.superseded_by == second.memory.id
    assert [m.id for m in engram.list_memories(user)] == [second.memory.id]


def test_a_near_identical_memory_is_not_stored_twice(server, user: str) -> None:
    statuses: list[int] = []
    http = httpx.Client(event_hooks={"response": [lambda response: statuses.append(response.status_code)]})
    with Engram(api_key=server.keys["admin"], base_url=server.url, http_client=http) as engram:
        first = engram.add_memory(user, "Our office is on the fourth floor.")
        again = engram.add_memory(user, "our office is on the fourth floor")
        assert (first.outcome, again.outcome) == ("created", "duplicate")
        assert again.memory.id == first.memory.id and again.superseded == []
        assert statuses == [201, 200]
        assert [m.id for m in engram.list_memories(user)] == [first.memory.id]
    http.close()


def test_an_update_is_recorded_and_searched_in_its_new_words(engram: Engram, user: str) -> None:
    before, after = "Our dashboards live in Grafana.", "Our dashboards live in Datadog."
    memory = engram.add_memory(user, before, category="technical").memory
    assert engram.search(user, "Grafana dashboards").results[0].id == memory.id

    updated = engram.update_memory(user, memory.id, content=after)
    assert updated.memory.id == memory.id and updated.memory.content == after
    detail = engram.get_memory(user, memory.id)
    assert detail.memory.content == after
    [change] = [h for h in detail.history if h.action == "updated"]
    assert change.before is not None and change.before["content"] == before
    assert change.after is not None and change.after["content"] == after
    assert change.actor is not None and change.actor.startswith("key:")
    # Sent twice, the same change ends the same way.
    assert engram.update_memory(user, memory.id, content=after).memory.content == after

    found = engram.search(user, "Datadog dashboards")
    assert found.results and found.results[0].id == memory.id and found.results[0].content == after
    assert all("Grafana" not in r.content for r in engram.search(user, "Grafana dashboards").results)

    pinned = engram.update_memory(user, memory.id, pinned=True, importance=0.9)
    assert pinned.memory.pinned is True and pinned.memory.importance == pytest.approx(0.9)
    assert pinned.memory.content == after, "what was not sent stays as it was"
    assert engram.get_memory(user, memory.id).memory.pinned is True


def test_a_deleted_memory_is_gone_everywhere(engram: Engram, user: str) -> None:
    kept = engram.add_memory(user, "My cat is called Miso.", category="personal").memory
    gone = engram.add_memory(user, "I ride a green Brompton bicycle to work.", category="personal").memory
    assert engram.search(user, "which bicycle does the user ride?").results[0].id == gone.id

    deleted = engram.delete_memory(user, gone.id)
    assert isinstance(deleted, MemoryDeleted) and deleted.memory_id == gone.id
    assert deleted.deleted["memories"] == 1
    with pytest.raises(NotFoundError):
        engram.get_memory(user, gone.id)
    assert gone.id not in [r.id for r in engram.search(user, "which bicycle does the user ride?").results]
    assert [m.id for m in engram.list_memories(user)] == [kept.id]
    with pytest.raises(NotFoundError) as err:
        engram.delete_memory(user, gone.id)
    assert (err.value.status, err.value.code) == (404, "not_found"), "deleting again finds nothing"


def test_deleting_with_its_sources_redacts_the_events_it_came_from(engram: Engram, user: str) -> None:
    said = "I live in Lisbon."
    stored = engram.add_event(user, "user", said, id=f"{user}-lisbon")
    assert said in [r.content for r in engram.search(user, "I live in Lisbon", kinds=["event"]).results]
    run_job(engram, "extract_facts", user)
    fact = engram.search(user, "where does the user live?", kinds=["fact"]).results[0]
    assert "Lisbon" in fact.content and fact.source_event_ids == stored.ids

    deleted = engram.delete_memory(user, fact.id, sources=True)
    assert deleted.memory_id == fact.id and deleted.deleted["memories"] == 1
    assert deleted.deleted["events_redacted"] == 1
    events = engram.search(user, "I live in Lisbon", kinds=["event"]).results
    assert all(said not in r.content and "Lisbon" not in r.content for r in events)


def test_invalid_input_names_the_field(engram: Engram, user: str) -> None:
    with pytest.raises(InvalidRequestError) as err:
        engram.add_memory(user, "")
    assert (err.value.status, err.value.code, err.value.field) == (400, "invalid_request", "content")
    with pytest.raises(InvalidRequestError) as err:
        engram.add_memory(user, "I like tea.", category="drinks")
    assert err.value.field == "category"

    memory = engram.add_memory(user, "I like tea.", category="preference").memory
    with pytest.raises(InvalidRequestError) as err:
        engram.update_memory(user, memory.id, content="")
    assert err.value.field == "content"
    with pytest.raises(InvalidRequestError) as err:
        engram.update_memory(user, memory.id, category="drinks")
    assert err.value.field == "category"
    with pytest.raises(InvalidRequestError):
        engram.update_memory(user, memory.id)
    assert engram.get_memory(user, memory.id).memory.content == "I like tea."


def test_writing_memories_needs_the_ingest_scope(server, engram: Engram, user: str) -> None:
    memory = engram.add_memory(user, "My favourite colour is teal.", category="preference").memory
    with Engram(api_key=server.keys["reader"], base_url=server.url) as reader:
        with pytest.raises(PermissionDeniedError) as err:
            reader.add_memory(user, "My favourite colour is red.")
        assert (err.value.status, err.value.code) == (403, "forbidden") and "ingest" in err.value.message
        with pytest.raises(PermissionDeniedError):
            reader.update_memory(user, memory.id, pinned=True)
        with pytest.raises(PermissionDeniedError):
            reader.delete_memory(user, memory.id)
        assert reader.get_memory(user, memory.id).memory.pinned is False
    assert [m.id for m in engram.list_memories(user)] == [memory.id]


def test_another_users_memory_is_not_found(engram: Engram, user: str) -> None:
    memory = engram.add_memory(user, "My manager is called Joana.", category="relationship").memory
    other = f"{user}-other"
    with pytest.raises(NotFoundError):
        engram.get_memory(other, memory.id)
    with pytest.raises(NotFoundError) as err:
        engram.update_memory(other, memory.id, pinned=True)
    assert (err.value.status, err.value.code) == (404, "not_found")
    with pytest.raises(NotFoundError):
        engram.delete_memory(other, memory.id)
    with pytest.raises(NotFoundError):
        engram.delete_memory(user, str(uuid.uuid4()))
    kept = engram.get_memory(user, memory.id).memory
    assert kept.status == "active" and kept.pinned is False


def test_only_the_update_is_retried() -> None:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        body = {"error": {"code": "unavailable", "message": "the service is temporarily unavailable"}}
        return httpx.Response(503, json=body, request=request)

    http = httpx.Client(transport=httpx.MockTransport(handler))
    with Engram(api_key="egm_x", base_url="http://engram.invalid", http_client=http, max_retries=1) as engram:
        with pytest.raises(ServiceUnavailableError):
            engram.add_memory("alice", "Our database is PostgreSQL.", key="database", pinned=True)
        with pytest.raises(ServiceUnavailableError):
            engram.update_memory("alice", "m-1", pinned=False)
        with pytest.raises(ServiceUnavailableError):
            engram.delete_memory("alice", "m-1")
        with pytest.raises(ServiceUnavailableError):
            engram.delete_memory("alice", "m-1", sources=True)
    assert [(r.method, str(r.url)) for r in requests] == [
        ("POST", "http://engram.invalid/v1/users/alice/memories"),
        ("PATCH", "http://engram.invalid/v1/users/alice/memories/m-1"),
        ("PATCH", "http://engram.invalid/v1/users/alice/memories/m-1"),
        ("DELETE", "http://engram.invalid/v1/users/alice/memories/m-1"),
        ("DELETE", "http://engram.invalid/v1/users/alice/memories/m-1?sources=true"),
    ]
    assert json.loads(requests[0].content) == {"content": "Our database is PostgreSQL.", "key": "database", "pinned": True}
    assert json.loads(requests[1].content) == {"pinned": False}


async def test_the_async_client_adds_and_deletes(server, user: str) -> None:
    async with AsyncEngram(api_key=server.keys["admin"], base_url=server.url) as engram:
        added = await engram.add_memory(user, "Our staging cluster runs on Hetzner.", category="technical")
        assert added.outcome == "created"
        found = await engram.search(user, "where does the staging cluster run?")
        assert found.results[0].id == added.memory.id
        assert (await engram.update_memory(user, added.memory.id, pinned=True)).memory.pinned is True
        deleted = await engram.delete_memory(user, added.memory.id)
        assert deleted.memory_id == added.memory.id and deleted.deleted["memories"] == 1
        with pytest.raises(NotFoundError):
            await engram.get_memory(user, added.memory.id)
        assert [m async for m in engram.list_memories(user)] == []
