"""MCP as a generic client calls it: plain JSON-RPC over HTTP with nothing but a
bearer key and `Content-Type` (no `Accept`, no `initialize`), and connections bound
to one user by the key, by `?user_id=` or by `X-Engram-User` — through that plain
client and through the reference `mcp` SDK."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import pytest

from engram_client import Engram
from test_mcp import mcp_over_http, structured

_ids = itertools.count(1)


def rpc(server, key: str, method: str, params: dict[str, Any] | None = None, *, path: str = "/mcp",
        headers: dict[str, str] | None = None) -> httpx.Response:
    """One JSON-RPC request as the simplest client sends it: no Accept header at all."""
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}
    with httpx.Client(timeout=30) as http:
        request = http.build_request("POST", f"{server.url}{path}", content=json.dumps(body),
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}",
                                              **(headers or {})})
        del request.headers["accept"]
        return http.send(request)


def call(server, key: str, tool: str, arguments: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """A tool's result: `{"content": [...], "structuredContent": ..., "isError": ...}`."""
    response = rpc(server, key, "tools/call", {"name": tool, "arguments": arguments}, **kwargs)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()["result"]


@pytest.fixture(scope="module")
def bound(server) -> dict[str, str]:
    """Keys bound to one user each: `alice-...` with read and ingest, and its user."""
    user = "alice-bound"
    _, secret = server.create_key("read,ingest", "--user", user)
    return {"user": user, "key": secret}


def test_a_plain_json_rpc_client_lists_remembers_and_searches(server, user: str) -> None:
    key = server.keys["admin"]
    listed = rpc(server, key, "tools/list")
    assert listed.status_code == 200, listed.text
    names = {tool["name"] for tool in listed.json()["result"]["tools"]}
    assert {"remember", "search_memory"} <= names

    stored = call(server, key, "remember", {"user_id": user, "content": "My favourite editor is Helix."})
    assert not stored.get("isError") and stored["structuredContent"]["accepted"] == 1

    found = call(server, key, "search_memory", {"user_id": user, "query": "which editor?", "kinds": ["event"]})
    assert "Helix" in found["content"][0]["text"], "a model reads the results as text first"
    assert "Helix" in found["structuredContent"]["results"][0]["content"]


@pytest.mark.parametrize("accept", ["*/*", "application/json"])
def test_any_accept_that_takes_json_is_answered_in_json(server, accept: str) -> None:
    response = rpc(server, server.keys["reader"], "tools/list", headers={"Accept": accept})
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["tools"]


def test_without_a_user_the_error_says_how_to_bind_one(server) -> None:
    result = call(server, server.keys["admin"], "search_memory", {"query": "anything"})
    assert result["isError"]
    error = result["structuredContent"]["error"]
    assert error["field"] == "user_id" and "?user_id=" in error["message"] and "X-Engram-User" in error["message"]


@pytest.mark.parametrize("binding", ["query", "header"])
def test_a_connection_names_its_user_once(server, binding: str) -> None:
    user = f"conn-{binding}"
    kwargs: dict[str, Any] = {"path": f"/mcp?user_id={user}"} if binding == "query" else {
        "headers": {"X-Engram-User": user}}
    key = server.keys["admin"]
    assert call(server, key, "remember", {"content": "I am allergic to peanuts."}, **kwargs)["structuredContent"][
        "accepted"] == 1
    # A turn's vector is written just after it is stored; its words find it at once.
    found = call(server, key, "search_memory", {"query": "peanuts", "kinds": ["event"]}, **kwargs)
    assert "peanuts" in found["structuredContent"]["results"][0]["content"]
    with Engram(api_key=key, base_url=server.url) as engram:
        assert engram.search(user, "peanuts", kinds=["event"]).results, "stored for the named user"


def test_a_key_bound_to_a_user_needs_no_user_id_and_reaches_no_other(server, bound: dict[str, str]) -> None:
    key, user = bound["key"], bound["user"]
    assert call(server, key, "remember", {"content": "I moved to Porto last spring."})["structuredContent"][
        "accepted"] == 1
    added = call(server, key, "add_memory", {"content": "Prefers tea over coffee", "category": "preference"})
    memory_id = added["structuredContent"]["memory"]["id"]
    found = call(server, key, "search_memory", {"query": "tea or coffee?"})
    assert found["structuredContent"]["results"][0]["id"] == memory_id
    assert call(server, key, "search_memory", {"user_id": user, "query": "tea"})["structuredContent"]["results"]

    other = "bob-other"
    with Engram(api_key=server.keys["admin"], base_url=server.url) as engram:
        engram.add_events([{"user_id": other, "role": "user", "content": "Bob's secret plan is to learn Rust."}])
        bobs = engram.add_memory(other, "Bob likes sailing")
    for tool, arguments in [
        ("search_memory", {"user_id": other, "query": "plan", "kinds": ["event"]}),
        ("get_context", {"user_id": other, "query": "plan"}),
        ("remember", {"user_id": other, "content": "Written by the wrong key"}),
        ("list_memories", {"user_id": other}),
        ("get_memory", {"user_id": other, "memory_id": bobs.memory.id}),
        ("add_memory", {"user_id": other, "content": "x"}),
        ("update_memory", {"user_id": other, "memory_id": bobs.memory.id, "content": "changed"}),
        ("delete_memory", {"user_id": other, "memory_id": bobs.memory.id}),
        ("report_memory", {"user_id": other, "memory_id": bobs.memory.id, "kind": "wrong"}),
    ]:
        result = call(server, key, tool, arguments)
        assert result["isError"], tool
        assert result["structuredContent"]["error"]["code"] == "forbidden", (tool, result)
    # Nor by binding the connection to the other user.
    rebound = call(server, key, "search_memory", {"query": "plan", "kinds": ["event"]},
                   headers={"X-Engram-User": other})
    assert rebound["isError"] and user in rebound["structuredContent"]["error"]["message"]
    with Engram(api_key=server.keys["admin"], base_url=server.url) as engram:
        assert engram.get_memory(other, bobs.memory.id).memory.content == "Bob likes sailing"
        assert [r.content for r in engram.search(other, "wrong key", kinds=["event"]).results
                if "wrong key" in r.content] == []


