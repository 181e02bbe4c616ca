"""How the code task compares what a program returned with what a test expects, outside the sandbox."""

from __future__ import annotations

import math
from typing import Any


def _tokens(text: str) -> list[str]:
    return text.split()


def _same_float(a: str, b: str, tol: float) -> bool:
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if math.isnan(x) or math.isnan(y):
        return False
    return math.isclose(x, y, rel_tol=tol, abs_tol=tol)


def check_stdout(actual: bytes, expected: str, checker: str, tol: float) -> bool:
    """Compare program output with the expected text (invalid UTF-8 never matches)."""
    try:
        text = actual.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if checker == "exact":
        return text == expected
    got, want = _tokens(text), _tokens(expected)
    if checker == "float":
        return len(got) == len(want) and all(_same_float(a, b, tol) for a, b in zip(got, want, strict=True))
    return got == want


def same_json(a: Any, b: Any) -> bool:
    """Structural equality of JSON values; bools are not numbers, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-9))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b
