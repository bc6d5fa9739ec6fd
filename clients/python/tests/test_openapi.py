"""The client cannot drift from the server: every model matches the schema of the same
name in the running engram's `/openapi.json`, and every route it calls is documented."""

from __future__ import annotations

import types
import typing
from datetime import date, datetime
from urllib.parse import unquote

import pytest
from pydantic import BaseModel

from engram_client import Engram, _models
from engram_client import _routes as r

MODELS = [
    cls for cls in vars(_models).values()
    if isinstance(cls, type) and issubclass(cls, BaseModel) and cls.__module__ == _models.__name__
    and not cls.__name__.startswith("_")
]

JSON_TYPE = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object",
             datetime: "string", date: "string"}


@pytest.fixture(scope="module")
def document(server) -> dict:
    with Engram(api_key=server.keys["reader"], base_url=server.url) as engram:
        return engram.openapi()


def resolve(schema: dict, components: dict) -> dict:
    """A schema with `$ref` and `allOf` folded into one object's properties and required."""
    if "$ref" in schema:
        return resolve(components[schema["$ref"].rsplit("/", 1)[1]], components)
    if "allOf" in schema:
        merged: dict = {"properties": {}, "required": []}
        for part in schema["allOf"]:
            part = resolve(part, components)
            merged["properties"].update(part.get("properties", {}))
            merged["required"] += part.get("required", [])
        return merged
    return schema


def json_type(annotation: object) -> str | None:
    """The JSON type of a field's annotation, optional or not; None for models."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    return JSON_TYPE.get(typing.get_origin(annotation) or annotation)  # type: ignore[arg-type]


def schema_types(prop: dict, components: dict) -> set[str]:
    if "$ref" in prop:
        return schema_types(components[prop["$ref"].rsplit("/", 1)[1]], components)
    kinds = prop.get("type", [])
    kinds = {kinds} if isinstance(kinds, str) else set(kinds)
    for option in prop.get("oneOf", []) + prop.get("anyOf", []) + prop.get("allOf", []):
        kinds |= schema_types(option, components)
    if "properties" in prop:
        kinds.add("object")
    return kinds - {"null"}


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_each_model_matches_its_schema(document: dict, model: type[BaseModel]) -> None:
    components = document["components"]["schemas"]
    assert model.__name__ in components, f"the server documents no schema {model.__name__}"
    schema = resolve(components[model.__name__], components)
    fields = model.model_fields
    assert set(fields) == set(schema["properties"]), f"{model.__name__}: fields differ from the server's"
    required = {name for name, field in fields.items() if field.is_required()}
    assert required == set(schema.get("required", [])), f"{model.__name__}: required fields differ"
    for name, field in fields.items():
        expected = json_type(field.annotation)
        documented = schema_types(schema["properties"][name], components)
        if expected is not None and documented:
            allowed = documented | ({"number"} if "integer" in documented else set())
            assert expected in allowed, f"{model.__name__}.{name}: {expected}, the server documents {documented}"


def test_every_route_the_client_calls_is_documented(document: dict) -> None:
    u, mid, job, run = "{user_id}", "{memory_id}", "{job}", "{run_id}"
    calls = [
        r.add_events([]), r.search(u, "q", {}), r.context(u, None, None, None), r.memories_page(u, None, {}),
        r.memory(u, mid), r.feedback(u, mid, "helpful", None), r.sessions(u, None), r.summaries(u, None),
        r.export(u), r.forget(u), r.deletions(u), r.restore(u, mid), r.jobs(), r.run_job(job, {}),
        r.job_run(run), r.pause_job(job, True), r.pause_job(job, False), r.health(), r.readiness(), r.openapi(),
        r.entities(u, None, None, None, None), r.entity(u, "{entity_id}"), r.graph(u, "e", None, None),
        r.graph_path(u, "a", "b", None), r.restore_entity(u, "{entity_id}"),
        r.add_memory(u, "c", None, None, None, None, None), r.update_memory(u, mid, "c", None, None, None),
        r.delete_memory(u, mid, False), r.users_page(None, None), r.user(u), r.turns_page(u, None, None, None),
        r.job_runs_page(job, None, None), r.whoami(), r.import_user(u, {}), r.create_webhook("x", [], None),
        r.webhooks(), r.delete_webhook("{webhook_id}"), r.webhook_deliveries("{webhook_id}", None),
    ]
    paths = document["paths"]
    for call in calls:
        path = unquote(call.path)
        assert path in paths and call.method.lower() in paths[path], f"{call.method} {path} is not documented"
    called = {(unquote(c.path), c.method.lower()) for c in calls}
    # /metrics and /docs are for Prometheus and people, not for an agent's client.
    served = {(path, method) for path, item in paths.items() for method in item if path not in ("/metrics", "/docs")}
    assert served <= called, f"routes without a client method: {sorted(served - called)}"
