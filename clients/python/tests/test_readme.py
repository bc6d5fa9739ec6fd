"""The README's "A first memory" works as written, block by block, against a real engram:
its shell commands, its Python and its MCP host configuration; and so do the MCP
configurations, the JSON-RPC call and the LangGraph store of docs/integrations.md (its
TypeScript block runs in clients/typescript/test/docs.test.mjs)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from conftest import ROOT, _binary

FIRST_MEMORY = (ROOT / "README.md").read_text().split("## A first memory", 1)[1].split("\n## ", 1)[0]
INTEGRATIONS = (ROOT / "docs" / "integrations.md").read_text()
BLOCKS = re.findall(r"```(json|python|bash)\n(.*?)```", FIRST_MEMORY + INTEGRATIONS, re.S)
KEY = "egm_your_key"
README_URL = "http://127.0.0.1:8080"


def mcp_configurations() -> list[dict]:
    """The engram entry of every host configuration: `mcpServers` (Claude Desktop, Claude
    Code, Cursor) or `servers` (VS Code), with a VS Code input filled in with the key."""
    found = []
    for kind, body in BLOCKS:
        if kind == "json":
            document = json.loads(body)
            entry = (document.get("mcpServers") or document["servers"])["engram"]
            found.append(json.loads(json.dumps(entry).replace("${input:engram-key}", KEY)))
    return found


def claude_code_configuration() -> dict:
    """What `claude mcp add --transport http NAME URL --header H` in the docs configures."""
    line = next(line for kind, body in BLOCKS if kind == "bash" for line in body.splitlines()
                if line.startswith("claude mcp add"))
    words = shlex.split(line)
    assert words[3:5] == ["--transport", "http"] and words[5] == "engram"
    name, value = words[words.index("--header") + 1].split(": ", 1)
    return {"type": "http", "url": words[6], "headers": {name: value}}


async def test_the_http_configurations_connect(server) -> None:
    configs = [c for c in mcp_configurations() if "url" in c] + [claude_code_configuration()]
    assert any("X-Engram-User" in c["headers"] for c in configs)
    assert any("type" not in c for c in configs), "Cursor's form, with no type, is among them"
    for config in configs:
        url = config["url"].replace(README_URL, server.url)
        headers = {name: value.replace(KEY, server.keys["reader"]) for name, value in config["headers"].items()}
        async with httpx2.AsyncClient(headers=headers) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                assert "get_context" in {tool.name for tool in (await client.list_tools()).tools}
                if "X-Engram-User" in headers:
                    # The connection names its user: no user_id in the call.
                    result = await client.call_tool("get_context", {"query": "anything"})
                    assert not result.is_error, result


def test_the_plain_json_rpc_call_runs(server) -> None:
    curl = next(body for kind, body in re.findall(r"```(bash)\n(.*?)```", INTEGRATIONS, re.S) if "/mcp" in body)
    env = {"PATH": "/usr/bin:/bin", "ENGRAM_API_KEY": server.keys["admin"]}
    # A user of its own: the README's first memory is alice's.
    curl = curl.replace(README_URL, server.url).replace('"alice"', '"json-rpc-user"')
    done = subprocess.run(["bash", "-c", curl], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert not result.get("isError") and result["structuredContent"]["accepted"] == 1
    found = httpx2.post(f"{server.url}/v1/search", headers={"Authorization": f"Bearer {server.keys['admin']}"},
                        json={"user_id": "json-rpc-user", "query": "seat preference", "kinds": ["event"]}).json()
    assert any("window seats" in r["content"] for r in found["results"])


def test_the_langgraph_store_blocks_run(server) -> None:
    section = INTEGRATIONS.split("## LangGraph's store", 1)[1].split("\n## ", 1)[0]
    code = "\n".join(body for kind, body in re.findall(r"```(python)\n(.*?)```", section, re.S))
    env = {"ENGRAM_API_KEY": server.keys["admin"], "ENGRAM_BASE_URL": server.url, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Alice writes code in Helix", "editor"]


async def test_the_stdio_configuration_connects(server, tmp_path) -> None:
    [config] = [c for c in mcp_configurations() if "command" in c]
    paths = {"/path/to/engram/target/release/engram": str(_binary()), "/path/to/engram/.engram": str(ROOT / ".engram")}
    env = {name: value.replace(KEY, server.keys["reader"]) for name, value in config["env"].items()}
    # This test's own database; the configuration's home directory would otherwise hold it.
    env["ENGRAM_DATABASE__URL"] = server.env["ENGRAM_DATABASE__URL"]
    params = StdioServerParameters(
        command=paths.get(config["command"], config["command"]),
        args=[paths.get(arg, arg) for arg in config["args"]], env=env, cwd=str(tmp_path),
    )
    async with Client(params) as client:
        result = await client.call_tool("get_context", {"user_id": "readme", "query": "anything"})
        assert not result.is_error
    # The agent's first two calls: remember, then find it, before any job has run.
    params.env = {**env, "ENGRAM_API_KEY": server.keys["admin"]}
    async with Client(params) as client:
        stored = await client.call_tool("remember", {"user_id": "readme-stdio",
                                                     "content": "My daughter starts violin lessons on Tuesday."})
        assert not stored.is_error, stored
        found = await client.call_tool("search_memory", {"user_id": "readme-stdio", "query": "violin lessons"})
        assert "violin" in found.content[0].text, found


def test_the_python_quickstart_runs(server) -> None:
    code = next(body for kind, body in BLOCKS if kind == "python")
    env = {"ENGRAM_API_KEY": server.keys["admin"], "ENGRAM_BASE_URL": server.url, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, *context = done.stdout.splitlines()
    assert first == "We moved our database to PostgreSQL"
    assert any("PostgreSQL" in line for line in context)


def documents(output: str) -> list[dict]:
    """The JSON documents curl printed one after another, without separators."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(output := output.strip()):
        document, at = decoder.raw_decode(output, at)
        found.append(document)
        while at < len(output) and output[at].isspace():
            at += 1
    return found


