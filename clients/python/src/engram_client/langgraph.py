"""engram as LangGraph's long-term store: `EngramStore` (and `AsyncEngramStore`)
implement `langgraph.store.base.BaseStore` over engram's per-memory routes, so a graph
compiled with `store=EngramStore()` — and LangMem's memory tools — read and write the
memories engram consolidates, ranks and lets people correct.

    from engram_client.langgraph import EngramStore

    store = EngramStore(prefix=("memories",))      # ENGRAM_API_KEY, ENGRAM_BASE_URL
    store.put(("memories", "alice"), "editor", {"content": "Alice writes code in Helix"})
    store.search(("memories", "alice"), query="which editor?")

How LangGraph's names map to engram's:

- A namespace is `(*prefix, user_id)` or `(*prefix, user_id, category)`: the label after
  the prefix is the engram user, and an optional last label one of engram's categories
  (`preference`, `project`, …). Any other depth is refused.
- A key is the memory's `key` (1–128 of A–Z, a–z, 0–9, `_ - . :`; LangMem's UUIDs fit).
  `put` with a key that holds a memory stores the new value as a knowledge update of it;
  `put(…, None)` and `delete` delete it for good. A memory engram extracted itself has no
  key of the client's, and answers to its `id` instead.
- A value `{"content": "…"}` is stored as that sentence; any other value as its JSON
  text, and read back as the same dict. Secrets in it are redacted as in any turn.
- `search` with a query is engram's search over facts and insights (scores 0–1); without
  one, the newest memories. `filter` matches value fields exactly, after the search.
- `list_namespaces` lists the tenant's users and needs a key with the admin scope.
- engram embeds every memory itself: `index` is not needed, and TTLs are not supported
  (engram's decay and eviction decide what is forgotten).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Generator, Iterable, Mapping
from typing import Any, Optional, Union

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as err:  # pragma: no cover - the message is the point
    raise ImportError("engram_client.langgraph needs LangGraph: pip install 'engram-client[langgraph]'") from err

from . import _models as m
from . import _routes as r
from ._client import AsyncEngram, Engram
from ._errors import EngramError, NotFoundError

__all__ = ["EngramStore", "AsyncEngramStore"]

#: engram's largest page, and its largest search by default (`search.max_limit`).
_MOST_LISTED = 200
_MOST_FOUND = 50

#: An operation as the calls it makes: a generator that yields each call and is sent
#: its answer (or has its error thrown in), returning the operation's result. The sync
#: and async stores drive the same plans.
Plan = Generator[r.Call[Any], Any, Any]

Found = Union[m.Memory, m.SearchResult]


def _content(value: Mapping[str, Any]) -> str:
    if set(value) == {"content"} and isinstance(value["content"], str):
        return value["content"]
    return json.dumps(dict(value), ensure_ascii=False, sort_keys=True)


def _value(content: str) -> dict[str, Any]:
    if content.startswith("{"):
        try:
            parsed = json.loads(content)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"content": content}


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _matches(value: dict[str, Any], wanted: Optional[dict[str, Any]]) -> bool:
    return all(value.get(field) == expected for field, expected in (wanted or {}).items())


class _Plans:
    """What both stores do, as plans of engram calls."""

    def __init__(self, prefix: Iterable[str] = ()) -> None:
        self.prefix = tuple(prefix)

    # Namespaces
    def _split(self, namespace: tuple[str, ...]) -> tuple[str, Optional[str]]:
        """The user and the category a namespace names."""
        depth = len(self.prefix)
        if tuple(namespace[:depth]) != self.prefix or len(namespace) not in (depth + 1, depth + 2):
            shape = ", ".join([*map(repr, self.prefix), "user_id", "[category]"])
            raise InvalidNamespaceError(f"an engram namespace is ({shape}); got {namespace!r}")
        return namespace[depth], namespace[depth + 1] if len(namespace) == depth + 2 else None

    def _item(self, namespace: tuple[str, ...], found: Found, score: Optional[float] = None) -> SearchItem:
        created = getattr(found, "created_at", None) or found.updated_at
        return SearchItem(namespace=namespace, key=found.key or found.id, value=_value(found.content),
                          created_at=created, updated_at=found.updated_at, score=score)

    def _plan(self, op: Op) -> Plan:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise TypeError(f"unknown store operation {op!r}")

    def _find(self, user: str, key: str) -> Generator[r.Call[Any], Any, Optional[m.Memory]]:
        """The user's active memory of `key`, or with the id `key`."""
        page = yield r.memories_page(user, None, {"key": key, "limit": 1})
        if page.memories:
            return page.memories[0]
        if not _is_uuid(key):
            return None
        try:
            detail = yield r.memory(user, key)
        except NotFoundError:
            return None
        return detail.memory if detail.memory.status == "active" else None

    def _get(self, op: GetOp) -> Plan:
        user, category = self._split(op.namespace)
        memory = yield from self._find(user, op.key)
        if memory is None or (category is not None and memory.category != category):
            return None
        item = self._item(op.namespace, memory)
        return Item(value=item.value, key=op.key, namespace=op.namespace, created_at=item.created_at,
                    updated_at=item.updated_at)

    def _put(self, op: PutOp) -> Plan:
        user, category = self._split(op.namespace)
        existing = yield from self._find(user, op.key)
        if op.value is None:
            if existing is not None:
                yield r.delete_memory(user, existing.id, False)
            return None
        content = _content(op.value)
        if existing is not None and existing.key != op.key:
            # A memory engram extracted, addressed by its id: corrected in place.
            yield r.update_memory(user, existing.id, content, category, None, None)
        else:
            # The same key again is a knowledge update: the new memory replaces the old.
            yield r.add_memory(user, content, category, op.key, None, None, None)
        return None

    def _search(self, op: SearchOp) -> Plan:
        user, category = self._split(op.namespace_prefix)
        wanted = op.offset + op.limit
        found: list[tuple[Found, Optional[float]]]
        if op.query:
            fetch = _MOST_FOUND if op.filter else min(_MOST_FOUND, wanted)
            options: r.SearchOptions = {"limit": fetch, "kinds": ["fact", "insight"]}
            if category is not None:
                options["categories"] = [category]
            results = yield r.search(user, op.query, options)
            found = [(result, result.score) for result in results.results]
        else:
            listing: r.ListOptions = {"limit": _MOST_LISTED if op.filter else min(_MOST_LISTED, wanted)}
            if category is not None:
                listing["category"] = category
            page = yield r.memories_page(user, None, listing)
            found = [(memory, None) for memory in page.memories]
        items = [self._item(op.namespace_prefix, hit, score) for hit, score in found]
        items = [item for item in items if _matches(item.value, op.filter)]
        return items[op.offset:wanted]

    def _namespaces(self, op: ListNamespacesOp) -> Plan:
        names: list[tuple[str, ...]] = []
        cursor: Optional[str] = None
        while True:
            page = yield r.users_page(cursor, _MOST_LISTED)
            names += [(*self.prefix, user.user_id) for user in page.users]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor

        def fits(name: tuple[str, ...], path: tuple[str, ...]) -> bool:
            return len(path) <= len(name) and all(p in ("*", n) for p, n in zip(path, name))

        for condition in op.match_conditions or ():
            path = tuple(condition.path)
            if condition.match_type == "prefix":
                names = [name for name in names if fits(name, path)]
            else:
                names = [name for name in names if fits(name[::-1], path[::-1])]
        if op.max_depth is not None:
            names = list(dict.fromkeys(name[:op.max_depth] for name in names))
        return names[op.offset:op.offset + op.limit]


