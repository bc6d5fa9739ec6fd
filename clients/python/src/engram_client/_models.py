"""What engram answers, as pydantic models named after the schemas of its `/openapi.json`
(the test suite checks every model against the server's document). Fields the server
adds later are kept, not rejected, so an older client keeps working."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class ServiceStatus(_Model):
    """`ok` from `/healthz`, `ready` from `/readyz`."""

    status: str


class Caller(_Model):
    """The calling key: its tenant, its scopes, and the one user it reaches if it is bound."""

    key_id: str
    tenant: str
    scopes: list[str]
    user_id: Optional[str] = None


class Ingested(_Model):
    """What `add_events` stored: an id per event, in order."""

    ids: list[str]
    session_ids: list[str]
    accepted: int
    duplicates: int


class Contribution(_Model):
    """One term of the learned ranker: a feature (or two joined by `*`), its value and
    weight, and what it adds to the log-odds."""

    term: str
    value: float
    weight: float
    contribution: float


class Explanation(_Model):
    """The parts of a result's score: the blend's relevance × tier × time, every feature
    of the result and, from the learned ranker, each term's contribution."""

    similarity: float
    keyword: float
    relevance: float
    #: How surely the graph walk reached a relation, and in how many hops (relations only).
    graph: Optional[float] = None
    hop: Optional[int] = None
    decay: Optional[float] = None
    tier: float
    time: float
    #: How the parts combine.
    formula: str
    #: The time phrase window of the query, when it has one: [from, to).
    window: Optional[list[datetime]] = None
    #: The blend's score, and the ranker that made the result's (`learned` or `blend`).
    blend: float
    ranker: str
    #: Every feature of the result by name.
    features: dict[str, float]
    #: The learned ranker's bias and terms, the largest contribution first.
    bias: Optional[float] = None
    contributions: Optional[list[Contribution]] = None


class SearchResult(_Model):
    id: str
    kind: str
    category: Optional[str] = None
    key: Optional[str] = None
    content: str
    score: float
    similarity: float
    updated_at: datetime
    source_event_ids: list[str]
    created_at: Optional[datetime] = None
    role: Optional[str] = None
    session_id: Optional[str] = None
    #: A relation's predicate (``works_at``), its sentence, and the chain from the
    #: entity the walk started at.
    predicate: Optional[str] = None
    fact: Optional[str] = None
    path: Optional[str] = None
    explanation: Optional[Explanation] = None


class SearchResponse(_Model):
    results: list[SearchResult]
    hit: bool
    took_ms: float


class ContextItem(_Model):
    id: str
    kind: str
    section: str
    tokens: int


class ContextResponse(_Model):
    """A prompt-ready block (`text`) and what went into it."""

    text: str
    tokens: int
    max_tokens: int
    items: list[ContextItem]
    took_ms: float


class Memory(_Model):
    id: str
    user_id: str
    kind: str
    category: str
    key: Optional[str] = None
    #: A keyed fact's normalised value (`postgresql` for the key `database`).
    value: Optional[str] = None
    content: str
    importance: float
    confidence: float
    status: str
    pinned: bool
    source_event_ids: list[str]
    source_quote: Optional[str] = None
    derived_from: list[str]
    access_count: int
    last_accessed_at: Optional[datetime] = None
    valid_from: datetime
    valid_to: Optional[datetime] = None
    superseded_by: Optional[str] = None
    embedding_model: Optional[str] = None
    created_at: datetime
    updated_at: datetime
    #: What came with it from elsewhere: an import from Mem0 keeps `mem0_id` here.
    metadata: dict[str, Any]
    #: How much it still matters now, 0–1: the score `evict` ranks by and search weighs with.
    decay: float


class HistoryEntry(_Model):
    id: str
    action: str
    before: Optional[dict[str, Any]] = None
    after: Optional[dict[str, Any]] = None
    reason: Optional[str] = None
    job_run_id: Optional[str] = None
    actor: Optional[str] = None
    created_at: datetime


class MemoryPage(_Model):
    memories: list[Memory]
    next_cursor: Optional[str] = None


class MemoryDetail(_Model):
    memory: Memory
    history: list[HistoryEntry]


class AddedMemory(_Model):
    """What `add_memory` stored: the new memory (`outcome` `created`), or the near-duplicate
    already there (`duplicate`), and the ids of the same-key memories it replaced."""

    memory: Memory
    outcome: str
    superseded: list[str]


class Created(_Model):
    id: str


class Session(_Model):
    session_id: str
    started_at: datetime
    last_event_at: datetime
    event_count: int
    ended_at: Optional[datetime] = None
    summary: Optional[str] = None
    summary_event_ids: list[str]
    summarized_at: Optional[datetime] = None
    archived_at: Optional[datetime] = None


class SessionList(_Model):
    sessions: list[Session]


