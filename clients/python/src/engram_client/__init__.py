"""The Python client of engram, long-term memory for AI agents.

    from engram_client import Engram

    with Engram() as engram:  # ENGRAM_API_KEY, ENGRAM_BASE_URL
        engram.add_event("alice", "user", "We moved our database to PostgreSQL", id="turn-1")
        print(engram.context("alice", "which database do we use?").text)
"""

from ._client import AsyncEngram, Engram
from ._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    ConflictError,
    EngramError,
    InternalServerError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    UnsupportedMediaTypeError,
)
from ._models import (
    AddedMemory,
    Caller,
    ContextItem,
    Contribution,
    ContextResponse,
    Created,
    Deleted,
    Deletion,
    DeletionList,
    Entity,
    EntityDetail,
    EntityPage,
    Explanation,
    GraphChange,
    HistoryEntry,
    Ingested,
    JobList,
    JobOverview,
    Memory,
    MemoryDeleted,
    MemoryDetail,
    MemoryPage,
    Paused,
    PeriodSummary,
    Queued,
    Relation,
    Run,
    RunPage,
    SearchResponse,
    SearchResult,
    ServiceStatus,
    Session,
    SessionList,
    Subgraph,
    SummaryList,
    Turn,
    TurnPage,
    UserPage,
    UserSummary,
)
from ._routes import Event, ListOptions, RunOptions, SearchOptions

__all__ = [
    "Engram", "AsyncEngram",
    "EngramError", "APIConnectionError", "APITimeoutError", "APIStatusError", "InvalidRequestError",
    "AuthenticationError", "PermissionDeniedError", "NotFoundError", "ConflictError", "PayloadTooLargeError",
    "UnsupportedMediaTypeError", "RateLimitError", "InternalServerError", "ServiceUnavailableError",
    "AddedMemory", "Caller", "ContextItem", "Contribution", "ContextResponse", "Created", "Deleted", "Deletion", "DeletionList", "Explanation",
    "Entity", "EntityDetail", "EntityPage", "GraphChange", "HistoryEntry", "Ingested", "JobList", "JobOverview", "Memory", "MemoryDeleted", "MemoryDetail", "MemoryPage", "Paused",
    "PeriodSummary", "Queued", "Relation", "Run", "RunPage", "SearchResponse", "SearchResult", "Session", "SessionList", "ServiceStatus",
    "Subgraph", "SummaryList", "Turn", "TurnPage", "UserPage", "UserSummary", "Event", "ListOptions", "RunOptions", "SearchOptions",
]
