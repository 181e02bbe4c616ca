"""Are two query results the same answer? Rows as a multiset, columns in any order, order when it matters.

The rules, deliberately:
- Rows are a multiset: duplicates count (a missing DISTINCT is wrong), order is ignored unless the gold's
  top-level query has ORDER BY. Then the prediction's rows must come in the same order, except that rows
  tied on the sort key may come in any order among themselves, and where the gold's LIMIT cuts inside a
  tie, any of the tied rows may be the ones kept (`valid_limit_cut`).
- Columns may come in any order and under any names: the prediction is right if some permutation of its
  columns gives the gold's rows. The column count must match (an extra column is a different answer).
- Numbers compare by value across int, float and decimal: 1 = 1.0 = Decimal("1.00"). Floats (and
  decimals) are equal within `rel_tol` / `abs_tol` (sums and averages computed in another order differ in
  the last digits); integers larger than 2**53 stay exact.
- NULL equals NULL (as in IS NOT DISTINCT FROM) and nothing else: NULL is not 0, not "" and not "NULL".
  NaN equals NaN. Booleans equal booleans only (a 0/1 column is not a boolean column). Text is compared
  exactly: no case folding, no trimming. Dates and times compare by their ISO text.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from functools import cached_property
from typing import Any

Row = tuple[Any, ...]
Blocks = list[tuple[int, int]]

_SIG_DIGITS = 12  # the exact fast path compares floats rounded to this many significant digits
_MAX_LEFTOVER = 2_000  # greedy tolerant matching is quadratic in the rows the fast path left over
_MAX_PERMUTATIONS = 64


@dataclass(frozen=True)
class Tolerance:
    rel: float = 1e-6
    abs: float = 1e-9


@dataclass(frozen=True)
class Comparison:
    equal: bool
    reason: str


def canon(value: Any) -> Any:
    """A hashable key; equal keys mean equal values under the rules above (floats to 12 digits)."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("num", value)  # Python hashes 1 and 1.0 alike, and they compare equal
    if isinstance(value, float | Decimal):
        number = float(value)
        if math.isnan(number):
            return ("nan",)
        return ("num", float(f"{number:.{_SIG_DIGITS}g}") if math.isfinite(number) else number)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, bytes | bytearray | memoryview):
        return ("bytes", bytes(value))
    if isinstance(value, datetime | date | time):
        return ("time", value.isoformat())
    if isinstance(value, timedelta):
        return ("interval", value.total_seconds())
    if isinstance(value, list | tuple):
        return ("list", tuple(canon(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), canon(v)) for k, v in value.items())))
    return ("other", type(value).__name__, str(value))


def exact(value: Any) -> Any:
    """`canon` without rounding floats: equal keys mean equal values under every tolerance."""
    if isinstance(value, float | Decimal) and math.isfinite(number := float(value)):
        return ("num", number)
    return canon(value)


Counted = frozenset[tuple[Any, int]]  # a multiset, hashable
_NUMERIC = ("num", "nan")  # the keys of numbers (`exact`, `canon`): tolerance may match them
# `exact` by the value's type for the common ones (an isinstance chain per value dominated the cost)
_EXACT_BY_TYPE: dict[type, Callable[[Any], Any]] = {
    int: lambda v: ("num", v),
    str: lambda v: ("str", v),
    type(None): lambda v: ("null",),
}


def _exact_fast(value: Any) -> Any:
    by_type = _EXACT_BY_TYPE.get(type(value))
    return by_type(value) if by_type is not None else exact(value)


def _counted(values: Iterable[Any]) -> Counted:
    return frozenset(Counter(values).items())


