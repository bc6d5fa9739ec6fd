"""Every route as a `Call`: method, path, query, body, the model of the answer, and
whether repeating the call is safe. The sync and async clients send the same calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Optional, TypedDict, TypeVar, Union
from urllib.parse import quote

from pydantic import BaseModel

from . import _models as m

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    model: Optional[type[BaseModel]]
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    #: Reads, and writes that change nothing when repeated (events with client ids).
    retryable: bool = True


def _segment(value: str) -> str:
    return quote(value, safe="")


def _time(value: Union[str, datetime, None]) -> Optional[str]:
    return value.isoformat() if isinstance(value, datetime) else value


def _clean(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


class Event(TypedDict, total=False):
    """One conversation event as `POST /v1/events` takes it."""

    user_id: str
    role: str
    content: str
    session_id: str
    #: Your id for the event: sending it again stores nothing new.
    id: str
    #: RFC 3339, or a datetime.
    created_at: Union[str, datetime]
    metadata: dict[str, Any]


class SearchOptions(TypedDict, total=False):
    kinds: list[str]
    limit: int
    min_score: float
    categories: list[str]
    since: Union[str, datetime]
    until: Union[str, datetime]
    as_of: Union[str, datetime]
    embedding: list[float]
    explain: bool


class ListOptions(TypedDict, total=False):
    category: str
    status: str
    kind: str
    #: Only memories of this key.
    key: str
    limit: int


class RunOptions(TypedDict, total=False):
    user_id: str
    tenant: str
    all_tenants: bool
    dry_run: bool


def add_events(events: list[Event]) -> Call[m.Ingested]:
    body = [_clean({**event, "created_at": _time(event.get("created_at"))}) for event in events]
    return Call("POST", "/v1/events", m.Ingested, json={"events": body}, retryable=all("id" in e for e in body))


def search(user_id: str, query: str, options: SearchOptions) -> Call[m.SearchResponse]:
    body = _clean({**options, "user_id": user_id, "query": query})
    for name in ("since", "until", "as_of"):
        if name in body:
            body[name] = _time(body[name])
    return Call("POST", "/v1/search", m.SearchResponse, json=body)


def context(
    user_id: str, query: Optional[str], max_tokens: Optional[int], session_id: Optional[str]
) -> Call[m.ContextResponse]:
    params = _clean({"query": query, "max_tokens": max_tokens, "session_id": session_id})
    return Call("GET", f"/v1/users/{_segment(user_id)}/context", m.ContextResponse, params=params)


def memories_page(user_id: str, cursor: Optional[str], options: ListOptions) -> Call[m.MemoryPage]:
    params = _clean({**options, "cursor": cursor})
    return Call("GET", f"/v1/users/{_segment(user_id)}/memories", m.MemoryPage, params=params)


def memory(user_id: str, memory_id: str) -> Call[m.MemoryDetail]:
    return Call("GET", f"/v1/users/{_segment(user_id)}/memories/{_segment(memory_id)}", m.MemoryDetail)


def add_memory(
    user_id: str,
    content: str,
    category: Optional[str],
    key: Optional[str],
    importance: Optional[float],
    pinned: Optional[bool],
    valid_from: Union[str, datetime, None],
) -> Call[m.AddedMemory]:
    body = _clean({"content": content, "category": category, "key": key, "importance": importance,
                   "pinned": pinned, "valid_from": _time(valid_from)})
    # A retry after a lost answer would report `duplicate`, not what the first try did.
    return Call("POST", f"/v1/users/{_segment(user_id)}/memories", m.AddedMemory, json=body, retryable=False)


def update_memory(
    user_id: str,
    memory_id: str,
    content: Optional[str],
    category: Optional[str],
    importance: Optional[float],
    pinned: Optional[bool],
) -> Call[m.MemoryDetail]:
    # The same change twice ends the same way as once.
    body = _clean({"content": content, "category": category, "importance": importance, "pinned": pinned})
    return Call("PATCH", f"/v1/users/{_segment(user_id)}/memories/{_segment(memory_id)}", m.MemoryDetail, json=body)


def delete_memory(user_id: str, memory_id: str, sources: bool) -> Call[m.MemoryDeleted]:
    # A retry after the deletion went through would answer 404.
    path = f"/v1/users/{_segment(user_id)}/memories/{_segment(memory_id)}"
    params = {"sources": "true"} if sources else {}
    return Call("DELETE", path, m.MemoryDeleted, params=params, retryable=False)


def feedback(user_id: str, memory_id: str, kind: str, note: Optional[str]) -> Call[m.Created]:
    body = _clean({"user_id": user_id, "memory_id": memory_id, "kind": kind, "note": note})
    return Call("POST", "/v1/feedback", m.Created, json=body, retryable=False)


def user(user_id: str) -> Call[m.UserSummary]:
    return Call("GET", f"/v1/users/{_segment(user_id)}", m.UserSummary)


def turns_page(
    user_id: str, session_id: Optional[str], cursor: Optional[str], limit: Optional[int]
) -> Call[m.TurnPage]:
    params = _clean({"session_id": session_id, "cursor": cursor, "limit": limit})
    return Call("GET", f"/v1/users/{_segment(user_id)}/events", m.TurnPage, params=params)


def sessions(user_id: str, limit: Optional[int]) -> Call[m.SessionList]:
    return Call("GET", f"/v1/users/{_segment(user_id)}/sessions", m.SessionList, params=_clean({"limit": limit}))


def summaries(user_id: str, limit: Optional[int]) -> Call[m.SummaryList]:
    return Call("GET", f"/v1/users/{_segment(user_id)}/summaries", m.SummaryList, params=_clean({"limit": limit}))


def export(user_id: str) -> Call[dict[str, Any]]:
    return Call("GET", f"/v1/users/{_segment(user_id)}/export", None)


def import_user(user_id: str, document: Any) -> Call[m.Imported]:
    # Importing the same document twice adds nothing.
    return Call("POST", f"/v1/users/{_segment(user_id)}/import", m.Imported, json=document)


def forget(user_id: str) -> Call[m.Deleted]:
    # Forgetting twice ends the same way as forgetting once.
    return Call("DELETE", f"/admin/v1/users/{_segment(user_id)}", m.Deleted)


def users_page(cursor: Optional[str], limit: Optional[int]) -> Call[m.UserPage]:
    return Call("GET", "/admin/v1/users", m.UserPage, params=_clean({"cursor": cursor, "limit": limit}))


def deletions(user_id: str) -> Call[m.DeletionList]:
    return Call("GET", f"/admin/v1/users/{_segment(user_id)}/deletions", m.DeletionList)


def restore(user_id: str, memory_id: str) -> Call[m.MemoryDetail]:
    path = f"/admin/v1/users/{_segment(user_id)}/memories/{_segment(memory_id)}/restore"
    return Call("POST", path, m.MemoryDetail, retryable=False)


def entities(
    user_id: str, query: Optional[str], type: Optional[str], limit: Optional[int], cursor: Optional[str]
) -> Call[m.EntityPage]:
    params = _clean({"query": query, "type": type, "limit": limit, "cursor": cursor})
    return Call("GET", f"/v1/users/{_segment(user_id)}/entities", m.EntityPage, params=params)


def entity(user_id: str, entity_id: str) -> Call[m.EntityDetail]:
    return Call("GET", f"/v1/users/{_segment(user_id)}/entities/{_segment(entity_id)}", m.EntityDetail)


def graph(
    user_id: str, entity: str, depth: Optional[int], as_of: Union[str, datetime, None]
) -> Call[m.Subgraph]:
    params = _clean({"entity": entity, "depth": depth, "as_of": _time(as_of)})
    return Call("GET", f"/v1/users/{_segment(user_id)}/graph", m.Subgraph, params=params)


def graph_path(user_id: str, from_: str, to: str, max_depth: Optional[int]) -> Call[m.Subgraph]:
    params = _clean({"from": from_, "to": to, "max_depth": max_depth})
    return Call("GET", f"/v1/users/{_segment(user_id)}/graph/path", m.Subgraph, params=params)


def restore_entity(user_id: str, entity_id: str) -> Call[m.EntityDetail]:
    path = f"/admin/v1/users/{_segment(user_id)}/entities/{_segment(entity_id)}/restore"
    return Call("POST", path, m.EntityDetail, retryable=False)


def jobs() -> Call[m.JobList]:
    return Call("GET", "/admin/v1/jobs", m.JobList)


def run_job(job: str, options: RunOptions) -> Call[m.Queued]:
    return Call("POST", f"/admin/v1/jobs/{_segment(job)}/runs", m.Queued, json=dict(options), retryable=False)


def job_run(run_id: str) -> Call[m.Run]:
    return Call("GET", f"/admin/v1/jobs/runs/{_segment(run_id)}", m.Run)


def job_runs_page(job: str, cursor: Optional[str], limit: Optional[int]) -> Call[m.RunPage]:
    params = _clean({"cursor": cursor, "limit": limit})
    return Call("GET", f"/admin/v1/jobs/{_segment(job)}/runs", m.RunPage, params=params)


def pause_job(job: str, paused: bool) -> Call[m.Paused]:
    action = "pause" if paused else "resume"
    return Call("POST", f"/admin/v1/jobs/{_segment(job)}/{action}", m.Paused)


def create_webhook(url: str, events: list[str], description: Optional[str]) -> Call[m.CreatedWebhook]:
    body = _clean({"url": url, "events": events, "description": description})
    return Call("POST", "/admin/v1/webhooks", m.CreatedWebhook, json=body, retryable=False)


def webhooks() -> Call[m.WebhookList]:
    return Call("GET", "/admin/v1/webhooks", m.WebhookList)


def delete_webhook(webhook_id: str) -> Call[m.WebhookDeleted]:
    return Call("DELETE", f"/admin/v1/webhooks/{_segment(webhook_id)}", m.WebhookDeleted)


def webhook_deliveries(webhook_id: str, limit: Optional[int]) -> Call[m.DeliveryList]:
    return Call("GET", f"/admin/v1/webhooks/{_segment(webhook_id)}/deliveries", m.DeliveryList,
                params=_clean({"limit": limit}))


def whoami() -> Call[m.Caller]:
    return Call("GET", "/v1/whoami", m.Caller)


def health() -> Call[m.ServiceStatus]:
    return Call("GET", "/healthz", m.ServiceStatus)


def readiness() -> Call[m.ServiceStatus]:
    # A readiness probe wants the answer of now, not one after retries.
    return Call("GET", "/readyz", m.ServiceStatus, retryable=False)


def openapi() -> Call[dict[str, Any]]:
    return Call("GET", "/openapi.json", None)