def test_the_first_memory_commands_run_as_written(server, tmp_path) -> None:
    """The README's shell blocks, in order, in one shell: remember, recall, consolidate,
    read the context, add a memory and delete it. The first block reads the key
    `scripts/run` saved; here the key is this server's."""
    setup, *steps = [body for kind, body in re.findall(r"```(bash)\n(.*?)```", FIRST_MEMORY, re.S)]
    assert "ENGRAM_API_KEY" in setup and len(steps) == 4
    (tmp_path / ".engram").mkdir()
    (tmp_path / ".engram" / "dev-key").write_text(server.keys["admin"] + "\n")
    outputs = []
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for step in [setup, *steps]:
        script = "set -euo pipefail\n" + setup + "\n" + step.replace(README_URL, server.url)
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{step}\n{done.stderr}"
        outputs.append(done.stdout)
    _, remembered, recalled, context, deleted = [documents(out) for out in outputs]
    assert remembered[0]["accepted"] == 1
    assert "PostgreSQL" in recalled[0]["results"][0]["content"]
    queued, read = context
    assert "run_id" in queued
    assert "PostgreSQL" in read["text"], read["text"]
    assert deleted[-1]["deleted"]["memories"] == 1, deleted
    listing = f"{server.url}/v1/users/alice/memories"
    headers = {"Authorization": f"Bearer {server.keys['admin']}"}
    for _ in range(60):  # the run the README queued has finished long since, but a loaded machine may lag
        memories = httpx2.get(listing, headers=headers).json()["memories"]
        if any(memory.get("key") == "database" for memory in memories):
            break
        time.sleep(0.5)
    assert any(memory.get("key") == "database" for memory in memories), "extract_facts made the fact the README names"
    assert not any("dark mode" in memory["content"] for memory in memories)
