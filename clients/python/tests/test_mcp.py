"""engram's MCP tools through the reference MCP client (the `mcp` package): over
Streamable HTTP at /mcp with engram's keys, and over stdio (`engram mcp --stdio`)."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from conftest import ROOT, _binary
from engram_client import Engram
from helpers import run_job

TOOLS = {"remember", "search_memory", "get_context", "list_memories", "get_memory", "add_memory", "update_memory",
         "delete_memory", "report_memory", "forget_user"}


@asynccontextmanager
async def mcp_over_http(server, key: str | None, headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    sent = dict(headers or {})
    if key is not None:
        sent["Authorization"] = f"Bearer {server.keys.get(key, key)}"
    async with httpx2.AsyncClient(headers=sent, timeout=30) as http:
        async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
            yield client


def structured(result: Any) -> dict[str, Any]:
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def test_tools_are_listed_with_schemas(server) -> None:
    async with mcp_over_http(server, "reader") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    search = tools["search_memory"]
    assert search.description and "user" in search.description
    assert search.input_schema["required"] == ["query"], "user_id may come from the connection"
    assert tools["forget_user"].annotations.destructive_hint is True
    assert tools["get_context"].annotations.read_only_hint is True


async def test_remembered_turns_become_memories_found_by_search(server, user: str) -> None:
    async with mcp_over_http(server, "admin") as client:
        stored = await client.call_tool("remember", {"user_id": user, "events": [
            {"role": "user", "content": "I live in Lisbon with my two cats.", "id": "m-1"},
            {"role": "assistant", "content": "Noted, thanks!", "id": "m-2"},
        ]})
        assert not stored.is_error and structured(stored)["accepted"] == 2
        with Engram(api_key=server.keys["admin"], base_url=server.url) as engram:
            run_job(engram, "extract_facts", user)
        found = await client.call_tool("search_memory", {"user_id": user, "query": "where does the user live?"})
        results = structured(found)["results"]
        facts = [r for r in results if r["kind"] == "fact"]
        assert facts and "Lisbon" in facts[0]["content"], results

        memory_id = facts[0]["id"]
        detail = structured(await client.call_tool("get_memory", {"user_id": user, "memory_id": memory_id}))
        assert detail["memory"]["id"] == memory_id and detail["history"][0]["action"] == "created"
        listed = structured(await client.call_tool("list_memories", {"user_id": user, "limit": 1}))
        assert len(listed["memories"]) == 1 and listed["next_cursor"]
        report = await client.call_tool("report_memory", {"user_id": user, "memory_id": memory_id, "kind": "helpful"})
        assert not report.is_error and structured(report)["id"]

        context = await client.call_tool("get_context", {"user_id": user, "query": "where do I live?", "max_tokens": 300})
        assert "Lisbon" in context.content[0].text, "a model reads the block itself"
        assert structured(context)["tokens"] <= 300

        forgotten = structured(await client.call_tool("forget_user", {"user_id": user}))
        assert forgotten["deleted"]["events"] == 2
        again = structured(await client.call_tool("search_memory", {"user_id": user, "query": "where does the user live?"}))
        assert again["results"] == []


async def test_a_key_bound_to_a_user_finds_what_it_just_remembered(server, user: str) -> None:
    _, bound = server.create_key("read,ingest", "--user", user)
    async with mcp_over_http(server, bound) as client:
        stored = await client.call_tool("remember", {"events": [
            {"role": "user", "content": "My sister Ines runs a bakery in Porto.", "id": "b-1"}]})
        assert structured(stored)["accepted"] == 1
        found = structured(await client.call_tool("search_memory", {"query": "What does Ines do?"}))
    assert found["results"] and "bakery" in found["results"][0]["content"], "no job has run: the turn itself answers"


async def test_one_memory_is_added_corrected_and_deleted_through_tools(server, user: str) -> None:
    async with mcp_over_http(server, "admin") as client:
        added = structured(await client.call_tool("add_memory", {"user_id": user, "content": "Prefers dark mode in every app",
                                                                 "category": "preference"}))
        assert added["outcome"] == "created"
        memory_id = added["memory"]["id"]
        found = structured(await client.call_tool("search_memory", {"user_id": user, "query": "does the user like dark mode?"}))
        assert [r["id"] for r in found["results"]][:1] == [memory_id], "searchable at once"
        edited = structured(await client.call_tool("update_memory", {"user_id": user, "memory_id": memory_id,
                                                                     "content": "Prefers a light theme by day, dark at night",
                                                                     "pinned": True}))
        assert edited["memory"]["pinned"] is True and edited["history"][-1]["action"] == "updated"
        deleted = structured(await client.call_tool("delete_memory", {"user_id": user, "memory_id": memory_id}))
        assert deleted["deleted"]["memories"] == 1
        gone = await client.call_tool("get_memory", {"user_id": user, "memory_id": memory_id})
        assert gone.is_error and structured(gone)["error"]["code"] == "not_found"
    async with mcp_over_http(server, "reader") as client:
        refused = await client.call_tool("add_memory", {"user_id": user, "content": "x"})
        assert structured(refused)["error"]["code"] == "forbidden"


async def test_a_tool_needs_the_scope_of_its_route(server, user: str) -> None:
    async with mcp_over_http(server, "reader") as client:
        refused = await client.call_tool("remember", {"user_id": user, "events": [{"role": "user", "content": "hi"}]})
        assert refused.is_error
        assert structured(refused)["error"]["code"] == "forbidden" and "ingest" in structured(refused)["error"]["message"]
        assert structured(await client.call_tool("forget_user", {"user_id": user}))["error"]["code"] == "forbidden"
        # The session goes on after a refusal.
        assert not (await client.call_tool("search_memory", {"user_id": user, "query": "hi"})).is_error
    with Engram(api_key=server.keys["admin"], base_url=server.url) as engram:
        assert engram.search(user, "hi", kinds=["event"]).results == [], "nothing was stored"


@pytest.mark.parametrize("key", [None, "egm_wrong", "revoked"])
async def test_no_wrong_or_revoked_key_is_refused_before_any_tool(server, key: str | None) -> None:
    with pytest.raises(Exception):
        async with mcp_over_http(server, key) as client:
            await client.list_tools()
    response = httpx.post(f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Authorization": f"Bearer {server.keys.get(key, key)}"} if key else {})
    assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"


async def test_a_foreign_origin_is_refused(server) -> None:
    response = httpx.post(f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Authorization": f"Bearer {server.keys['reader']}", "Origin": "https://evil.example"})
    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"


async def test_an_unknown_host_is_refused(server) -> None:
    # A page that rebinds its own name to 127.0.0.1 sends that name as Host.
    response = httpx.post(f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Authorization": f"Bearer {server.keys['reader']}", "Host": "rebound.example"})
    assert response.status_code == 403


async def test_a_malformed_argument_is_a_tool_error_naming_it(server, user: str) -> None:
    async with mcp_over_http(server, "admin") as client:
        bad_type = await client.call_tool("search_memory", {"user_id": user, "query": "x", "limit": "ten"})
        assert bad_type.is_error and structured(bad_type)["error"]["field"] == "limit"
        missing = await client.call_tool("search_memory", {"user_id": user})
        assert missing.is_error and structured(missing)["error"]["field"] == "query"
        bad_role = await client.call_tool("remember", {"user_id": user, "events": [{"role": "robot", "content": "x"}]})
        assert structured(bad_role)["error"] == {
            "code": "invalid_request", "field": "events[0].role",
            "message": "events[0].role: must be one of user, assistant, tool, system",
        }
        unknown = await client.call_tool("get_context", {"user_id": user, "colour": "red"})
        assert unknown.is_error and structured(unknown)["error"]["field"] == "colour"
        # Still usable afterwards.
        assert not (await client.call_tool("get_context", {"user_id": user})).is_error


async def test_the_same_tools_over_stdio(server, user: str) -> None:
    env = {key: value for key, value in server.env.items() if key.startswith("ENGRAM_")}
    params = StdioServerParameters(
        command=str(_binary()), args=["--home", str(ROOT / ".engram"), "mcp", "--stdio"],
        env={**env, "ENGRAM_API_KEY": server.keys["admin"]}, cwd=str(ROOT),
    )
    async with Client(params) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
        stored = await client.call_tool("remember", {"user_id": user, "events": [
            {"role": "user", "content": "Our CI runs on GitHub Actions.", "id": "stdio-1"}]})
        assert structured(stored)["accepted"] == 1
        found = await client.call_tool("search_memory", {"user_id": user, "query": "Where does our CI run?"})
        assert "GitHub Actions" in structured(found)["results"][0]["content"], "found before any job has run"
    reader = StdioServerParameters(command=params.command, args=params.args, cwd=params.cwd,
                                   env={**env, "ENGRAM_API_KEY": server.keys["reader"]})
    async with Client(reader) as client:
        refused = await client.call_tool("remember", {"user_id": user, "events": [{"role": "user", "content": "x"}]})
        assert structured(refused)["error"]["code"] == "forbidden"
