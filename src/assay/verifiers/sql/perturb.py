"""A perturbed copy of a database's data, to tell a query that computes its answer from one that does not.

A prediction that returns the gold's rows as literals (`SELECT 'Dana', 25`, `SELECT 40 FROM t LIMIT 1`,
a CASE on a count) matches the gold on the database it was written against; on data it was not written
against it keeps its answer while the gold's changes. This module makes such data from the rows of the
tables the gold reads, deterministically from a seed (issue 28):

- rows are deleted (about a third of each table the gold reads, never all of them), which moves counts,
  sums and which entities exist;
- values are relabelled by a bijection per column (the distinct values of a column shuffled among
  themselves), which moves maxima, averages, groupings and which row holds which value.

What the perturbation keeps, so that a correct query stays correct (it is compared with the gold on the
copy, and must agree): every column's domain (no value appears that was not there; a `status IN ('open',
'shipped')` that equals `status <> 'returned'` still does), NULLs (never added or removed: `NOT IN` and
`COUNT(col)` behave as before), uniqueness of single and composite keys (a bijection is injective, a
deletion removes rows), functional dependencies, and references between tables: a column whose values
all occur in another column whose values are distinct is taken as a reference to it (declared or not);
both share one bijection, and a row whose reference lost its target is deleted too (cascade), so inner
joins and "no join" stay equivalent. What it does not keep: order relations between values of
different columns (`start <= end`) and arithmetic identities between columns (`total = price * qty`); a
query equivalent to the gold only through those is judged on the copy like any other.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from assay.verifiers.sql.compare import canon

Row = tuple[Any, ...]
Column = tuple[str, int]  # (table, column index)
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


def perturb(
    tables: Mapping[str, TableData],
    targets: Iterable[str],
    seed: str,
    links: list[tuple[Column, Column]] | None = None,
) -> dict[str, list[Row]]:
    """New rows for every table: `targets` (the tables the gold reads) perturbed, the others only where
    a reference cascades into them. Deterministic in `seed` and the data. `links`: `references(tables)`
    when the caller kept it from an earlier round."""
    targets = {name for name in targets if name in tables}
    rows = {name: list(table.rows) for name, table in tables.items()}
    links = references(tables) if links is None else links
    for name in sorted(targets):
        rows[name] = _delete(rows[name], random.Random(f"{seed}:delete:{name}"))
    _cascade(rows, links)
    columns = {
        name: [list(col) for col in zip(*table_rows, strict=True)] for name, table_rows in rows.items()
    }
    for component in _components(tables, links):
        if any(table in targets for table, _ in component):
            rng = random.Random(f"{seed}:relabel:{sorted(component)[0]}")
            _relabel(columns, component, rng)
    return {name: list(zip(*cols, strict=True)) if cols else rows[name] for name, cols in columns.items()}


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


def _relabel(columns: dict[str, list[list[Any]]], component: list[Column], rng: random.Random) -> None:
    """Shuffle the distinct values of a group of columns among themselves (within each Python type, so
    an integer column stays integer), and apply that one mapping to every column of the group."""
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
        for old, new in zip(keys, shuffled, strict=True):
            mapping[(kind, old)] = values[new]
    for table, index in component:
        if columns[table]:
            columns[table][index] = [
                None if v is None else mapping[(type(v).__name__, _key(v))] for v in columns[table][index]
            ]


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
