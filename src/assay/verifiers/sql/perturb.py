"""A perturbed copy of a database's data, to tell a query that computes its answer from one that does not.

A prediction that returns the gold's rows as literals (`SELECT 'Dana', 25`, `SELECT 40 FROM t LIMIT 1`,
a CASE on a count) matches the gold on the database it was written against; on data it was not written
against it keeps its answer while the gold's changes. This module makes such data from the rows of the
tables the gold reads, deterministically from a seed (issue 28):

- rows are deleted (about a third of each table the gold reads), which moves counts, sums and which
  entities exist; a table that had rows never ends up empty, cascades included (issue 44: an empty table
  is an edge case no question meant, where `SUM` is NULL and `COUNT` 0), a draw that empties one is
  drawn again;
- values are relabelled by a bijection per column (the distinct values of a column shuffled among
  themselves), which moves maxima, averages, groupings and which row holds which value;
- in a group of columns that names entities (a key, every column that references it, a column of names:
  `_identifying`), integers and free text then move out of the original's domain (issue 44): ids are
  shifted past the largest, names get a mark in their middle, through every reference alike. A filter
  that pins the gold's rows by their ids or names (`WHERE id IN (5, 7, 13)`, `WHERE name = 'Dana'`) then
  picks nothing on the copy, whatever the shuffle did; joins through the keys are untouched. Values the
  question names stay (`Protected`: the gold's literals, and whole words of the item's prompt), so
  `WHERE name = 'Smith'` for "employees named Smith" keeps its sense; a name the gold's `LIKE` matches is
  marked where the pattern still matches it.
  Floats and dates of such a group (prices, amounts, order days) move off their values to random
  points within their range, never across a number or date the gold names (`_nudged`): `price >=
  84.04` for the dearest product and `day = '2022-12-05'` for the latest order pick nothing.

What the perturbation keeps, so that a correct query stays correct (it is compared with the gold on the
copy, and must agree): the domain of every category (a column whose values are shared by many rows: a
`status IN ('open', 'shipped')` that equals `status <> 'returned'` still does), NULLs (never added or
removed: `NOT IN` and `COUNT(col)` behave as before), ties within a column (a bijection), uniqueness of
single and composite keys, integrality, functional dependencies, and references between tables: a column
whose values all occur in another column whose values are distinct is taken as a reference to it
(declared or not); both share one mapping, and a row whose reference lost its target is deleted too
(cascade), so inner joins and "no join" stay equivalent. What it does not keep: order relations between
values of different columns (`start <= end`), arithmetic identities between columns (`total = price *
qty`), the bounds of an identifying column's domain (`id BETWEEN 1 AND 40` for "every id"), and text
functions that see the mark (`LENGTH(name)`, a `LIKE` whose fixed part crosses a name's middle); a query
equivalent to the gold only through those is judged on the copy like any other. Ties and empty groups
that deletions create between rows (a count, a sum) cannot be prevented here: dependence.py recognises
them (edges.py).
"""

from __future__ import annotations

import bisect
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from functools import cached_property
from typing import Any

from assay.verifiers.sql.compare import canon

Row = tuple[Any, ...]
Column = tuple[str, int]  # (table, column index)
Bounds = tuple[int | None, int | None, frozenset[str]]  # a group's integer range, its text holding _MARK
_MARK = "~"
_DELETE = 1 / 3


@dataclass
class TableData:
    """One table's rows as read from the database (`complete` is False when only a prefix was read)."""

    name: str
    columns: list[str]
    rows: list[Row]
    complete: bool = True
    create: str = ""  # the DDL that recreates it on the same engine
    insert_columns: list[str] = field(default_factory=list)  # columns to insert (none generated)
    types: list[str] = field(default_factory=list)  # their engine types, where the engine needs them
    source: str = ""  # the name to read it by, where the bare name is not enough (PostgreSQL: qualified)
    _stats: dict[int, ColumnStats] = field(default_factory=dict, repr=False, compare=False)

    def stats(self, index: int) -> ColumnStats:
        """One column's statistics, read once (every round and every response reuses the snapshot)."""
        cached = self._stats.get(index)
        if cached is None:
            values = _values(self.rows, index)
            ints = [v for v in values if type(v) is int]
            cached = self._stats[index] = ColumnStats(
                points=frozenset(p for p in map(_point, values) if p is not None),
                distinct=len(values),
                filled=sum(row[index] is not None for row in self.rows),
                low=min(ints, default=None),
                high=max(ints, default=None),
                marked=frozenset(v for v in values if type(v) is str and _MARK in v),
            )
        return cached


