"""Set operations written in an answer, evaluated to the set they name (issue 30).

- A complement in the reals: `\\mathbb{R} \\setminus (3,5)` is `(-\\infty,3] \\cup [5,\\infty)`, and
  `\\mathbb{R} \\setminus \\{3\\}` is `(-\\infty,3) \\cup (3,\\infty)`; the ends flip (an open end of the
  removed interval is a closed end of the rest).
- A difference of finite sets of numbers: `\\{1,2,3\\} \\setminus \\{2\\}` is `\\{1,3\\}`.
- A union of finite sets: `\\{1,2\\} \\cup \\{3,4\\}` is `\\{1,2,3,4\\}`.
Anything else is left as written (and then equals only what it equals as written). Rule names in
`details` come from the comparison of the evaluated sets ("union: same intervals", "set: same elements").
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Literal

from assay.verifiers.math.kinds import Atom, Seq, Union, Value
from assay.verifiers.math.numbers import Number

_FLIP = {"(": "]", "[": ")", ")": "[", "]": "("}


def _all_reals(value: Value) -> bool:
    return (
        isinstance(value, Seq)
        and value.kind == "interval"
        and [getattr(item, "text", "") for item in value.items] == ["-\\infty", "\\infty"]
    )


def _number(value: Value) -> Fraction | None:
    return value.number.value if isinstance(value, Atom) and value.number is not None else None


def difference(left: Value, right: Value) -> Value | None:
    """`left \\setminus right` as a value, or None when it is not one of the forms above."""
    if _all_reals(left) and isinstance(right, Seq) and right.kind in ("interval", "paren", "bracket"):
        if len(right.items) != 2:
            return None
        low, high = right.items
        opened, closed = right.left or "(", right.right or ")"
        return Union(
            (
                Seq("interval", (Atom("-\\infty"), low), "(", _FLIP[opened]),
                Seq("interval", (high, Atom("\\infty")), _FLIP[closed], ")"),
            ),
            origin="set complement",
        )
    if not (isinstance(right, Seq) and right.kind == "set"):
        return None
    removed = [_number(item) for item in right.items]
    if any(point is None for point in removed):
        return None
    if _all_reals(left):
        points = sorted({p for p in removed if p is not None})
        ends = [Atom("-\\infty"), *(_atom(p) for p in points), Atom("\\infty")]
        gaps = tuple(Seq("interval", (a, b), "(", ")") for a, b in itertools.pairwise(ends))
        return Union(gaps, origin="set complement")
    if isinstance(left, Seq) and left.kind == "set":
        kept = [item for item in left.items if _number(item) is None or _number(item) not in removed]
        if any(_number(item) is None for item in left.items):
            return None
        return Seq("set", tuple(kept), origin="set difference")
    return None


def _atom(value: Fraction) -> Atom:
    text = (
        str(value.numerator)
        if value.denominator == 1
        else f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
    )
    kind: Literal["integer", "fraction"] = "integer" if value.denominator == 1 else "fraction"
    return Atom(text, Number(value, kind))


def union_of_sets(values: tuple[Value, ...]) -> Seq | None:
    """`\\{1,2\\} \\cup \\{3,4\\}` as the one set `\\{1,2,3,4\\}`; None unless every part is a finite set."""
    if not all(isinstance(value, Seq) and value.kind == "set" for value in values):
        return None
    items = tuple(item for value in values if isinstance(value, Seq) for item in value.items)
    return Seq("set", items, origin="union of finite sets")
