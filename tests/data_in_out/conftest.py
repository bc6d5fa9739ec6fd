"""A real engram for the data in and out tests, started the way the Python client's
tests start it, on a database of each module's own."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_spec = importlib.util.spec_from_file_location("engram_test_server", ROOT / "clients/python/tests/conftest.py")
engram_test_server = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = engram_test_server
_spec.loader.exec_module(engram_test_server)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    running = engram_test_server.start_server(tmp_path_factory.mktemp("engram"))
    yield running
    engram_test_server.stop_server(running)