@dataclass(frozen=True)
class ColumnStats:
    points: frozenset[tuple[str, float | int]]  # measures and dates on their number line (`_point`)
    distinct: int  # non-NULL distinct values
    filled: int  # non-NULL rows
    low: int | None  # the smallest and largest integer
    high: int | None
    marked: frozenset[str]  # text that already holds the mark (a moved name must not become one)


@dataclass(frozen=True)
class Protected:
    """Values the question itself names: literals of the gold query and words of the item's prompt. They
    stay in the data (shuffled among rows like the rest), so a query that filters on them still means
    what the question means; every other identifying value moves to a value the original never held."""

    literals: frozenset[Any] = frozenset()  # canonical keys (`_key`), text in lower case (`LIKE 'kemi'`)
    prompt: str = ""  # lower case
    patterns: tuple[re.Pattern[str], ...] = ()  # the gold's LIKE patterns, which a moved name still matches

    @classmethod
    def of(cls, literals: Iterable[Any], prompt: str | None) -> Protected:
        literals = list(literals)
        folded = (value.lower() if isinstance(value, str) else value for value in literals)
        likes = tuple(_like(v) for v in literals if isinstance(v, str) and ("%" in v or "_" in v))
        return cls(frozenset(_key(value) for value in folded), (prompt or "").lower(), likes)

    @cached_property
    def barriers(self) -> frozenset[tuple[str, float | int]]:
        """The question's numbers and dates on their number line: a moved measure or date never
        crosses one (`amount > 100`, `day < '2021-01-01'` keep their rows)."""
        return frozenset(p for p in map(_point, self.literals) if p is not None) | frozenset(
            ("num", v) for v in self.literals if type(v) is int
        )

    def __contains__(self, value: Any) -> bool:
        folded = value.lower() if type(value) is str else value
        if (folded if type(value) in _PLAIN else _key(value)) in self.literals:
            return True
        if not self.prompt or type(value) not in (int, str):
            return False
        text = str(value).lower()
        start = self.prompt.find(text) if text else -1
        while start >= 0:  # a whole word of the prompt ("id 5", not the 5 of "15")
            end = start + len(text)
            before = self.prompt[start - 1] if start else " "
            after = self.prompt[end] if end < len(self.prompt) else " "
            if not (before.isalnum() or after.isalnum()):
                return True
            start = self.prompt.find(text, start + 1)
        return False


def _like(pattern: str) -> re.Pattern[str]:
    """A LIKE pattern as a regular expression, case folded (SQLite's LIKE folds ASCII case)."""
    body = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(body, re.IGNORECASE | re.DOTALL)


def perturb(
    tables: Mapping[str, TableData],
    targets: Iterable[str],
    seed: str,
    links: list[tuple[Column, Column]] | None = None,
    keep: Protected = Protected(),
) -> dict[str, list[Row]]:
    """New rows for every table: `targets` (the tables the gold reads) perturbed, the others only where
    a reference cascades into them. Deterministic in `seed` and the data. `links`: `references(tables)`
    when the caller kept it from an earlier round; `keep`: the values the question names."""
    targets = {name for name in targets if name in tables}
    links = references(tables) if links is None else links
    rows = _deleted(tables, targets, seed, links)
    columns = {
        name: [list(col) for col in zip(*table_rows, strict=True)] for name, table_rows in rows.items()
    }
    for component in _components(tables, links):
        if any(table in targets for table, _ in component):
            rng = random.Random(f"{seed}:relabel:{sorted(component)[0]}")
            moving = keep if _identifying(tables, component) else None
            bounds = _bounds(tables, component)
            line = _line(tables, component) if moving is not None else frozenset()
            _relabel(columns, component, rng, moving, _narrow(tables, component, bounds), bounds, line)
    return {name: list(zip(*cols, strict=True)) if cols else rows[name] for name, cols in columns.items()}


_TRIES = 4


def _deleted(
    tables: Mapping[str, TableData], targets: set[str], seed: str, links: list[tuple[Column, Column]]
) -> dict[str, list[Row]]:
    """Rows left after deleting about a third of each target and cascading. No table that had rows is
    left empty (an empty table is an edge case no question meant: `SUM` is NULL where `COUNT` is 0): a
    draw that empties one is drawn again, and after `_TRIES` draws nothing is deleted."""
    for attempt in range(_TRIES):
        salt = f":{attempt}" if attempt else ""
        rows = {name: list(table.rows) for name, table in tables.items()}
        for name in sorted(targets):
            rows[name] = _delete(rows[name], random.Random(f"{seed}:delete:{name}{salt}"))
        _cascade(rows, links)
        if all(rows[name] or not table.rows for name, table in tables.items()):
            return rows
    return {name: list(table.rows) for name, table in tables.items()}


