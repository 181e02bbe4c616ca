"""JSON Lines reading, the one way: every reader of users' files (items, tasks, data, logs) walks lines
here, so a bad line is always named by its number and each caller only decides what a bad line means to it
(an `invalid` item, a reported problem, a refused file)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Line:
    """One non-blank line: its 1-based number and its value, or `problem` when it is not JSON (or not an
    object, where objects were asked for); `value` is None then."""

    number: int
    value: Any
    problem: str | None = None


def read_lines(stream: Iterable[str], objects: bool = False) -> Iterator[Line]:
    """Parsed lines of `stream`, blank lines skipped; `objects=True` reports a non-object as a problem."""
    for number, text in enumerate(stream, start=1):
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            yield Line(number, None, f"line {number}: not valid JSON ({exc.msg})")
            continue
        if objects and not isinstance(value, dict):
            yield Line(number, None, f"line {number}: not a JSON object")
        else:
            yield Line(number, value)
