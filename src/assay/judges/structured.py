"""Constrained verdicts: ask the backend to answer in a JSON shape it must follow.

Why: small judges rarely write the `[[A]]` / `[RESULT] N` markers (SmolLM2-135M never did; it said "A is
better" in prose, and looped to the token limit on pointwise prompts). vLLM (structured outputs) and the
OpenAI API both accept `response_format: {"type": "json_schema", ...}` and then decode only text that fits
the schema, so the verdict is always there and always readable. Backends without it reject the request;
set `judge.structured_output` to false for them, and the marker and prose parsers read the text instead.
"""

from __future__ import annotations

import json
import re
from typing import Any

PAIRWISE_CHOICES = ("A", "B", "tie")


def _json_schema(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def pairwise_format() -> dict[str, Any]:
    """The `response_format` of a pairwise verdict: `{"verdict": "A" | "B" | "tie"}`."""
    return _json_schema("pairwise_verdict", {"verdict": {"type": "string", "enum": list(PAIRWISE_CHOICES)}})


def score_format(low: int, high: int) -> dict[str, Any]:
    """The `response_format` of a pointwise grade: `{"score": <an integer of the scale>}`."""
    return _json_schema("pointwise_score", {"score": {"type": "integer", "enum": list(range(low, high + 1))}})


def equivalence_format() -> dict[str, Any]:
    """The `response_format` of the math second opinion: `{"equivalent": "yes" | "no"}` (issue 44: in
    prose a small judge called 48 and 42 "mathematically equivalent"; a constrained answer is a verdict)."""
    return _json_schema("equivalence_verdict", {"equivalent": {"type": "string", "enum": ["yes", "no"]}})


def json_field(text: str, field: str) -> tuple[Any, int, int] | None:
    """The value of `field` in a JSON object answer, with the span of its text; None if not such an answer."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or field not in data:
        return None
    match = re.search(rf'"{re.escape(field)}"\s*:\s*"?([^",}}]*)', text)
    if match is None:
        return None
    return data[field], match.start(1), match.end(1)