_PLAIN = (int, float, str, bytes, bool, Decimal, date, datetime, time, timedelta)


def _key(value: Any) -> Any:
    """A hashable stand-in for a value: itself when it is a plain scalar (the values of one column come
    from one database, so Python's equality is the database's), else its canonical form."""
    return value if type(value) in _PLAIN else canon(value)


def _delete(rows: list[Row], rng: random.Random) -> list[Row]:
    if len(rows) < 2:
        return rows
    kept = [row for row in rows if rng.random() >= _DELETE]
    return kept or [rng.choice(rows)]


def _values(rows: Iterable[Row], index: int) -> set[Any]:
    return {_key(row[index]) for row in rows if row[index] is not None}


def references(tables: Mapping[str, TableData]) -> list[tuple[Column, Column]]:
    """(referencing column, referenced column) pairs: the referenced one is distinct and non-NULL in
    every row, and holds every non-NULL value of the referencing one."""
    values: dict[Column, set[Any]] = {}
    unique: list[Column] = []
    for name, table in sorted(tables.items()):
        for index in range(len(table.columns)):
            column = (name, index)
            values[column] = _values(table.rows, index)
            if table.rows and len(values[column]) == len(table.rows):
                unique.append(column)
    links: list[tuple[Column, Column]] = []
    for column, held in values.items():
        if not held:
            continue
        for key in unique:
            if key != column and len(held) <= len(values[key]) and held <= values[key]:
                links.append((column, key))
    return links


def _cascade(rows: dict[str, list[Row]], links: list[tuple[Column, Column]]) -> None:
    """Delete rows whose reference lost its target, until every reference holds again."""
    for _ in range(len(rows) + 1):
        changed = False
        for (table, index), (key_table, key_index) in links:
            allowed = _values(rows[key_table], key_index)
            kept = [row for row in rows[table] if row[index] is None or _key(row[index]) in allowed]
            if len(kept) != len(rows[table]):
                rows[table], changed = kept, True
        if not changed:
            return


def _components(tables: Mapping[str, TableData], links: list[tuple[Column, Column]]) -> list[list[Column]]:
    """Columns grouped by references (union-find): a group shares one bijection."""
    parent: dict[Column, Column] = {
        (name, index): (name, index) for name, table in tables.items() for index in range(len(table.columns))
    }

    def root(column: Column) -> Column:
        while parent[column] != column:
            parent[column] = parent[parent[column]]
            column = parent[column]
        return column

    for column, key in links:
        parent[root(column)] = root(key)
    groups: dict[Column, list[Column]] = {}
    for column in sorted(parent):
        groups.setdefault(root(column), []).append(column)
    return list(groups.values())


def _relabel(
    columns: dict[str, list[list[Any]]],
    component: list[Column],
    rng: random.Random,
    keep: Protected | None,
    narrow: frozenset[str] = frozenset(),
    bounds: Bounds = (None, None, frozenset()),
    line: frozenset[tuple[str, float | int]] = frozenset(),
) -> None:
    """Shuffle the distinct values of a group of columns among themselves (within each Python type, so
    an integer column stays integer), and apply that one mapping to every column of the group. With
    `keep` (an identifying group, `_identifying`), integers and free text then move out of the original
    domain (`_moved`) unless the question names them; `narrow`: the types whose column cannot hold a
    moved value (`smallint`, `char(n)`); `bounds`: the group's integer range and marked text before any
    deletion, which no moved value may take; `line`: the group's measures and dates before any deletion
    (`_point`), between which a moved one lands."""
    by_type: dict[str, dict[Any, Any]] = {}
    for table, index in component:
        if not columns[table]:
            continue
        for value in columns[table][index]:
            if value is not None:
                by_type.setdefault(type(value).__name__, {}).setdefault(_key(value), value)
    mapping: dict[tuple[str, Any], Any] = {}
    for kind, values in sorted(by_type.items()):
        keys = sorted(values, key=repr)
        shuffled = list(keys)
        rng.shuffle(shuffled)
        targets = [values[new] for new in shuffled]
        if keep is not None and kind not in narrow:
            targets = _moved(kind, bounds, targets, keep)
            targets = _nudged(targets, keep, line, rng)
        for old, new in zip(keys, targets, strict=True):
            mapping[(kind, old)] = new
    for table, index in component:
        if columns[table]:
            columns[table][index] = [
                None if v is None else mapping[(type(v).__name__, _key(v))] for v in columns[table][index]
            ]


