"""`Engram` and `AsyncEngram`: one method per route, errors raised as exceptions,
safe calls retried with exponential backoff and jitter."""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from typing import Any, Optional, TypeVar, Union, Unpack

import httpx

from . import _models as m
from . import _routes as r
from ._errors import APIConnectionError, APITimeoutError, EngramError, error_for, retry_after_seconds
from ._routes import Call, Event, ListOptions, RunOptions, SearchOptions

__all__ = ["Engram", "AsyncEngram"]

T = TypeVar("T")

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
#: Statuses worth another try: rate limited, and the server's own failures.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
INITIAL_DELAY = 0.5
MAX_DELAY = 8.0
VERSION = "0.1.0"


class _Base:
    def __init__(
        self, api_key: Optional[str], base_url: Optional[str], timeout: float, max_retries: int
    ) -> None:
        api_key = api_key or os.environ.get("ENGRAM_API_KEY")
        if not api_key:
            raise EngramError("an API key is required: pass api_key= or set ENGRAM_API_KEY")
        self.api_key = api_key
        self.base_url = (base_url or os.environ.get("ENGRAM_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.timeout = timeout
        self.max_retries = max(0, max_retries)

    def _build(self, call: Call[Any]) -> dict[str, Any]:
        return {
            "method": call.method,
            "url": self.base_url + call.path,
            "params": call.params or None,
            "json": call.json,
            "headers": {"Authorization": f"Bearer {self.api_key}", "User-Agent": f"engram-client-python/{VERSION}"},
            "timeout": self.timeout,
        }

    def _delay(self, attempt: int, response: Optional[httpx.Response]) -> Optional[float]:
        """How long to wait before try `attempt + 1`, or None to stop: connection errors,
        429 and 5xx are retried, honouring `Retry-After`."""
        if attempt >= self.max_retries:
            return None
        if response is not None:
            if response.status_code not in RETRY_STATUSES:
                return None
            asked = retry_after_seconds(response)
            if asked is not None:
                return min(asked, 60.0)
        backoff = min(MAX_DELAY, INITIAL_DELAY * 2**attempt)
        return backoff * random.uniform(0.5, 1.0)

    @staticmethod
    def _result(call: Call[T], response: httpx.Response) -> T:
        if response.status_code >= 400:
            raise error_for(response)
        body = response.json()
        return call.model.model_validate(body) if call.model is not None else body  # type: ignore[return-value]


def _connection_error(err: httpx.TransportError) -> APIConnectionError:
    if isinstance(err, httpx.TimeoutException):
        return APITimeoutError(f"engram did not answer in time: {err}", request=err.request)
    return APIConnectionError(f"cannot reach engram: {err}", request=getattr(err, "_request", None))


class Engram(_Base):
    """The engram API. `api_key` and `base_url` default to `ENGRAM_API_KEY` and
    `ENGRAM_BASE_URL`; pass `http_client` to bring your own `httpx.Client`."""

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: float = 30,
        max_retries: int = 2,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        super().__init__(api_key, base_url, timeout, max_retries)
        self._owns_client = http_client is None
        self._http = http_client or httpx.Client()

    def __enter__(self) -> "Engram":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_client:
            self._http.close()

    def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response = self._http.request(**self._build(call))
            except httpx.TransportError as err:
                delay = self._delay(attempt, None) if call.retryable else None
                if delay is None:
                    raise _connection_error(err) from err
            else:
                delay = self._delay(attempt, response) if call.retryable else None
                if delay is None:
                    return self._result(call, response)
            time.sleep(delay)
            attempt += 1

    # Events
    def add_events(self, events: list[Event]) -> m.Ingested:
        """Appends events in one transaction; give each an `id` to make retries safe."""
        return self._send(r.add_events(events))

    def add_event(self, user_id: str, role: str, content: str, **event: Unpack[Event]) -> m.Ingested:
        return self.add_events([{**event, "user_id": user_id, "role": role, "content": content}])

    # Lookups
    def search(self, user_id: str, query: str, **options: Unpack[SearchOptions]) -> m.SearchResponse:
        return self._send(r.search(user_id, query, options))

    def context(
        self, user_id: str, query: Optional[str] = None, *, max_tokens: Optional[int] = None,
        session_id: Optional[str] = None,
    ) -> m.ContextResponse:
        return self._send(r.context(user_id, query, max_tokens, session_id))

    def feedback(self, user_id: str, memory_id: str, kind: str, note: Optional[str] = None) -> m.Created:
        """`kind`: `wrong`, `outdated` or `helpful`."""
        return self._send(r.feedback(user_id, memory_id, kind, note))

    # Users
    def memories_page(self, user_id: str, cursor: Optional[str] = None, **options: Unpack[ListOptions]) -> m.MemoryPage:
        return self._send(r.memories_page(user_id, cursor, options))

    def list_memories(self, user_id: str, **options: Unpack[ListOptions]) -> Iterator[m.Memory]:
        """Every memory that matches, newest first, fetched a page at a time."""
        cursor: Optional[str] = None
        while True:
            page = self.memories_page(user_id, cursor, **options)
            yield from page.memories
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def get_memory(self, user_id: str, memory_id: str) -> m.MemoryDetail:
        return self._send(r.memory(user_id, memory_id))

    def add_memory(
        self, user_id: str, content: str, *, category: Optional[str] = None, key: Optional[str] = None,
        importance: Optional[float] = None, pinned: Optional[bool] = None,
        valid_from: Union[str, datetime, None] = None,
    ) -> m.AddedMemory:
        """Stores a memory as stated, searchable at once; a near-duplicate of an active one
        is not stored again (`outcome` `duplicate`), and one with the `key` of others
        supersedes them. Not retried."""
        return self._send(r.add_memory(user_id, content, category, key, importance, pinned, valid_from))

    def update_memory(
        self, user_id: str, memory_id: str, *, content: Optional[str] = None, category: Optional[str] = None,
        importance: Optional[float] = None, pinned: Optional[bool] = None,
    ) -> m.MemoryDetail:
        """Changes what is given (at least one), recorded in the memory's history."""
        return self._send(r.update_memory(user_id, memory_id, content, category, importance, pinned))

    def delete_memory(self, user_id: str, memory_id: str, *, sources: bool = False) -> m.MemoryDeleted:
        """Deletes a memory and redacts its history; `sources=True` also redacts the events
        it was extracted from. Not retried: a second try answers 404."""
        return self._send(r.delete_memory(user_id, memory_id, sources))

    def user(self, user_id: str) -> m.UserSummary:
        """What engram holds of a user, counted; NotFoundError when it holds nothing."""
        return self._send(r.user(user_id))

    def turns_page(
        self, user_id: str, session_id: Optional[str] = None, cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> m.TurnPage:
        """A page of the user's raw turns, newest first; of one session with `session_id`."""
        return self._send(r.turns_page(user_id, session_id, cursor, limit))

    def list_turns(
        self, user_id: str, session_id: Optional[str] = None, limit: Optional[int] = None
    ) -> Iterator[m.Turn]:
        """Every raw turn of the user (or of one session), newest first, a page at a time."""
        cursor: Optional[str] = None
        while True:
            page = self.turns_page(user_id, session_id, cursor, limit)
            yield from page.events
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def sessions(self, user_id: str, limit: Optional[int] = None) -> m.SessionList:
        return self._send(r.sessions(user_id, limit))

    def summaries(self, user_id: str, limit: Optional[int] = None) -> m.SummaryList:
        return self._send(r.summaries(user_id, limit))

    def export_user(self, user_id: str) -> dict[str, Any]:
        return self._send(r.export(user_id))

    def import_user(self, user_id: str, document: Any) -> m.Imported:
        """Writes an engram export, or Mem0's `get_all` result, into the user (scope admin)."""
        return self._send(r.import_user(user_id, document))

    def forget_user(self, user_id: str) -> m.Deleted:
        return self._send(r.forget(user_id))

    def users_page(self, cursor: Optional[str] = None, limit: Optional[int] = None) -> m.UserPage:
        """A page of the tenant's users in id order (scope admin)."""
        return self._send(r.users_page(cursor, limit))

    def list_users(self, limit: Optional[int] = None) -> Iterator[m.UserSummary]:
        """Every user of the tenant, fetched a page at a time (scope admin)."""
        cursor: Optional[str] = None
        while True:
            page = self.users_page(cursor, limit)
            yield from page.users
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def deletions(self, user_id: str) -> m.DeletionList:
        return self._send(r.deletions(user_id))

    def restore_memory(self, user_id: str, memory_id: str) -> m.MemoryDetail:
        return self._send(r.restore(user_id, memory_id))

    # Graph
    def entities_page(
        self,
        user_id: str,
        query: Optional[str] = None,
        type: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> m.EntityPage:
        return self._send(r.entities(user_id, query, type, limit, cursor))

    def get_entity(self, user_id: str, entity_id: str) -> m.EntityDetail:
        return self._send(r.entity(user_id, entity_id))

    def graph(
        self, user_id: str, entity: str, depth: Optional[int] = None, as_of: Union[str, datetime, None] = None
    ) -> m.Subgraph:
        """The relations within `depth` hops (1–3) of an entity (a name, an alias or an id)."""
        return self._send(r.graph(user_id, entity, depth, as_of))

    def graph_path(self, user_id: str, from_: str, to: str, max_depth: Optional[int] = None) -> m.Subgraph:
        """The shortest chain of relations from one entity to another."""
        return self._send(r.graph_path(user_id, from_, to, max_depth))

    def restore_entity(self, user_id: str, entity_id: str) -> m.EntityDetail:
        return self._send(r.restore_entity(user_id, entity_id))

    # Jobs
    def jobs(self) -> list[m.JobOverview]:
        return self._send(r.jobs()).jobs

    def run_job(self, job: str, **options: Unpack[RunOptions]) -> m.Queued:
        return self._send(r.run_job(job, options))

    def job_run(self, run_id: str) -> m.Run:
        return self._send(r.job_run(run_id))

    def job_runs_page(self, job: str, cursor: Optional[str] = None, limit: Optional[int] = None) -> m.RunPage:
        """A page of a job's runs, newest first."""
        return self._send(r.job_runs_page(job, cursor, limit))

    def wait_for_run(self, run_id: str, timeout: float = 120, poll: float = 0.25) -> m.Run:
        """Polls a run until it has finished; raises TimeoutError past `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not (run := self.job_run(run_id)).finished:
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} is still {run.status} after {timeout} s")
            time.sleep(poll)
        return run

    def pause_job(self, job: str) -> m.Paused:
        return self._send(r.pause_job(job, True))

    def resume_job(self, job: str) -> m.Paused:
        return self._send(r.pause_job(job, False))

    # Operations
    def create_webhook(self, url: str, events: list[str], description: Optional[str] = None) -> m.CreatedWebhook:
        """Subscribes `url` to `events` (scope admin); the answer's secret is shown only here."""
        return self._send(r.create_webhook(url, events, description))

    def webhooks(self) -> m.WebhookList:
        return self._send(r.webhooks())

    def delete_webhook(self, webhook_id: str) -> m.WebhookDeleted:
        return self._send(r.delete_webhook(webhook_id))

    def webhook_deliveries(self, webhook_id: str, limit: Optional[int] = None) -> m.DeliveryList:
        return self._send(r.webhook_deliveries(webhook_id, limit))

    def whoami(self) -> m.Caller:
        """The calling key: its tenant, its scopes, and the user it is bound to, if any."""
        return self._send(r.whoami())

    def health(self) -> m.ServiceStatus:
        return self._send(r.health())

    def readiness(self) -> m.ServiceStatus:
        return self._send(r.readiness())

    def openapi(self) -> dict[str, Any]:
        return self._send(r.openapi())


class AsyncEngram(_Base):
    """`Engram` for asyncio: the same methods, awaited."""

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: float = 30,
        max_retries: int = 2,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        super().__init__(api_key, base_url, timeout, max_retries)
        self._owns_client = http_client is None
        self._http = http_client or httpx.AsyncClient()

    async def __aenter__(self) -> "AsyncEngram":
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._owns_client:
            await self._http.aclose()

    async def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response = await self._http.request(**self._build(call))
            except httpx.TransportError as err:
                delay = self._delay(attempt, None) if call.retryable else None
                if delay is None:
                    raise _connection_error(err) from err
            else:
                delay = self._delay(attempt, response) if call.retryable else None
                if delay is None:
                    return self._result(call, response)
            await asyncio.sleep(delay)
            attempt += 1

    async def add_events(self, events: list[Event]) -> m.Ingested:
        return await self._send(r.add_events(events))

    async def add_event(self, user_id: str, role: str, content: str, **event: Unpack[Event]) -> m.Ingested:
        return await self.add_events([{**event, "user_id": user_id, "role": role, "content": content}])

    async def search(self, user_id: str, query: str, **options: Unpack[SearchOptions]) -> m.SearchResponse:
        return await self._send(r.search(user_id, query, options))

    async def context(
        self, user_id: str, query: Optional[str] = None, *, max_tokens: Optional[int] = None,
        session_id: Optional[str] = None,
    ) -> m.ContextResponse:
        return await self._send(r.context(user_id, query, max_tokens, session_id))

    async def feedback(self, user_id: str, memory_id: str, kind: str, note: Optional[str] = None) -> m.Created:
        return await self._send(r.feedback(user_id, memory_id, kind, note))

    async def memories_page(
        self, user_id: str, cursor: Optional[str] = None, **options: Unpack[ListOptions]
    ) -> m.MemoryPage:
        return await self._send(r.memories_page(user_id, cursor, options))

    async def list_memories(self, user_id: str, **options: Unpack[ListOptions]) -> AsyncIterator[m.Memory]:
        cursor: Optional[str] = None
        while True:
            page = await self.memories_page(user_id, cursor, **options)
            for memory in page.memories:
                yield memory
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def get_memory(self, user_id: str, memory_id: str) -> m.MemoryDetail:
        return await self._send(r.memory(user_id, memory_id))

    async def add_memory(
        self, user_id: str, content: str, *, category: Optional[str] = None, key: Optional[str] = None,
        importance: Optional[float] = None, pinned: Optional[bool] = None,
        valid_from: Union[str, datetime, None] = None,
    ) -> m.AddedMemory:
        return await self._send(r.add_memory(user_id, content, category, key, importance, pinned, valid_from))

    async def update_memory(
        self, user_id: str, memory_id: str, *, content: Optional[str] = None, category: Optional[str] = None,
        importance: Optional[float] = None, pinned: Optional[bool] = None,
    ) -> m.MemoryDetail:
        return await self._send(r.update_memory(user_id, memory_id, content, category, importance, pinned))

    async def delete_memory(self, user_id: str, memory_id: str, *, sources: bool = False) -> m.MemoryDeleted:
        return await self._send(r.delete_memory(user_id, memory_id, sources))

    async def user(self, user_id: str) -> m.UserSummary:
        return await self._send(r.user(user_id))

    async def turns_page(
        self, user_id: str, session_id: Optional[str] = None, cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> m.TurnPage:
        return await self._send(r.turns_page(user_id, session_id, cursor, limit))

    async def list_turns(
        self, user_id: str, session_id: Optional[str] = None, limit: Optional[int] = None
    ) -> AsyncIterator[m.Turn]:
        cursor: Optional[str] = None
        while True:
            page = await self.turns_page(user_id, session_id, cursor, limit)
            for turn in page.events:
                yield turn
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def sessions(self, user_id: str, limit: Optional[int] = None) -> m.SessionList:
        return await self._send(r.sessions(user_id, limit))

    async def summaries(self, user_id: str, limit: Optional[int] = None) -> m.SummaryList:
        return await self._send(r.summaries(user_id, limit))

    async def export_user(self, user_id: str) -> dict[str, Any]:
        return await self._send(r.export(user_id))

    async def import_user(self, user_id: str, document: Any) -> m.Imported:
        return await self._send(r.import_user(user_id, document))

    async def forget_user(self, user_id: str) -> m.Deleted:
        return await self._send(r.forget(user_id))

    async def users_page(self, cursor: Optional[str] = None, limit: Optional[int] = None) -> m.UserPage:
        return await self._send(r.users_page(cursor, limit))

    async def list_users(self, limit: Optional[int] = None) -> AsyncIterator[m.UserSummary]:
        cursor: Optional[str] = None
        while True:
            page = await self.users_page(cursor, limit)
            for user in page.users:
                yield user
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def deletions(self, user_id: str) -> m.DeletionList:
        return await self._send(r.deletions(user_id))

    async def restore_memory(self, user_id: str, memory_id: str) -> m.MemoryDetail:
        return await self._send(r.restore(user_id, memory_id))

    async def entities_page(
        self,
        user_id: str,
        query: Optional[str] = None,
        type: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> m.EntityPage:
        return await self._send(r.entities(user_id, query, type, limit, cursor))

    async def get_entity(self, user_id: str, entity_id: str) -> m.EntityDetail:
        return await self._send(r.entity(user_id, entity_id))

    async def graph(
        self, user_id: str, entity: str, depth: Optional[int] = None, as_of: Union[str, datetime, None] = None
    ) -> m.Subgraph:
        return await self._send(r.graph(user_id, entity, depth, as_of))

    async def graph_path(self, user_id: str, from_: str, to: str, max_depth: Optional[int] = None) -> m.Subgraph:
        return await self._send(r.graph_path(user_id, from_, to, max_depth))

    async def restore_entity(self, user_id: str, entity_id: str) -> m.EntityDetail:
        return await self._send(r.restore_entity(user_id, entity_id))

    async def jobs(self) -> list[m.JobOverview]:
        return (await self._send(r.jobs())).jobs

    async def run_job(self, job: str, **options: Unpack[RunOptions]) -> m.Queued:
        return await self._send(r.run_job(job, options))

    async def job_run(self, run_id: str) -> m.Run:
        return await self._send(r.job_run(run_id))

    async def job_runs_page(self, job: str, cursor: Optional[str] = None, limit: Optional[int] = None) -> m.RunPage:
        return await self._send(r.job_runs_page(job, cursor, limit))

    async def wait_for_run(self, run_id: str, timeout: float = 120, poll: float = 0.25) -> m.Run:
        deadline = time.monotonic() + timeout
        while not (run := await self.job_run(run_id)).finished:
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} is still {run.status} after {timeout} s")
            await asyncio.sleep(poll)
        return run

    async def pause_job(self, job: str) -> m.Paused:
        return await self._send(r.pause_job(job, True))

    async def resume_job(self, job: str) -> m.Paused:
        return await self._send(r.pause_job(job, False))

    async def create_webhook(self, url: str, events: list[str], description: Optional[str] = None) -> m.CreatedWebhook:
        return await self._send(r.create_webhook(url, events, description))

    async def webhooks(self) -> m.WebhookList:
        return await self._send(r.webhooks())

    async def delete_webhook(self, webhook_id: str) -> m.WebhookDeleted:
        return await self._send(r.delete_webhook(webhook_id))

    async def webhook_deliveries(self, webhook_id: str, limit: Optional[int] = None) -> m.DeliveryList:
        return await self._send(r.webhook_deliveries(webhook_id, limit))

    async def whoami(self) -> m.Caller:
        return await self._send(r.whoami())

    async def health(self) -> m.ServiceStatus:
        return await self._send(r.health())

    async def readiness(self) -> m.ServiceStatus:
        return await self._send(r.readiness())

    async def openapi(self) -> dict[str, Any]:
        return await self._send(r.openapi())

