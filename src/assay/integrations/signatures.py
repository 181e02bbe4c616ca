"""Python signatures of session tools, read from their JSON schemas (`GET /v1/tasks`): TRL and verifiers
offer a tool to the policy as a Python function, whose parameters and hints are the tool's arguments."""

from __future__ import annotations

from typing import Any

# The Python type of each JSON-schema type.
JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


def parameters(function: dict[str, Any]) -> tuple[dict[str, Any], set[str], list[str]]:
    """A tool function's `properties`, its required names, and its argument names required first (else
    in schema order): the order of a Python signature, where a defaulted parameter follows the others."""
    schema = function.get("parameters") or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    return properties, required, sorted(properties, key=lambda arg: arg not in required)