_STRUCTURED = re.compile(r"[\d\s:.,+\-/TZ]*")  # dates, times, numbers written as text: their format is kept
_LIMIT = 1 << 62


def _moved(kind: str, bounds: Bounds, targets: list[Any], keep: Protected) -> list[Any]:
    """`targets` (a shuffle of the group's values) moved to values the original never held, those the
    question names excepted: integers shifted past the domain's top (`id IN (5, 7, 13)` picks nothing),
    text with a mark inserted in its middle (`name = 'Dana'` picks nothing; `LIKE 'Da%'` and `LIKE
    '%na'` keep their sense for most values). One mapping for the whole group, so every reference moves
    with it."""
    low, high, marked = bounds
    if kind == "int" and low is not None and high is not None:
        shift = high - low + 1
        if high + shift >= _LIMIT or low < -_LIMIT:
            return targets
        return [value if value in keep else value + shift for value in targets]
    if kind == "str" and not all(_STRUCTURED.fullmatch(value) for value in targets):
        taken = set(marked)
        out = []
        for value in targets:
            if value not in keep:
                value = _mark(value, keep, taken)
                taken.add(value)
            out.append(value)
        return out
    return targets


_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
Point = tuple[str, float | int]  # a measure or a date on its number line: ("num", x) or ("day", ordinal)


def _point(value: Any) -> Point | None:
    """Where a float or a date (a `date`, or ISO text `YYYY-MM-DD`) lies on its line; None for the rest."""
    if type(value) is float:
        return ("num", value) if value == value and abs(value) != float("inf") else None
    if type(value) is date:
        return ("day", value.toordinal())
    if type(value) is str and len(value) == 10 and _ISO_DAY.fullmatch(value):
        try:
            return ("day", date.fromisoformat(value).toordinal())
        except ValueError:
            return None
    return None


def _line(tables: Mapping[str, TableData], component: list[Column]) -> frozenset[Point]:
    """The group's measures and dates before any deletion."""
    return frozenset().union(*(tables[table].stats(index).points for table, index in component))


def _nudged(targets: list[Any], keep: Protected, line: frozenset[Point], rng: random.Random) -> list[Any]:
    """Floats and dates of an identifying group (a measure or a date nearly every row has its own) moved
    off the original's values (issue 44): each to a random point of its line that no original value
    holds, strictly between the group's smallest and largest, on the same side of every number or date
    the question names (`amount > 100`, `day < '2021-01-01'` keep their rows). A pin on the gold's rows
    by such a value (`price = 84.04`, `price >= 84.04` for the most expensive, `amount > 347.77` at the
    second largest, `day = '2022-12-05'` for the latest) then picks nothing or other rows on the copy.
    Those values stay; a date keeps its form, and one with no free day where it may go stays too."""
    if not line:
        return targets
    axes: dict[str, list[float | int]] = {}
    for kind, x in line:
        axes.setdefault(kind, []).append(x)
    walls: dict[str, list[float | int]] = {}
    for kind, x in keep.barriers:
        walls.setdefault(kind, []).append(x)
    for axis in (*axes.values(), *walls.values()):
        axis.sort()
    taken = {x for _, x in line}
    out = []
    for value in targets:
        point = _point(value)
        if point is None or point in keep.barriers or value in keep:
            out.append(value)
            continue
        kind, x = point
        axis, wall = axes[kind], walls.get(kind, [])
        at = bisect.bisect_left(wall, x)
        low = max(axis[0], wall[at - 1]) if at > 0 else axis[0]
        high = min(axis[-1], wall[at]) if at < len(wall) else axis[-1]
        moved = _free(kind, low, high, taken, rng)
        if moved is None:
            out.append(value)
            continue
        taken.add(moved)
        if kind == "num":
            out.append(moved)
        else:
            day = date.fromordinal(int(moved))
            out.append(day.isoformat() if type(value) is str else day)
    return out


_DRAWS = 8


def _free(
    kind: str, low: float | int, high: float | int, taken: set[float | int], rng: random.Random
) -> float | int | None:
    """A point strictly between `low` and `high` that is not `taken` (a whole day for a date), or None."""
    for _ in range(_DRAWS):
        x: float | int = (
            rng.uniform(low, high)
            if kind == "num"
            else rng.randint(int(low) + 1, int(high) - 1)
            if high - low >= 2
            else low
        )
        if low < x < high and x not in taken:
            return x
    return None


