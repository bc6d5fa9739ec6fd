"""engram as LangGraph's long-term store: `EngramStore` and `AsyncEngramStore` against a
real engram, through LangGraph's own `BaseStore` methods, through a compiled graph,
and through LangMem's memory tools (which run without an LLM)."""

from __future__ import annotations

import uuid

import pytest
from langgraph.store.base import InvalidNamespaceError
from langmem import create_manage_memory_tool, create_search_memory_tool

from engram_client import AsyncEngram, Engram
from engram_client.langgraph import AsyncEngramStore, EngramStore
from helpers import run_job


@pytest.fixture
def engram(server):
    with Engram(api_key=server.keys["admin"], base_url=server.url) as client:
        yield client


@pytest.fixture
def store(engram: Engram) -> EngramStore:
    return EngramStore(engram)


def test_put_get_search_and_delete_one_item(store: EngramStore, engram: Engram, user: str) -> None:
    store.put((user,), "editor", {"content": "Writes code in the Helix editor"})
    item = store.get((user,), "editor")
    assert item is not None and item.value == {"content": "Writes code in the Helix editor"}
    assert item.key == "editor" and item.namespace == (user,)

    found = store.search((user,), query="which text editor does the user like?")
    assert found and found[0].key == "editor" and 0 < found[0].score <= 1
    assert engram.search(user, "text editor").results[0].content == "Writes code in the Helix editor", \
        "the item is an engram memory, searchable by every client"

    store.delete((user,), "editor")
    assert store.get((user,), "editor") is None
    assert not [r for r in engram.search(user, "Helix editor").results if "Helix" in r.content]


def test_a_second_put_of_a_key_is_a_knowledge_update(store: EngramStore, engram: Engram, user: str) -> None:
    store.put((user,), "home_city", {"content": "Lives in Austin"})
    store.put((user,), "home_city", {"content": "Lives in Denver now"})
    assert store.get((user,), "home_city").value == {"content": "Lives in Denver now"}
    old = list(engram.list_memories(user, status="superseded"))
    assert [m.content for m in old] == ["Lives in Austin"], "the old value is kept as history, not served"
    assert [i.value["content"] for i in store.search((user,), query="where does the user live?")][:1] == [
        "Lives in Denver now"]


def test_structured_values_and_categories_round_trip(store: EngramStore, user: str) -> None:
    value = {"tool": "ripgrep", "why": "fast search", "since": 2021}
    store.put((user, "preference"), "search_tool", value)
    assert store.get((user, "preference"), "search_tool").value == value
    assert store.get((user, "project"), "search_tool") is None, "the category is part of the namespace"
    assert store.search((user, "preference"), query="search tool", filter={"tool": "ripgrep"})[0].value == value
    assert store.search((user,), query="search tool", filter={"tool": "grep"}) == []
    listed = store.search((user, "preference"))
    assert [item.key for item in listed] == ["search_tool"]


def test_a_memory_engram_extracted_is_found_and_replaced_through_the_store(store: EngramStore, engram: Engram,
                                                                             user: str) -> None:
    engram.add_event(user, "user", "I work as a data engineer at Globex.", id=f"{user}-1")
    run_job(engram, "extract_facts", user)
    found = store.search((user,), query="where does the user work?")
    assert found and "Globex" in found[0].value["content"]
    key, before = found[0].key, found[0].value["content"]
    store.put((user,), key, {"content": "Works as a data engineer at Initech"})
    assert store.get((user,), key).value == {"content": "Works as a data engineer at Initech"}
    assert before not in [m.content for m in engram.list_memories(user)], "the old value is no longer served"


def test_a_memory_without_a_key_answers_to_its_id(store: EngramStore, engram: Engram, user: str) -> None:
    memory = engram.add_memory(user, "Runs the team's weekly retro on Fridays").memory
    assert store.get((user,), memory.id).value == {"content": "Runs the team's weekly retro on Fridays"}
    store.put((user,), memory.id, {"content": "Runs the team's weekly retro on Thursdays"})
    detail = engram.get_memory(user, memory.id)
    assert detail.memory.content == "Runs the team's weekly retro on Thursdays"
    assert detail.history[-1].action == "updated", "corrected in place, with its history"


def test_namespaces_are_users_under_the_prefix(engram: Engram) -> None:
    store = EngramStore(engram, prefix=("memories",))
    users = [f"ns-{uuid.uuid4().hex[:8]}" for _ in range(3)]
    for user in users:
        store.put(("memories", user), "note", {"content": f"{user} keeps notes in Obsidian"})
    listed = store.list_namespaces(prefix=("memories",), limit=1000)
    assert set(("memories", user) for user in users) <= set(listed)
    assert all(len(name) == 2 and name[0] == "memories" for name in listed)
    assert store.list_namespaces(prefix=("elsewhere",)) == []
    assert store.list_namespaces(max_depth=1, limit=1000) == [("memories",)]
    with pytest.raises(InvalidNamespaceError):
        store.put(("notes", "alice"), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.search(("memories",), query="anyone")


async def test_the_async_store(server, user: str) -> None:
    async with AsyncEngram(api_key=server.keys["admin"], base_url=server.url) as client:
        store = AsyncEngramStore(client)
        await store.aput((user,), "pet", {"content": "Has a cat called Miso"})
        assert (await store.aget((user,), "pet")).value == {"content": "Has a cat called Miso"}
        found = await store.asearch((user,), query="the user's cat")
        assert found[0].key == "pet"
        await store.adelete((user,), "pet")
        assert await store.aget((user,), "pet") is None


def test_langmem_tools_write_and_read_through_the_store(engram: Engram, user: str) -> None:
    store = EngramStore(engram, prefix=("memories",))
    namespace = ("memories", "{langgraph_user_id}")
    manage = create_manage_memory_tool(namespace=namespace, store=store)
    search = create_search_memory_tool(namespace=namespace, store=store)
    config = {"configurable": {"langgraph_user_id": user}}

    created = manage.invoke({"content": "The user is training for the Berlin marathon", "action": "create"},
                            config=config)
    memory_key = created.split()[-1]
    found = search.invoke({"query": "what is the user training for?"}, config=config)
    assert "Berlin marathon" in found and memory_key in found

    manage.invoke({"content": "The user is training for the Tokyo marathon", "action": "update", "id": memory_key},
                  config=config)
    assert store.get(("memories", user), memory_key).value == {"content": "The user is training for the Tokyo marathon"}
    assert "Tokyo" in search.invoke({"query": "which marathon?"}, config=config)

    manage.invoke({"action": "delete", "id": memory_key}, config=config)
    assert store.get(("memories", user), memory_key) is None
    assert "marathon" not in search.invoke({"query": "which marathon?"}, config=config)