def _drive(plan: Plan, send: Any) -> Any:
    answer: Any = None
    error: Optional[EngramError] = None
    while True:
        try:
            call = plan.throw(error) if error is not None else plan.send(answer)
        except StopIteration as done:
            return done.value
        try:
            answer, error = send(call), None
        except EngramError as err:
            answer, error = None, err


async def _adrive(plan: Plan, send: Any) -> Any:
    answer: Any = None
    error: Optional[EngramError] = None
    while True:
        try:
            call = plan.throw(error) if error is not None else plan.send(answer)
        except StopIteration as done:
            return done.value
        try:
            answer, error = await send(call), None
        except EngramError as err:
            answer, error = None, err


class EngramStore(_Plans, BaseStore):
    """LangGraph's `BaseStore` over engram, through the synchronous client.

    `engram`: a client (default `Engram()`, which reads ENGRAM_API_KEY and
    ENGRAM_BASE_URL); `prefix`: the labels every namespace starts with before the user id.
    The async methods run the same calls in a worker thread.
    """

    def __init__(self, engram: Optional[Engram] = None, *, prefix: Iterable[str] = ()) -> None:
        super().__init__(prefix)
        self.engram = engram or Engram()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [_drive(self._plan(op), self.engram._send) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))


class AsyncEngramStore(_Plans, BaseStore):
    """LangGraph's `BaseStore` over engram, through the asynchronous client: use its
    `a*` methods (`aget`, `aput`, `asearch`, …) from async code."""

    def __init__(self, engram: Optional[AsyncEngram] = None, *, prefix: Iterable[str] = ()) -> None:
        super().__init__(prefix)
        self.engram = engram or AsyncEngram()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return [await _adrive(self._plan(op), self.engram._send) for op in ops]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        raise NotImplementedError("AsyncEngramStore is asynchronous: call aget, aput, asearch, adelete and "
                                  "alist_namespaces, or use EngramStore")
