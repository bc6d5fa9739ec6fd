"""The README's "Use it from an agent" works as written: its MCP host configurations
connect through the reference MCP client, and its Python quickstart runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from conftest import ROOT, _binary

SECTION = (ROOT / "README.md").read_text().split("## Use it from an agent", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```(json|python)\n(.*?)```", SECTION, re.S)
KEY = "egm_your_key"


def mcp_configurations() -> list[dict]:
    return [json.loads(body)["mcpServers"]["engram"] for kind, body in BLOCKS if kind == "json"]


async def test_the_http_configuration_connects(server) -> None:
    config = next(c for c in mcp_configurations() if c.get("type") == "http")
    url = config["url"].replace("http://127.0.0.1:8080", server.url)
    headers = {name: value.replace(KEY, server.keys["reader"]) for name, value in config["headers"].items()}
    async with httpx2.AsyncClient(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            assert "get_context" in {tool.name for tool in (await client.list_tools()).tools}


async def test_the_stdio_configuration_connects(server, tmp_path) -> None:
    config = next(c for c in mcp_configurations() if "command" in c)
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


def test_the_python_quickstart_runs(server) -> None:
    code = next(body for kind, body in BLOCKS if kind == "python")
    env = {"ENGRAM_API_KEY": server.keys["admin"], "ENGRAM_BASE_URL": server.url, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, *context = done.stdout.splitlines()
    assert first == "We moved our database to PostgreSQL"
    assert any("PostgreSQL" in line for line in context)
