"""Each error engram answers becomes its own exception; safe calls are retried."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from engram_client import (
    APIConnectionError,
    APIStatusError,
    AuthenticationError,
    ConflictError,
    Engram,
    InternalServerError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
)
from conftest import start_server, stop_server


def client(server, key: str = "admin", **kwargs) -> Engram:
    return Engram(api_key=server.keys.get(key, key), base_url=server.url, **kwargs)


def test_invalid_input_names_the_field(server, user: str) -> None:
    with client(server) as engram:
        with pytest.raises(InvalidRequestError) as err:
            engram.search(user, "anything", limit=0)
        assert (err.value.status, err.value.code, err.value.field) == (400, "invalid_request", "limit")
        assert err.value.request_id and "limit" in err.value.message
        with pytest.raises(InvalidRequestError) as err:
            engram.add_events([{"user_id": user, "role": "robot", "content": "hi"}])
        assert err.value.field == "events[0].role"


def test_keys_are_checked(server, user: str) -> None:
    for key in ("egm_not_a_key", "revoked"):
        with client(server, key) as engram, pytest.raises(AuthenticationError) as err:
            engram.search(user, "anything")
        assert (err.value.status, err.value.code) == (401, "unauthorized")
    with client(server, "reader") as engram:
        with pytest.raises(PermissionDeniedError) as err:
            engram.add_event(user, "user", "hello", id="x")
        assert (err.value.status, err.value.code) == (403, "forbidden") and "ingest" in err.value.message
        with pytest.raises(PermissionDeniedError):
            engram.forget_user(user)


def test_missing_and_conflicting_things(server, user: str) -> None:
    with client(server) as engram:
        with pytest.raises(NotFoundError) as err:
            engram.get_memory(user, str(uuid.uuid4()))
        assert err.value.status == 404 and err.value.code == "not_found"
        run = engram.run_job("evict", user_id=user)
        try:
            with pytest.raises(ConflictError) as err:
                engram.run_job("evict", user_id=user)
            assert err.value.status == 409
        finally:
            engram.wait_for_run(run.run_id)


def test_a_body_over_the_limit_is_refused_whole(server, user: str) -> None:
    # The test server takes bodies up to 64 KiB.
    events = [{"user_id": user, "role": "user", "content": "x" * 30_000, "id": f"big-{i}"} for i in range(3)]
    with client(server) as engram:
        with pytest.raises(PayloadTooLargeError) as err:
            engram.add_events(events)
        assert err.value.status == 413 and err.value.code == "payload_too_large"
        assert engram.search(user, "x", kinds=["event"]).results == [], "nothing of the batch was stored"


def test_a_rate_limited_call_waits_as_told_and_goes_through(server, user: str) -> None:
    requests: list[httpx.Request] = []
    http = httpx.Client(event_hooks={"request": [requests.append]})
    with client(server, "limited", http_client=http) as engram:
        engram.search(user, "first")
        started = time.monotonic()
        assert engram.search(user, "second").results == []
        waited = time.monotonic() - started
    assert len(requests) == 3, "the second search was refused once, then retried"
    assert waited >= 0.9, "the client waited for Retry-After"
    time.sleep(1.1)
    with client(server, "limited", max_retries=0) as engram:
        engram.search(user, "third")
        with pytest.raises(RateLimitError) as err:
            engram.search(user, "fourth")
        assert err.value.status == 429 and err.value.retry_after and err.value.retry_after >= 1
    http.close()


class FailFirst(httpx.BaseTransport):
    """Answers the first `times` requests with engram's 503, then passes them on."""

    def __init__(self, times: int) -> None:
        self.inner = httpx.HTTPTransport()
        self.left = times
        self.seen = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen += 1
        if self.left > 0:
            self.left -= 1
            body = {"error": {"code": "unavailable", "message": "the service is temporarily unavailable"}}
            return httpx.Response(503, json=body, request=request)
        return self.inner.handle_request(request)


def test_a_503_is_retried_for_safe_calls_only(server, user: str) -> None:
    transport = FailFirst(times=2)
    with client(server, http_client=httpx.Client(transport=transport)) as engram:
        assert engram.search(user, "anything").hit is False
        assert transport.seen == 3
    transport = FailFirst(times=1)
    with client(server, http_client=httpx.Client(transport=transport)) as engram:
        with pytest.raises(ServiceUnavailableError):
            engram.add_event(user, "user", "no client id, so never sent twice")
        assert transport.seen == 1
        assert engram.add_events([{"user_id": user, "role": "user", "content": "with an id", "id": "r-1"}]).accepted == 1


@pytest.fixture(scope="module")
def without_embedder(tmp_path_factory: pytest.TempPathFactory):
    """engram whose embedding endpoint is down: lookups by meaning cannot be answered."""
    running = start_server(tmp_path_factory.mktemp("down"), {
        "ENGRAM_EMBEDDINGS__PROVIDER": "openai",
        "ENGRAM_EMBEDDINGS__BASE_URL": "http://127.0.0.1:9/v1",
        "ENGRAM_EMBEDDINGS__MODEL": "absent",
        "ENGRAM_EMBEDDINGS__DIMENSIONS": "384",
        "ENGRAM_EMBEDDINGS__TIMEOUT_SECS": "2",
        "ENGRAM_EMBEDDINGS__API_KEY": "unused",
    })
    yield running
    stop_server(running)


def test_engram_unavailable_is_retried_then_raised(without_embedder) -> None:
    requests: list[httpx.Request] = []
    http = httpx.Client(event_hooks={"request": [requests.append]})
    with client(without_embedder, http_client=http, max_retries=2) as engram:
        with pytest.raises(ServiceUnavailableError) as err:
            engram.search("alice", "which database?")
        assert err.value.status == 503 and err.value.code == "unavailable"
        assert len(requests) == 3
        with pytest.raises(ServiceUnavailableError) as err:
            engram.readiness()
        assert err.value.code == "not_ready" and "embeddings endpoint" in err.value.message
    http.close()


def test_connection_errors_are_retried_then_raised() -> None:
    requests: list[httpx.Request] = []
    http = httpx.Client(event_hooks={"request": [requests.append]})
    with Engram(api_key="egm_x", base_url="http://127.0.0.1:9", http_client=http, max_retries=1) as engram:
        with pytest.raises(APIConnectionError):
            engram.health()
    assert len(requests) == 2


def test_a_server_failure_without_engram_body_is_still_typed() -> None:
    # engram answers no client request with a 500 on purpose; a proxy in front of it may.
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, text="upstream broke", request=request)

    http = httpx.Client(transport=httpx.MockTransport(handler))
    with Engram(api_key="egm_x", base_url="http://proxy.invalid", http_client=http, max_retries=0) as engram:
        with pytest.raises(InternalServerError) as err:
            engram.health()
    assert isinstance(err.value, APIStatusError) and (err.value.status, err.value.code) == (500, "internal")