def test_a_key_bound_to_a_user_reaches_no_other_through_any_route(server, bound: dict[str, str]) -> None:
    key, user, other = bound["key"], bound["user"], "bob-other"
    headers = {"Authorization": f"Bearer {key}"}
    with Engram(api_key=server.keys["admin"], base_url=server.url) as engram:
        bobs = engram.add_memory(other, "Bob sails on Sundays").memory.id
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as http:
        assert http.post("/v1/search", json={"user_id": user, "query": "Porto", "kinds": ["event"]}).status_code == 200
        attempts = [
            http.post("/v1/search", json={"user_id": other, "query": "plan"}),
            http.post("/v1/events", json={"events": [{"user_id": user, "role": "user", "content": "mine"},
                                                     {"user_id": other, "role": "user", "content": "theirs"}]}),
            http.get(f"/v1/users/{other}/context", params={"query": "plan"}),
            http.get(f"/v1/users/{other}/memories"),
            http.get(f"/v1/users/{other}/sessions"),
            http.get(f"/v1/users/{other}/summaries"),
            http.get(f"/v1/users/{other}/entities"),
            http.get(f"/v1/users/{other}/entities/00000000-0000-0000-0000-000000000000"),
            http.get(f"/v1/users/{other}/graph", params={"entity": "Bob"}),
            http.get(f"/v1/users/{other}/graph/path", params={"from": "Bob", "to": "Rust"}),
            http.post(f"/v1/users/{other}/memories", json={"content": "x"}),
            http.get(f"/v1/users/{other}/memories/{bobs}"),
            http.patch(f"/v1/users/{other}/memories/{bobs}", json={"content": "changed"}),
            http.delete(f"/v1/users/{other}/memories/{bobs}"),
            http.post("/v1/feedback", json={"user_id": other, "memory_id": "00000000-0000-0000-0000-000000000000",
                                            "kind": "wrong"}),
            http.get(f"/v1/users/{other}/export"),
            http.delete(f"/admin/v1/users/{other}"),
        ]
        for response in attempts:
            assert response.status_code == 403, (response.request.url, response.text)
            assert response.json()["error"]["code"] == "forbidden"
        mine = http.post("/v1/search", json={"user_id": user, "query": "mine", "kinds": ["event"]}).json()
        assert all(r["content"] != "mine" for r in mine["results"]), "a refused batch stores nothing"
    with Engram(api_key=server.keys["admin"], base_url=server.url) as engram:
        assert engram.get_memory(other, bobs).memory.content == "Bob sails on Sundays"


def test_a_bound_key_cannot_be_made_with_tenant_wide_scopes(server) -> None:
    import subprocess

    from conftest import ROOT, _binary
    done = subprocess.run([str(_binary()), "--home", str(ROOT / ".engram"), "keys", "create", "--tenant", "acme",
                           "--scope", "read,admin", "--user", "alice"], env=server.env, capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode != 0 and "--user" in done.stderr and "admin" in done.stderr


async def test_the_mcp_sdk_on_a_bound_connection(server, bound: dict[str, str]) -> None:
    async with mcp_over_http(server, bound["key"]) as client:
        stored = await client.call_tool("remember", {"events": [
            {"role": "user", "content": "My dog is called Pixel.", "id": "sdk-bound-1"}]})
        assert not stored.is_error
        found = await client.call_tool("search_memory", {"query": "dog's name", "kinds": ["event"]})
        assert "Pixel" in found.content[0].text
        assert "Pixel" in structured(found)["results"][0]["content"]
    async with mcp_over_http(server, "admin", headers={"X-Engram-User": "sdk-header-user"}) as client:
        stored = await client.call_tool("remember", {"content": "I play the cello."})
        assert structured(stored)["accepted"] == 1
        found = structured(await client.call_tool("search_memory", {"query": "playing the cello", "kinds": ["event"]}))
        assert "cello" in found["results"][0]["content"]
