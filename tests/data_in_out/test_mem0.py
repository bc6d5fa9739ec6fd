"""docs/migrating.md, run as written: memories stored by the real Mem0 library (its
on-disk Qdrant store, and an OpenAI-protocol embeddings endpoint on loopback, since
Mem0 calls one when it adds), exported by the page's Python, imported by the page's
command, then found through engram's API with Mem0's ids kept.

Needs what the Python client's tests need (ENGRAM_TEST_DATABASE_URL, ENGRAM_TEST_PG_BIN,
ENGRAM_BIN) and the packages of requirements.txt."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from conftest import ROOT, engram_test_server

PAGE = ROOT / "docs" / "migrating.md"


DIMS = 64


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [((digest[i % 32] + i) % 17 - 8) / 8 for i in range(DIMS)]


class _Embeddings(BaseHTTPRequestHandler):
    """`POST /v1/embeddings` as OpenAI answers it, with a vector made from the text."""

    def do_POST(self):  # noqa: N802 (the name http.server calls)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": _vector(str(t))} for i, t in enumerate(inputs)]
        out = json.dumps({"object": "list", "model": body.get("model"), "data": data,
                          "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), flags=re.S)



def test_the_page_moves_a_user_over_from_mem0(server, tmp_path: Path):
    embeddings = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    threading.Thread(target=embeddings.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{embeddings.server_address[1]}/v1"
    config = {
        "vector_store": {"provider": "qdrant", "config": {"path": str(tmp_path / "qdrant"), "collection_name": "memories",
                                                          "embedding_model_dims": DIMS, "on_disk": True}},
        "embedder": {"provider": "openai", "config": {"model": "stub", "api_key": "unused", "openai_base_url": base,
                                                      "embedding_dims": DIMS}},
        "llm": {"provider": "openai", "config": {"model": "stub", "api_key": "unused", "openai_base_url": base}},
        "history_db_path": str(tmp_path / "history.db"),
    }
    (tmp_path / "mem0_config.json").write_text(json.dumps(config))
    from mem0 import Memory

    memory = Memory.from_config(config)
    said = ["Works as a landscape architect in Porto", "Plays the cello in a community orchestra",
            "Is allergic to hazelnuts"]
    added = [memory.add(text, user_id="alex", infer=False, metadata={"source": "onboarding"}) for text in said]
    mem0_ids = {a["results"][0]["memory"]: a["results"][0]["id"] for a in added}
    memory.add("Prefers tea to coffee", user_id="someone-else", infer=False)
    del memory  # the on-disk store is opened by one client at a time

    (export,) = _blocks("python")
    env = {**os.environ, "MEM0_TELEMETRY": "False"}
    done = subprocess.run([sys.executable, "-c", export], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "3 memories exported" in done.stdout
    command = next(b for b in _blocks("sh") if b.startswith("engram import alex.mem0.json"))
    args = shlex.split(command.strip())
    done = subprocess.run([str(engram_test_server._binary()), "--home", str(ROOT / ".engram"), *args[1:]],
                          cwd=tmp_path, env=server.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout)
    assert imported["format"] == "mem0" and imported["added"] == {"memories": 3}, imported

    headers = {"authorization": f"Bearer {server.keys['admin']}"}
    found = httpx.post(f"{server.url}/v1/search", headers=headers,
                       json={"user_id": "alex", "query": "which instrument do I play?", "limit": 3}).json()
    assert found["results"][0]["content"] == "Plays the cello in a community orchestra", found
    listed = httpx.get(f"{server.url}/v1/users/alex/memories", headers=headers).json()["memories"]
    assert {m["content"]: m["metadata"]["mem0_id"] for m in listed} == mem0_ids
    assert all(m["metadata"]["mem0_metadata"] == {"source": "onboarding"} for m in listed)
    # The same export again adds nothing.
    done = subprocess.run([str(engram_test_server._binary()), "--home", str(ROOT / ".engram"), *args[1:]],
                          cwd=tmp_path, env=server.env, capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout)["already_present"] == {"memories": 3}
