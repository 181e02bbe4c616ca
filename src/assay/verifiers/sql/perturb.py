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
  Measures, dates and times of such a group (prices, amounts, integer points, decimals, order days,
  timestamps, times of day) move off their values to random points of their grid within their range,
  never across a number, date or time the gold names, each keeping its type and form (`_nudged`):
  `price >= 84.04` for the dearest product, `points >= 4980` for the most points and `day =
  '2022-12-05'` for the latest order pick nothing. A value the question names (`city = 'Oslo'`) is
  given another value's rows on each copy in turn (`_rotated`).

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
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
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
    points: frozenset[tuple[str, float]]  # measures, dates and times on their line (`_point`)
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
    # (column name in lower case, text) the gold compares: a text absent from its column's data is given
    # another value's rows on each copy in turn (`_absent_given`)
    compared: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def of(
        cls, literals: Iterable[Any], prompt: str | None, compared: Iterable[tuple[str, str]] = ()
    ) -> Protected:
        literals = list(literals)
        folded = (value.lower() if isinstance(value, str) else value for value in literals)
        likes = tuple(_like(v) for v in literals if isinstance(v, str) and ("%" in v or "_" in v))
        keys = frozenset(_key(value) for value in folded)
        return cls(keys, (prompt or "").lower(), likes, frozenset(compared))

    @cached_property
    def barriers(self) -> frozenset[tuple[str, float]]:
        """The question's numbers, dates and times on their line: a moved measure, date or time never
        crosses one (`amount > 100`, `day < '2021-01-01'`, `call_at < '09:30'` keep their rows)."""
        return frozenset(p for p in map(_point, self.literals) if p is not None)

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
    turn: int = 0,
    delete: bool = True,
) -> dict[str, list[Row]]:
    """New rows for every table: `targets` (the tables the gold reads) perturbed, the others only where
    a reference cascades into them. Deterministic in `seed` and the data. `links`: `references(tables)`
    when the caller kept it from an earlier round; `keep`: the values the question names; `turn`: the
    copy's number, which picks the rows a named value is given (`_rotated`); `delete`: False where the
    gold's answer is nothing (deleting rows never makes something of it: only the relabelling can)."""
    targets = {name for name in targets if name in tables}
    links = references(tables) if links is None else links
    rows = _deleted(tables, targets, seed, links) if delete else {n: list(t.rows) for n, t in tables.items()}
    columns = {
        name: [list(col) for col in zip(*table_rows, strict=True)] for name, table_rows in rows.items()
    }
    for component in _components(tables, links):
        if any(table in targets for table, _ in component):
            rng = random.Random(f"{seed}:relabel:{sorted(component)[0]}")
            moving = _identifying(tables, component)
            measured = moving or _measured(tables, component)
            bounds = _bounds(tables, component)
            line = _line(tables, component) if measured else frozenset()
            narrow = _narrow(tables, component, bounds)
            _relabel(columns, component, rng, keep, (moving, measured), narrow, bounds, line, turn)
            names = {tables[table].columns[index].lower() for table, index in component}
            named = sorted({text for column, text in keep.compared if column in names})
            if named and "str" not in narrow:
                _absent_given(columns, component, named, keep, turn)
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
    keep: Protected,
    moving: tuple[bool, bool] = (False, False),
    narrow: frozenset[str] = frozenset(),
    bounds: Bounds = (None, None, frozenset()),
    line: frozenset[Point] = frozenset(),
    turn: int = 0,
) -> None:
    """Shuffle the distinct values of a group of columns among themselves (within each Python type, so
    an integer column stays integer), each value the question names given the rows of another value on
    each copy in turn (`_rotated`), and apply that one mapping to every column of the group. In an
    identifying group (`moving[0]`, `_identifying`), measures, dates and times then move off the
    original's values (`_nudged`), and integers left where they were and free text move out of the
    original domain (`_moved`), unless the question names them; in a group of measures (`moving[1]`,
    `_measured`), floats, decimals, dates and times move off theirs; `narrow`: the types whose column cannot
    hold a value moved out of its range (`smallint`, `char(n)`); `bounds`: the group's integer range and
    marked text before any deletion, which no moved value may take; `line`: the group's measures, dates
    and times before any deletion (`_point`), between which a moved one lands."""
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
        shuffled = _rotated(keys, shuffled, keep, turn)
        targets = [values[new] for new in shuffled]
        identifying, measured = moving
        if identifying or (measured and kind != "int"):  # integers of a measure may be counts, codes
            shuffled_values = targets
            targets = _nudged(targets, keep, line, rng)
            if identifying and kind not in narrow:  # what did not move (text, full integers) leaves
                stayed = [a is b for a, b in zip(shuffled_values, targets, strict=True)]
                targets = _moved(kind, bounds, targets, keep, stayed)
        for old, new in zip(keys, targets, strict=True):
            mapping[(kind, old)] = new
    for table, index in component:
        if columns[table]:
            columns[table][index] = [
                None if v is None else mapping[(type(v).__name__, _key(v))] for v in columns[table][index]
            ]


