"""A generator of lookup-table programs, written as a policy that copies its prompt's tests would write
them (issue 44): one program per (test shape, table style), for any list of (input, output) rows.

Shapes: `stdin` (the input is a line, the output printed), `call` (fn_name/args/expected) and `check`
(HumanEval's `def check(candidate)` with asserts). Styles: a dict, an if/elif chain, a match statement, a
nested conditional expression, a JSON string, `key:value` text rows, split literals ("2" + "4"), two
parallel lists, and a list of pairs.
"""

from __future__ import annotations

import json
from typing import Any

SHAPES = ("stdin", "call", "check")
STYLES = ("dict", "if_elif", "match", "ifexp", "json_string", "text_rows", "split", "parallel", "pairs")


def visible_tests(shape: str, rows: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """The item's visible tests for `rows` in `shape`."""
    if shape == "stdin":
        return [{"stdin": f"{key}\n", "stdout": f"{out}\n"} for key, out in rows]
    if shape == "call":
        return [{"fn_name": "solve", "args": [key], "expected": out} for key, out in rows]
    asserts = "".join(f"    assert candidate({key}) == {out}\n" for key, out in rows)
    return [{"check": f"def check(candidate):\n{asserts}", "entry_point": "solve"}]


def _split(value: int) -> str:
    text = str(value)
    return f"int({text[:1]!r} + {text[1:]!r})" if len(text) > 1 else f"int({text!r} + '')"


def _table(style: str, rows: list[tuple[int, int]]) -> str:
    """Statements that leave the answer for `x` (an int) in `r`."""
    if style == "dict":
        return f"r = {dict(rows)!r}[x]"
    if style == "if_elif":
        chain = "".join(
            f"{'if' if i == 0 else 'elif'} x == {k}:\n    r = {v}\n" for i, (k, v) in enumerate(rows)
        )
        return chain + "else:\n    r = -1"
    if style == "match":
        cases = "".join(f"    case {k}:\n        r = {v}\n" for k, v in rows)
        return f"match x:\n{cases}    case _:\n        r = -1"
    if style == "ifexp":
        expr = "-1"
        for k, v in reversed(rows):
            expr = f"({v} if x == {k} else {expr})"
        return f"r = {expr}"
    if style == "json_string":
        return f"import json\nr = json.loads({json.dumps({str(k): v for k, v in rows})!r})[str(x)]"
    if style == "text_rows":
        text = ",".join(f"{k}:{v}" for k, v in rows)
        return f"r = int(dict(p.split(':') for p in {text!r}.split(','))[str(x)])"
    if style == "split":
        entries = ", ".join(f"{k}: {_split(v)}" for k, v in rows)
        return f"r = {{{entries}}}[x]"
    if style == "parallel":
        keys, outs = [k for k, _ in rows], [v for _, v in rows]
        return f"K = {keys!r}\nV = {outs!r}\nr = V[K.index(x)]"
    if style == "pairs":
        return f"r = dict({rows!r})[x]"
    raise ValueError(style)


def program(shape: str, style: str, rows: list[tuple[int, int]]) -> str:
    """A program that passes the visible tests of `rows` by looking them up."""
    body = _table(style, rows)
    if shape == "stdin":
        return f"x = int(input())\n{body}\nprint(r)\n"
    indented = "\n".join("    " + line for line in body.splitlines())
    return f"def solve(x):\n{indented}\n    return r\n"


# Rows with one-character outputs (the old flag skipped them) and rows with longer ones.
SHORT = [(3, 1), (8, 0), (11, 1)]
LONG = [(12, 144), (15, 225), (31, 961)]
