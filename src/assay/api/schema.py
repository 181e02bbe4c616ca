"""The OpenAPI document with this server's own limits in it.

The request models are static, but how many items one request may hold is a setting (`queue_size`). A
schema that says nothing about it promises to accept any count, and a client (or schemathesis, issue 28)
that believes it meets a 413. So each array the body scan admits by length gets `maxItems` here, from the
settings the app was built with. A rule JSON Schema cannot state (lists that must pair up by position, a
cap on items summed over groups) is said in the route's description and its documented 413/422 instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from assay.settings import Settings

# component schema -> property whose array the body scan counts against `queue_size` (api/body.py SHAPES)
_CAPPED: tuple[tuple[str, str], ...] = (
    ("RewardsRequest", "items"),
    ("GroupsRequest", "groups"),
    ("GroupIn", "items"),
    ("TreesRequest", "trees"),
    ("OpenRLHFRequest", "query"),
)


def cap_arrays(schema: dict[str, Any], limit: int) -> None:
    """Put `maxItems: limit` on every capped array of an OpenAPI document, in place."""
    components = schema.get("components", {}).get("schemas", {})
    for model, field in _CAPPED:
        prop = components.get(model, {}).get("properties", {}).get(field)
        if prop is not None and prop.get("type") == "array":
            prop["maxItems"] = limit


def install(app: FastAPI, settings: Settings) -> None:
    """Serve the OpenAPI document with the settings' limits in it (built once, as FastAPI does)."""
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            cap_arrays(build(), settings.queue_size)
        assert app.openapi_schema is not None
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