def _rotated(keys: list[Any], shuffled: list[Any], keep: Protected, turn: int) -> list[Any]:
    """The shuffle with each value the question names (`Oslo`, `tier = 1`) given, on copy `turn`, the rows
    that held the `turn`-th other value of its column, so that across the copies a filter on it picks
    every other group of rows in turn. A gold whose answer is nothing (the orders of a city whose
    customers never ordered: a count of 0) then finds something on some copy, where a pin that picks
    nothing (the ids of those customers) still finds nothing. A bijection, like any shuffle."""
    if (not keep.literals and not keep.prompt) or len(keys) < 2:
        return shuffled
    image = dict(zip(keys, shuffled, strict=True))  # old value -> new value
    for named in [key for key in keys if key in keep]:
        others = [key for key in keys if key != named]
        source = others[turn % len(others)]
        holder = next(key for key, new in image.items() if new == named)
        image[holder], image[source] = image[source], named
    return [image[key] for key in keys]


def _absent_given(
    columns: dict[str, list[list[Any]]], component: list[Column], named: list[str], keep: Protected, turn: int
) -> None:
    """Each text the gold compares with a column of this group that the group does not hold (a city nobody
    lives in) takes, on copy `turn`, the place of the `turn`-th other text of the group, through every
    column alike. The gold's answer is then nothing on the original only: a query picking nothing another
    way (`WHERE 1 = 0`, another absent city, a negative id) is told apart, as `_rotated` tells a pin on a
    named value's rows. A renaming to a value the group never held: equality, ties and references stay."""
    held = sorted(
        {v for table, index in component if columns[table] for v in columns[table][index] if type(v) is str}
    )
    free = [v for v in held if v not in keep]
    missing = [text for text in named if text not in held]
    if not free or not missing:
        return
    renamed = {free[(turn + j) % len(free)]: text for j, text in enumerate(missing[: len(free)])}
    for table, index in component:
        if columns[table]:
            columns[table][index] = [
                renamed.get(v, v) if type(v) is str else v for v in columns[table][index]
            ]


_STRUCTURED = re.compile(r"[\d\s:.,+\-/TZ]*")  # dates, times, numbers written as text: their format is kept
_LIMIT = 1 << 62


def _moved(kind: str, bounds: Bounds, targets: list[Any], keep: Protected, stayed: list[bool]) -> list[Any]:
    """`targets` (a shuffle of the group's values) moved to values the original never held, those the
    question names excepted: integers that found no free point inside their range (`stayed`: ids 1 to
    40, every one taken) shifted past the domain's top (`id IN (5, 7, 13)` picks nothing), text with a
    mark inserted in its middle (`name = 'Dana'` picks nothing; `LIKE 'Da%'` and `LIKE '%na'` keep their
    sense for most values). One mapping for the whole group, so every reference moves with it."""
    low, high, marked = bounds
    if kind == "int" and low is not None and high is not None:
        shift = high - low + 1
        if high + shift >= _LIMIT or low < -_LIMIT:
            return targets
        return [v + shift if still and v not in keep else v for v, still in zip(targets, stayed, strict=True)]
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


