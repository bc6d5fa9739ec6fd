"""docs/operating.md's webhooks, run as written: its `curl` subscribes a receiver on
loopback, a memory is added, and its Python `verified` accepts the delivery's signature
under the subscription's secret and no other."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from conftest import ROOT, engram_test_server

PAGE = ROOT / "docs" / "operating.md"



class _Receiver(BaseHTTPRequestHandler):
    got: list[tuple[str, bytes]] = []

    def do_POST(self):  # noqa: N802 (the name http.server calls)
        body = self.rfile.read(int(self.headers["content-length"]))
        _Receiver.got.append((self.headers["engram-signature"], body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def _section() -> str:
    text = PAGE.read_text()
    return text[text.index("## Webhooks"):text.index("## Logs")]



def test_the_page_subscribes_and_checks_a_signature(server):
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hook_url = f"http://127.0.0.1:{receiver.server_address[1]}/hooks/engram"

    (subscribe,) = re.findall(r"```sh\n(.*?)```", _section(), flags=re.S)
    command = subscribe.replace("https://engram.example.com", server.url).replace(
        "https://crm.example.com/hooks/engram", hook_url)
    done = subprocess.run(["bash", "-c", command], env={**os.environ, "ADMIN_KEY": server.keys["admin"]},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    secret = json.loads(done.stdout)["secret"]

    headers = {"authorization": f"Bearer {server.keys['admin']}"}
    made = httpx.post(f"{server.url}/v1/users/ann/memories", headers=headers, json={"content": "Ann keeps bees"})
    assert made.status_code == 201, made.text
    deadline = time.monotonic() + 30
    while not _Receiver.got:
        assert time.monotonic() < deadline, "no delivery within 30 s"
        time.sleep(0.1)
    header, body = _Receiver.got[0]
    assert json.loads(body)["content"] == "Ann keeps bees"

    (check,) = re.findall(r"```python\n(.*?)```", _section(), flags=re.S)
    page = {}
    exec(check, page)  # the page's own function, as a receiver would paste it
    assert page["verified"](secret, header, body)
    assert not page["verified"]("whsec_not_this_one", header, body)
    assert not page["verified"](secret, header, body + b" ")