class PeriodSummary(_Model):
    id: str
    period: str
    period_start: date
    period_end: date
    summary: str
    session_ids: list[str]
    created_at: datetime
    updated_at: datetime


class SummaryList(_Model):
    summaries: list[PeriodSummary]


class Deleted(_Model):
    user_id: str
    deleted: dict[str, int]


class MemoryDeleted(_Model):
    """What `delete_memory` removed: a count per table (`memories`, `history_redacted` ...)."""

    memory_id: str
    deleted: dict[str, int]


class Deletion(_Model):
    at: datetime
    actor: str
    deleted: dict[str, int]


class DeletionList(_Model):
    deletions: list[Deletion]


class Imported(_Model):
    """What `import_user` wrote: per table, rows `added` and rows `already_present`."""

    user_id: str
    #: `engram.export` or `mem0`.
    format: str
    added: dict[str, int]
    already_present: dict[str, int]
    duplicates: int
    secrets_redacted: int
    vectors_made: int
    skipped: dict[str, int]


class Webhook(_Model):
    id: str
    url: str
    events: list[str]
    description: Optional[str] = None
    created_at: datetime
    #: Deliveries waiting in the outbox.
    pending: int
    oldest_pending_at: Optional[datetime] = None


class CreatedWebhook(_Model):
    id: str
    url: str
    events: list[str]
    description: Optional[str] = None
    created_at: datetime
    #: Signs every delivery (`Engram-Signature`); shown only in this answer.
    secret: str


class WebhookList(_Model):
    webhooks: list[Webhook]


class WebhookDeleted(_Model):
    id: str
    deleted: bool


class Delivery(_Model):
    delivery_id: int
    event: str
    attempt: int
    #: `delivered`, `failed`, `expired` or `refused`.
    outcome: str
    status_code: Optional[int] = None
    error: Optional[str] = None
    duration_ms: int
    attempted_at: datetime


class DeliveryList(_Model):
    deliveries: list[Delivery]


class UserSummary(_Model):
    user_id: str
    #: Conversation turns stored.
    events: int
    #: Active memories.
    memories: int
    sessions: int
    #: Active entities of the knowledge graph.
    entities: int
    last_activity: Optional[datetime] = None


class UserPage(_Model):
    users: list[UserSummary]
    next_cursor: Optional[str] = None


class Turn(_Model):
    """One raw conversation turn, as stored."""

    id: str
    session_id: str
    role: str
    content: str
    created_at: datetime


class TurnPage(_Model):
    events: list[Turn]
    next_cursor: Optional[str] = None


class Run(_Model):
    id: str
    job: str
    tenant_id: Optional[str] = None
    user_id: Optional[str] = None
    trigger: str
    status: str
    dry_run: bool
    counts: dict[str, Any]
    error: Optional[str] = None
    stop_reason: Optional[str] = None
    worker_id: Optional[str] = None
    tick_at: Optional[datetime] = None
    as_of: Optional[datetime] = None
    created_at: datetime
    started_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    heartbeat_at: Optional[datetime] = None

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "failed", "cancelled", "abandoned")


class RunPage(_Model):
    runs: list[Run]
    next_cursor: Optional[str] = None


class JobOverview(_Model):
    name: str
    schedule: str
    enabled: bool
    paused: bool
    next_run_at: Optional[datetime] = None
    last_run: Optional[Run] = None


class JobList(_Model):
    jobs: list[JobOverview]


class Queued(_Model):
    run_id: str


class Paused(_Model):
    job: str
    paused: bool


class Entity(_Model):
    """A person, project, technology, organization, place, product or concept of a user's world."""

    id: str
    name: str
    type: str
    aliases: list[str]
    first_seen: datetime
    last_seen: datetime
    is_user: bool
    status: str
    merged_into: Optional[str] = None


class Relation(_Model):
    """`subject —predicate→ object`, with when it held (`valid_*`) and when engram believed it."""

    id: str
    subject: str
    subject_id: str
    predicate: str
    object: str
    object_id: str
    fact: str
    valid_from: datetime
    valid_to: Optional[datetime] = None
    created_at: datetime
    expired_at: Optional[datetime] = None
    source_event_ids: list[str]
    status: str
    confidence: float


class GraphChange(_Model):
    action: str
    before: Optional[dict[str, Any]] = None
    after: Optional[dict[str, Any]] = None
    reason: Optional[str] = None
    actor: Optional[str] = None
    job_run_id: Optional[str] = None
    created_at: datetime


class EntityPage(_Model):
    entities: list[Entity]
    next_cursor: Optional[str] = None


class EntityDetail(_Model):
    entity: Entity
    relations: list[Relation]
    history: list[GraphChange]


class Subgraph(_Model):
    entities: list[Entity]
    relations: list[Relation]