class Fingerprint:
    """What one result's values tell about `compare` against another's, without its search: the sql
    equivalence compares a group's results pair by pair (issue 42). Two kinds of facts:

    - equal, decided: the same values exactly (floats unrounded) in the same order (`rows`), or as a
      multiset where order does not count (`bag`); where no float is held and no two columns hold the
      same multiset of values, also with the columns put in one canonical order (`canonical_rows`,
      `canonical_bag`), since `compare` then has exactly one order of the columns to try;
    - unequal, decided where rows are matched as a multiset (`may_equal_as_multisets`): `columns`, each
      column's values other than numbers and how many numbers it holds, as a multiset of columns, must be
      equal whatever the tolerance, and where no float is held `row_values`, each row's values as a
      multiset, as a multiset of rows (None where not known).

    Anything else (floats within tolerance, ties, a LIMIT cut inside a tie) is left to `compare`."""

    def __init__(self, width: int, rows: Sequence[Row]) -> None:
        self.width, self._rows, self.count = width, rows, len(rows)

    @classmethod
    def of(cls, width: int, rows: Sequence[Row]) -> Fingerprint:
        """Each part is worked out on first need (a pair told apart by `columns` needs nothing else)."""
        return cls(width, rows)

    @cached_property
    def rows(self) -> tuple[tuple[Any, ...], ...]:
        return tuple(tuple(_exact_fast(v) for v in row) for row in self._rows)

    @cached_property
    def bag(self) -> Counted:
        return _counted(self.rows)

    @cached_property
    def columns(self) -> Counted:
        sketches = []
        for j in range(self.width):
            column = [row[j] for row in self.rows]  # keyed: a number's key is ("num", x) or ("nan",)
            others = [key for key in column if key[0] not in _NUMERIC]
            sketches.append((len(column) - len(others), _counted(others)))
        return _counted(sketches)

    @cached_property
    def _exact_only(self) -> bool:
        return not _inexact(self._rows)

    @cached_property
    def row_values(self) -> Counted | None:
        if not self._exact_only:
            return None
        try:  # a row's values as a multiset: sorted (keys of one kind compare; kinds compare by name)
            return _counted(tuple(sorted(row)) for row in self.rows)
        except TypeError:  # keys that do not compare: no such fact, rather than one of another form
            return None

    @cached_property
    def canonical_rows(self) -> tuple[tuple[Any, ...], ...] | None:
        if not self._exact_only:
            return None
        order = _canonical_order([_counted(row[j] for row in self.rows) for j in range(self.width)])
        return None if order is None else tuple(tuple(row[j] for j in order) for row in self.rows)

    @cached_property
    def canonical_bag(self) -> Counted | None:
        return None if self.canonical_rows is None else _counted(self.canonical_rows)

    def decides_equal(self, other: Fingerprint, ordered: bool) -> bool:
        """Whether the two results are equal by `compare` with `ordered`, from the fingerprints alone."""
        if self.width != other.width or self.count != other.count:
            return False
        if self.rows == other.rows or (not ordered and self.bag == other.bag):
            return True
        if self.canonical_rows is None or other.canonical_rows is None:
            return False
        if ordered:
            return self.canonical_rows == other.canonical_rows
        return self.canonical_bag == other.canonical_bag

    def may_equal_as_multisets(self, other: Fingerprint) -> bool:
        """False where `compare` without order (or without the LIMIT-tie rule) cannot find them equal."""
        if self.width != other.width or self.count != other.count or self.columns != other.columns:
            return False
        exact = self.row_values is not None and other.row_values is not None
        return not exact or self.row_values == other.row_values


def _canonical_order(columns: list[Counted]) -> list[int] | None:
    """Column positions ordered by their values' multiset (through its hash, fixed within a process);
    None when two columns cannot be told apart so."""
    hashes = [hash(column) for column in columns]
    if len(set(hashes)) < len(hashes):
        return None
    return sorted(range(len(columns)), key=hashes.__getitem__)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def values_close(a: Any, b: Any, tol: Tolerance) -> bool:
    if _is_number(a) and _is_number(b):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        x, y = float(a), float(b)
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return math.isclose(x, y, rel_tol=tol.rel, abs_tol=tol.abs)
    return bool(canon(a) == canon(b))


def rows_close(a: Row, b: Row, tol: Tolerance) -> bool:
    return len(a) == len(b) and all(values_close(x, y, tol) for x, y in zip(a, b, strict=True))


