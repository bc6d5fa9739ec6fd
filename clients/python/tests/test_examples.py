"""The examples run as a user would run them, against a real engram."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engram_client import Engram

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(server, *args: str, stdin: str = "") -> str:
    env = {"ENGRAM_API_KEY": server.keys["admin"], "ENGRAM_BASE_URL": server.url, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, *args], input=stdin, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_agent_loop_recalls_before_and_remembers_after(server, user: str) -> None:
    out = run(server, str(EXAMPLES / "agent_loop.py"), user,
              stdin="Our database is PostgreSQL 17.\nWhich database is ours?\n\n")
    replies = [line for line in out.splitlines() if line.startswith("agent: ")]
    assert replies[0] == "agent: I don't know anything about that yet."
    assert "PostgreSQL 17" in replies[1], "the second answer had the first turn in its context"
    with Engram(api_key=server.keys["admin"], base_url=server.url) as engram:
        sessions = engram.sessions(user).sessions
        assert len(sessions) == 1 and sessions[0].event_count == 4, "both turns of both exchanges are stored"


def test_the_langgraph_agent_searches_memory_with_its_tool(server, user: str) -> None:
    with Engram(api_key=server.keys["admin"], base_url=server.url) as engram:
        engram.add_event(user, "user", "The backend framework is FastAPI.", id="lg-1")
    out = run(server, str(EXAMPLES / "langgraph_tools.py"), user, "backend framework")
    assert out.startswith("From memory:") and "FastAPI" in out


def test_the_langgraph_graph_keeps_its_memory_in_engram(server, user: str) -> None:
    out = run(server, str(EXAMPLES / "langgraph_store.py"), user, "what do I ride?",
              "remember that I ride a green bicycle to work", "what do I ride?")
    first, noted, recalled = out.splitlines()
    assert first == "I don't know anything about that yet."
    assert noted == "Noted."
    assert recalled.startswith("From memory:") and "green bicycle" in recalled
    with Engram(api_key=server.keys["admin"], base_url=server.url) as engram:
        assert [m.content for m in engram.list_memories(user)] == ["I ride a green bicycle to work"]