def _mark(value: str, keep: Protected, taken: set[str]) -> str:
    """`value` with a mark inserted as near its middle as the gold's LIKE patterns that match it allow
    (they must still match it: `LIKE '%son%'` keeps its rows); unmarked where no place does."""
    matched = [pattern for pattern in keep.patterns if pattern.fullmatch(value)]
    middle = len(value) // 2
    places = sorted(range(len(value) + 1), key=lambda i: (abs(i - middle), i)) if matched else [middle]
    for at in places:
        marked = value[:at] + _MARK + value[at:]
        while marked in taken:
            marked = marked[:at] + _MARK + marked[at:]
        if all(pattern.fullmatch(marked) for pattern in matched):
            return marked
    return value


def _bounds(tables: Mapping[str, TableData], component: list[Column]) -> Bounds:
    """The group's integer range and its text holding the mark, before any deletion."""
    stats = [tables[table].stats(index) for table, index in component]
    lows = [st.low for st in stats if st.low is not None]
    highs = [st.high for st in stats if st.high is not None]
    marked = frozenset().union(*(st.marked for st in stats))
    return min(lows, default=None), max(highs, default=None), marked


# The largest integer of fixed-width engine types (DuckDB names, PostgreSQL oids); SQLite has none.
_INT_TOP = {
    "TINYINT": (1 << 7) - 1,
    "SMALLINT": (1 << 15) - 1,
    "INTEGER": (1 << 31) - 1,
    "UTINYINT": (1 << 8) - 1,
    "USMALLINT": (1 << 16) - 1,
    "UINTEGER": (1 << 32) - 1,
    "21": (1 << 15) - 1,
    "23": (1 << 31) - 1,
}
_NARROW_STR = {"1042", "1043"}  # PostgreSQL char(n), varchar(n)


def _narrow(tables: Mapping[str, TableData], component: list[Column], bounds: Bounds) -> frozenset[str]:
    """The Python types a group's values may not move in: a column whose engine type could not hold the
    moved value (an `INTEGER` past 2**31 once shifted, a `char(n)`), where the copy would not build."""
    low, high = bounds[0], bounds[1]
    top = None if low is None or high is None else 2 * high - low + 1  # the largest shifted value
    out = set()
    for table, index in component:
        types = tables[table].types
        kind = types[index].upper() if len(types) == len(tables[table].columns) else ""
        if top is not None and kind in _INT_TOP and top > _INT_TOP[kind]:
            out.add("int")
        if kind in _NARROW_STR or kind.startswith(("CHAR", "VARCHAR(")):
            out.add("str")
    return frozenset(out)


_MANY = 8


def _identifying(tables: Mapping[str, TableData], component: list[Column]) -> bool:
    """Whether a group of columns names entities: it holds a key (distinct in every row of two or more)
    or a column of at least `_MANY` distinct values covering a fifth of its rows (names). Its values then
    move out of the original's domain, so that a filter pinning a value the question does not name (the
    ids or names of the gold's rows) picks nothing on the copy. A category (few values, each shared by
    many rows) keeps its domain, so `status <> 'returned'` still equals `status IN ('open', 'shipped')`."""
    for table, index in component:
        rows, stats = tables[table].rows, tables[table].stats(index)
        if len(rows) > 1 and stats.distinct == len(rows):
            return True
        if stats.distinct >= _MANY and stats.distinct * 5 >= stats.filled:
            return True
    return False


@dataclass
class Snapshot:
    tables: dict[str, TableData] = field(default_factory=dict)  # by name as the database spells it
    views: list[str] = field(default_factory=list)  # CREATE VIEW statements, in creation order
    skipped: list[str] = field(default_factory=list)  # tables not copied (not read, virtual)
    links: list[Any] | None = None  # perturb.references(tables), computed once for every round
    catalog: str | None = None  # DuckDB: the database's name, which a query may qualify tables with
    schemas: dict[str, str] = field(default_factory=dict)  # PostgreSQL: table -> the schema it is in
    # PostgreSQL: (schema, name, definition) of each view, recreated over the copies
    qualified_views: list[tuple[str, str, str]] = field(default_factory=list)

    def resolve(self, names: set[str]) -> set[str]:
        """The snapshot's spelling of table names read by a query (SQL folds unquoted case)."""
        lower = {name.lower(): name for name in self.tables}
        return {lower[name.lower()] for name in names if name.lower() in lower}


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