def _inexact(rows: Sequence[Row]) -> bool:
    return any(isinstance(v, float | Decimal) for row in rows for v in row)


def multiset_equal(gold: Sequence[Row], pred: Sequence[Row], tol: Tolerance) -> bool:
    """Same rows with the same multiplicities, floats within tolerance."""
    if len(gold) != len(pred):
        return False
    gold_keys = Counter(tuple(canon(v) for v in row) for row in gold)
    pred_keys = Counter(tuple(canon(v) for v in row) for row in pred)
    if gold_keys == pred_keys:
        return True
    if not (_inexact(gold) or _inexact(pred)):
        return False
    # Rounding put two close floats on either side of a digit boundary: match the leftovers greedily.
    left_gold = _leftover(gold, gold_keys - pred_keys)
    left_pred = _leftover(pred, pred_keys - gold_keys)
    if len(left_gold) != len(left_pred) or len(left_gold) > _MAX_LEFTOVER:
        return False
    unused = list(left_pred)
    for row in left_gold:
        match = next((i for i, other in enumerate(unused) if rows_close(row, other, tol)), None)
        if match is None:
            return False
        unused.pop(match)
    return True


def _leftover(rows: Sequence[Row], extra: Counter[Any]) -> list[Row]:
    out: list[Row] = []
    for row in rows:
        key = tuple(canon(v) for v in row)
        if extra[key] > 0:
            extra[key] -= 1
            out.append(row)
    return out


def _sort_key(value: Any) -> tuple[int, float, Any]:
    key = canon(value)
    if key[0] == "num":
        return (2, float(value), 0)
    if key[0] == "nan":
        return (2, math.inf, 1)
    if key[0] == "null":
        return (0, 0.0, "")
    rank = {"bool": 1, "str": 3, "bytes": 4}.get(key[0], 5)
    return (rank, 0.0, key[1] if rank < 5 else repr(key))


def _column_close(gold: list[Any], pred: list[Any], tol: Tolerance) -> bool:
    """Same multiset of values in one column: a cheap necessary condition for matching two columns."""
    if Counter(map(canon, gold)) == Counter(map(canon, pred)):
        return True
    return all(
        values_close(a, b, tol)
        for a, b in zip(sorted(gold, key=_sort_key), sorted(pred, key=_sort_key), strict=True)
    )


def column_matchings(
    gold: Sequence[Row],
    pred: Sequence[Row],
    tol: Tolerance,
    fits: Callable[[list[Any], list[Any], Tolerance], bool] | None = None,
) -> Iterator[tuple[int, ...]]:
    """Permutations p (gold column j <- prediction column p[j]) whose column vectors match, identity first.

    `fits(gold column, prediction column, tol)` is the per-column test (default: same multiset).
    """
    fits = fits or _column_close
    width = len(gold[0])
    gold_cols = [[row[j] for row in gold] for j in range(width)]
    pred_cols = [[row[i] for row in pred] for i in range(width)]
    options: list[list[int]] = []
    for j in range(width):
        order = [j] + [i for i in range(width) if i != j]
        options.append([i for i in order if fits(gold_cols[j], pred_cols[i], tol)])
    chosen: list[int] = []
    count = 0

    def walk(j: int) -> Iterator[tuple[int, ...]]:
        nonlocal count
        if j == width:
            count += 1
            yield tuple(chosen)
            return
        for i in options[j]:
            if i not in chosen and count < _MAX_PERMUTATIONS:
                chosen.append(i)
                yield from walk(j + 1)
                chosen.pop()

    yield from walk(0)


def tie_blocks(keys: Sequence[Row]) -> Blocks:
    """Runs of consecutive rows whose sort keys are equal: [start, end) ranges."""
    blocks: Blocks = []
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or tuple(map(canon, keys[i])) != tuple(map(canon, keys[start])):
            blocks.append((start, i))
            start = i
    return blocks