Point = tuple[str, float]  # a value on its line: "num" (numbers), "time" (seconds from 1970), "tod"
_EPOCH = datetime(1970, 1, 1)
_UTC_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DAY_S = 86400.0
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_ISO_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2})([ T])(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?")
_ISO_TIME = re.compile(r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?")
_EXACT = 1 << 53  # integers a float holds exactly


@dataclass(frozen=True)
class Place:
    """Where a measure, a date or a time lies on its line (`x`), the grid it moves on (`step`: whole
    units, cents, days, seconds; 0 for a float, which may go anywhere), and how a point of that grid is
    written back in the value's own type and form (a `DECIMAL(6,2)` keeps two places, `YYYY-MM-DD
    HH:MM:SS` text stays such text), so the engine takes the moved value as it took the original."""

    line: str
    x: float
    step: float
    write: Callable[[float], Any]


def _on_grid(raw: float, step: float) -> float:
    """`raw` as the grid writes it (k * step), so that an original and a drawn point compare equal."""
    return round(raw / step) * step if step else raw


def _place(value: Any) -> Place | None:
    """The value's place on its line, or None (text that is not a date or a time, NaN, bool, ...)."""
    kind = type(value)
    if kind is float:
        return Place("num", value, 0.0, float) if math.isfinite(value) else None
    if kind is int:
        return Place("num", float(value), 1.0, round) if abs(value) < _EXACT else None
    if kind is Decimal:
        return _decimal(value)
    if kind is date:
        return Place("time", (value - _EPOCH.date()).days * _DAY_S, _DAY_S, _day_writer(date))
    if kind is datetime:
        return _datetime(value)
    if kind is time:
        step = 1e-6 if value.microsecond else 1.0
        x = value.hour * 3600 + value.minute * 60 + value.second + value.microsecond / 1e6
        return Place("tod", _on_grid(x, step), step, lambda x: _time_of_day(x, value.tzinfo))
    if kind is str:
        return _text(value)
    return None


def _decimal(value: Decimal) -> Place | None:
    if not value.is_finite() or abs(value) >= _EXACT:
        return None
    exponent = min(int(value.as_tuple().exponent), 0)  # the places it is written with (its scale)
    step = 10.0**exponent
    return Place(
        "num", _on_grid(float(value), step), step, lambda x: Decimal(round(x / step)).scaleb(exponent)
    )


def _datetime(value: datetime) -> Place:
    step = 1e-6 if value.microsecond else 1.0
    zone = value.tzinfo
    epoch = _UTC_EPOCH if zone is not None else _EPOCH

    def write(x: float) -> datetime:
        moved = epoch + timedelta(microseconds=round(x * 1e6))
        return moved.astimezone(zone) if zone is not None else moved

    return Place("time", _on_grid((value - epoch).total_seconds(), step), step, write)


def _day_writer(form: type) -> Callable[[float], Any]:
    def write(x: float) -> Any:
        day = _EPOCH.date() + timedelta(days=round(x / _DAY_S))
        return day if form is date else day.isoformat()

    return write


def _time_of_day(x: float, zone: Any = None) -> time:
    micro = round(x * 1e6)
    seconds, micro = divmod(micro, 1_000_000)
    return time(seconds // 3600, seconds // 60 % 60, seconds % 60, micro, tzinfo=zone)


def _text(value: str) -> Place | None:
    """A date, a timestamp or a time of day written as ISO text (SQLite's only way to hold them)."""
    try:
        if len(value) == 10 and _ISO_DAY.fullmatch(value):
            return Place(
                "time", (date.fromisoformat(value) - _EPOCH.date()).days * _DAY_S, _DAY_S, _day_writer(str)
            )
        stamp = _ISO_STAMP.fullmatch(value)
        if stamp:
            day, sep, hh, mm, ss, frac = stamp.groups()
            step, x = _clock(int(hh), int(mm), ss, frac)
            base = (date.fromisoformat(day) - _EPOCH.date()).days * _DAY_S
            if x >= _DAY_S:
                return None

            def write_stamp(moved: float) -> str:
                days, rest = divmod(round(moved / step) * step, _DAY_S)
                when = (_EPOCH.date() + timedelta(days=int(days))).isoformat()
                return when + sep + _clock_text(rest, ss is not None, len(frac or ""))

            return Place("time", _on_grid(base + x, step), step, write_stamp)
        clock = _ISO_TIME.fullmatch(value)
        if clock:
            hh, mm, ss, frac = clock.groups()
            step, x = _clock(int(hh), int(mm), ss, frac)
            if x >= _DAY_S:
                return None
            return Place(
                "tod",
                _on_grid(x, step),
                step,
                lambda moved: _clock_text(moved, ss is not None, len(frac or "")),
            )
    except ValueError:
        return None
    return None


def _clock(hours: int, minutes: int, seconds: str | None, frac: str | None) -> tuple[float, float]:
    """The grid a clock reading is written on (a minute, a second, its decimals) and its seconds."""
    if hours > 23 or minutes > 59 or (seconds is not None and int(seconds) > 59):
        raise ValueError("not a time of day")
    step = 60.0 if seconds is None else 10.0 ** -len(frac) if frac else 1.0
    x = (
        hours * 3600
        + minutes * 60
        + (int(seconds) if seconds else 0)
        + (int(frac) / 10 ** len(frac) if frac else 0)
    )
    return step, x


def _clock_text(x: float, with_seconds: bool, places: int) -> str:
    at = _time_of_day(x)
    text = f"{at.hour:02d}:{at.minute:02d}"
    if with_seconds:
        text += f":{at.second:02d}"
        if places:
            text += "." + f"{at.microsecond:06d}"[:places]
    return text


def _point(value: Any) -> Point | None:
    place = _place(value)
    return None if place is None else (place.line, place.x)


def _line(tables: Mapping[str, TableData], component: list[Column]) -> frozenset[Point]:
    """The group's measures, dates and times before any deletion."""
    return frozenset().union(*(tables[table].stats(index).points for table, index in component))


def _nudged(targets: list[Any], keep: Protected, line: frozenset[Point], rng: random.Random) -> list[Any]:
    """Measures, dates and times of an identifying group (a value nearly every row has its own: prices,
    amounts, points, weights, order days, timestamps) moved off the original's values (issue 44): each
    to a random point of its grid that no original value holds, strictly between the group's smallest
    and largest, on the same side of every number, date or time the question names (`amount > 100`,
    `day < '2021-01-01'` keep their rows). A pin on the gold's rows by such a value (`price = 84.04`,
    `points >= 4980` for the most, `amount > 347.77` at the second largest, `day = '2022-12-05'` for the
    latest) then picks nothing or other rows on the copy. Those values stay; so does one with no free
    point where it may go (an integer range every value of which is taken: `_moved` shifts those)."""
    if not line:
        return targets
    axes: dict[str, list[float]] = {}
    for kind, x in line:
        axes.setdefault(kind, []).append(x)
    walls: dict[str, list[float]] = {}
    for kind, x in keep.barriers:
        walls.setdefault(kind, []).append(x)
    for axis in (*axes.values(), *walls.values()):
        axis.sort()
    taken = {point for point in line}
    full = {kind for kind, axis in axes.items() if axis[-1] - axis[0] + 1 <= len(axis)}  # ids 1 to 40
    # This copy's values land in a random part of each interval (up to half of it short at either end),
    # so that its extremes fall short of the original's on most copies: `MAX(points) ... WHERE points >
    # <second largest>` keeps the copy's maximum only where some value lands above the old second one.
    below, above = rng.uniform(0, _SHORT), rng.uniform(1 - _SHORT, 1)
    budget = [_SCAN]
    out = []
    for value in targets:
        place = _place(value)
        if (
            place is None
            or place.line not in axes
            or (place.step and (budget[0] <= 0 or (place.step == 1 and place.line in full)))  # no room
            or (place.line, place.x) in keep.barriers
            or value in keep
        ):
            out.append(value)
            continue
        axis, wall = axes[place.line], walls.get(place.line, [])
        at = bisect.bisect_left(wall, place.x)
        low = max(axis[0], wall[at - 1]) if at > 0 else axis[0]
        high = min(axis[-1], wall[at]) if at < len(wall) else axis[-1]
        span = high - low
        moved = _free(place, (low, high), (low + below * span, low + above * span), taken, rng, budget)
        if moved is None:
            out.append(value)
            continue
        taken.add((place.line, moved))
        out.append(place.write(moved))
    return out


_DRAWS = 8


def _free(
    place: Place,
    bounds: tuple[float, float],
    part: tuple[float, float],
    taken: set[Point],
    rng: random.Random,
    budget: list[int],
) -> float | None:
    """A point of `place`'s grid strictly between `bounds` that is not `taken`, drawn within `part` of
    them where it can be (else the free grid point nearest a draw, looking at most `budget[0]` points
    over the whole column: a range every point of which is taken costs no more), or None."""
    low, high = bounds
    step = place.step
    for _ in range(_DRAWS if budget[0] > 0 or not step else 0):
        x = rng.uniform(*part)
        x = round(x / step) * step if step else x
        if low < x < high and (place.line, x) not in taken:
            return x
    if not step:
        return None
    budget[0] -= _DRAWS  # draws that found nothing: the grid is crowded here
    first, last = math.floor(low / step) + 1, math.ceil(high / step) - 1
    if first > last:
        return None
    start = rng.randint(first, last)
    for k in range(last - first + 1):  # the grid outwards from a random start: the nearest free point
        if budget[0] <= 0:
            return None
        budget[0] -= 1
        for at in (start + k, start - k):
            if first <= at <= last and (place.line, at * step) not in taken:
                return at * step
    return None


_SCAN = 1 << 14  # grid points looked at per group and type, past the random draws
_SHORT = 0.5


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


def _measured(tables: Mapping[str, TableData], component: list[Column]) -> bool:
    """Whether a group holds a measure, a date or a time that most rows have their own (at least 3
    distinct values, one for every two rows): prices of a few products, call times of a few customers.
    Their floats, decimals, dates and times move like an identifying group's (a category keeps its
    domain: few values, each shared by many rows)."""
    for table, index in component:
        stats = tables[table].stats(index)
        if stats.points and stats.distinct >= 3 and stats.distinct * 2 >= stats.filled:
            return True
    return False


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
