"""The client against engram serving HTTPS itself (`server.tls_cert`, `server.tls_key`),
with a certificate signed by a CA made here: trusted through the client's own
`httpx.Client(verify=...)`, refused without it."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import httpx
import pytest

from conftest import start_server, stop_server
from engram_client import Engram
from engram_client._errors import APIConnectionError


def _openssl(cwd: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def https_server(tmp_path_factory: pytest.TempPathFactory):
    pki = tmp_path_factory.mktemp("pki")
    _openssl(pki, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-days", "2", "-subj", "/CN=client test CA")
    _openssl(pki, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=engram")
    (pki / "ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl(pki, "x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "srv.pem", "-days", "2", "-extfile", "ext")
    running = start_server(tmp_path_factory.mktemp("engram"), {
        "ENGRAM_SERVER__TLS_CERT": str(pki / "srv.pem"),
        "ENGRAM_SERVER__TLS_KEY": str(pki / "srv.key"),
        "_ENGRAM_TEST_CA": str(pki / "ca.pem"),
    })
    yield running, pki / "ca.pem"
    stop_server(running)


def test_the_client_reaches_https_engram_with_the_ca(https_server, user: str) -> None:
    server, ca = https_server
    assert server.url.startswith("https://")
    with Engram(api_key=server.keys["admin"], base_url=server.url, http_client=httpx.Client(verify=ssl.create_default_context(cafile=str(ca)))) as engram:
        engram.add_event(user, "user", "Our staging cluster runs in Frankfurt.")
        found = engram.search(user, "where does staging run?", kinds=["event"])
    assert "Frankfurt" in found.results[0].content


def test_without_the_ca_the_client_refuses_the_certificate(https_server, user: str) -> None:
    server, _ = https_server
    with Engram(api_key=server.keys["admin"], base_url=server.url, max_retries=0) as engram:
        with pytest.raises(APIConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
            engram.search(user, "anything")