def _same_order(gold: Sequence[Row], pred: Sequence[Row], tol: Tolerance, blocks: Blocks | None) -> bool:
    if all(rows_close(g, p, tol) for g, p in zip(gold, pred, strict=True)):
        return True
    if blocks is None:
        return False
    return all(multiset_equal(gold[s:e], pred[s:e], tol) for s, e in blocks)


def values_within(pool: list[Any], values: list[Any], _tol: Tolerance) -> bool:
    """Every value of a prediction column occurs in the (unlimited) gold column: a cheap filter."""
    return set(map(canon, values)) <= set(map(canon, pool))


def valid_limit_cut(
    rows: Sequence[Row], full: Sequence[Row], full_keys: Sequence[Row], tol: Tolerance
) -> bool:
    """Whether `rows` are what `LIMIT len(rows)` may return from the ordered result `full`.

    `full` is the gold without its LIMIT and `full_keys` its sort keys. Before the tie group at the cut
    the usual rule holds (ties in any order); inside it, any of the tied rows may have been kept. False
    when the LIMIT cut nothing or cut no tie (then the plain comparison already decided). Columns must
    come in the gold's order.
    """
    n = len(rows)
    if n == 0 or len(full) <= n:
        return False
    keys = [tuple(map(canon, key)) for key in full_keys]
    start = n - 1
    while start > 0 and keys[start - 1] == keys[n - 1]:
        start -= 1
    if keys[n] != keys[n - 1]:  # the LIMIT did not cut a tie: nothing to tolerate
        return False
    end = n
    while end < len(keys) and keys[end] == keys[n - 1]:
        end += 1
    if not _same_order(full[:start], rows[:start], tol, tie_blocks(full_keys[:start])):
        return False
    pool = list(full[start:end])
    for row in rows[start:n]:
        match = next((i for i, other in enumerate(pool) if rows_close(row, other, tol)), None)
        if match is None:
            return False
        pool.pop(match)
    return True


def compare(
    gold: Sequence[Row],
    pred: Sequence[Row],
    *,
    gold_width: int,
    pred_width: int,
    ordered: bool,
    tol: Tolerance,
    blocks: Callable[[], Blocks | None] = lambda: None,
) -> Comparison:
    """The verdict with a one-line reason. `blocks` (tie ranges in the gold) is asked only when needed."""
    if gold_width != pred_width:
        return Comparison(False, f"column count differs: reference {gold_width}, prediction {pred_width}")
    if len(gold) != len(pred):
        return Comparison(False, f"row count differs: reference {len(gold)}, prediction {len(pred)}")
    if not gold:
        return Comparison(True, "both results are empty")
    order_seen = False
    tie_ranges: Blocks | None = None
    asked = False
    for perm in column_matchings(gold, pred, tol):
        permuted = [tuple(row[i] for i in perm) for row in pred]
        if not multiset_equal(gold, permuted, tol):
            continue
        moved = "" if perm == tuple(range(gold_width)) else " (columns in another order)"
        if not ordered:
            return Comparison(True, f"same rows as a multiset{moved}")
        if not asked:
            tie_ranges, asked = blocks(), True
        if _same_order(gold, permuted, tol, tie_ranges):
            return Comparison(True, f"same rows in the required order{moved}")
        order_seen = True
    if order_seen:
        return Comparison(False, "same rows, but the reference orders them (ORDER BY) and the order differs")
    return Comparison(False, _difference(gold, pred))


def _difference(gold: Sequence[Row], pred: Sequence[Row]) -> str:
    gold_keys = Counter(tuple(canon(v) for v in row) for row in gold)
    pred_keys = Counter(tuple(canon(v) for v in row) for row in pred)
    lacking = gold_keys - pred_keys
    missing = next((row for row in gold if lacking[tuple(map(canon, row))] > 0), None)
    if missing is not None:
        return f"rows differ: the reference has {_short(missing)} which the prediction lacks"
    return "rows differ (no column order makes them equal)"


def _short(row: Row) -> str:
    text = repr(tuple(row))
    return text if len(text) <= 160 else text[:157] + "..."
