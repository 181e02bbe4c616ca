"""Perturbed in-memory copies of a database on the same engine, queried under the same guards (issue 28).

`snapshot` reads a database's tables through the engine's own guarded `run` (so reading is as bounded
as any query: deadline, row and byte caps), at most `max_rows` rows per table and `max_cells` values in
all; a table past `max_rows` is copied in part (its first rows: a deletion like any other), and when
the tables the check needs hold more than `max_cells` values the check is skipped and says so, rather
than copying a large database per item. `scratch_engine` builds an in-memory database of the same engine
from perturbed rows (perturb.py) and returns an engine that runs queries on it exactly as on the
original: SQLite with `query_only` and the read-only authorizer, DuckDB with external access disabled
and only SELECT statements, PostgreSQL as temporary tables in a session of the scorer's own (pgscratch.py
says why that and not the original perturbed in place).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

from assay.verifiers.sql.engines import (
    DuckdbEngine,
    EngineUnavailable,
    QueryLimits,
    SqlEngine,
    SqliteEngine,
    _duckdb,
)
from assay.verifiers.sql.perturb import Row, Snapshot, TableData, quote
from assay.verifiers.sql.postgres import PostgresEngine

_INSERT_CELLS = 900  # DuckDB inserts a multi-row VALUES about six times faster than executemany


class CopyTooLarge(Exception):
    """The tables the check needs are larger than the copy may be: the check is skipped, not failed."""


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def snapshot(
    engine: SqlEngine, wanted: set[str] | None, limits: QueryLimits, max_rows: int, max_cells: int
) -> Snapshot:
    """The tables in `wanted` (None: every table), within the budget; views are recreated as they are
    (one over a table not copied fails on the copy, and a query that reads it is not judged there)."""
    if isinstance(engine, SqliteEngine):
        listing = _sqlite_tables(engine, limits)
    elif isinstance(engine, DuckdbEngine):
        listing = _duckdb_tables(engine, limits)
    elif isinstance(engine, PostgresEngine):
        from assay.verifiers.sql.pgscratch import list_relations

        listing = list_relations(engine, limits)
    else:
        raise CopyTooLarge(f"no perturbed copy on {engine.kind}")
    snap = Snapshot(
        views=listing.views,
        skipped=listing.skipped,
        catalog=listing.catalog,
        schemas=listing.schemas,
        qualified_views=listing.qualified_views,
    )
    wanted_lower = {name.lower() for name in wanted} if wanted is not None else None
    if wanted_lower is not None and not wanted_lower <= {name.lower() for name in listing.tables}:
        wanted_lower = None  # a view (its tables are not named in the query) or an unknown name
    order = list(listing.tables.values())
    cells = 0
    for table in order:
        needed = wanted_lower is None or table.name.lower() in wanted_lower
        if not needed:
            snap.skipped.append(table.name)
            continue
        columns = ", ".join(quote(c) for c in table.insert_columns)
        source = table.source or quote(table.name)
        result = engine.run(f"SELECT {columns} FROM {source} LIMIT {max_rows + 1}", limits)
        table.rows = result.rows[:max_rows]
        table.complete = len(result.rows) <= max_rows
        cells += len(table.rows) * max(1, len(table.insert_columns))
        if cells > max_cells:
            raise CopyTooLarge(f"the tables the queries read hold more than {max_cells} values")
        snap.tables[table.name] = table
    return snap


def _sqlite_tables(engine: SqliteEngine, limits: QueryLimits) -> Snapshot:
    listing = Snapshot()
    schema = engine.run(
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
        "AND type IN ('table', 'view') AND sql IS NOT NULL ORDER BY rowid",
        limits,
    )
    for kind, name, sql in schema.rows:
        if kind == "view":
            listing.views.append(sql)
        elif sql.lstrip().upper().startswith("CREATE VIRTUAL"):
            listing.skipped.append(name)
        else:
            info = engine.run(f"PRAGMA table_xinfo({quote(name)})", limits)
            plain = [row[1] for row in info.rows if row[-1] in (0, 1)]  # 2, 3: generated columns
            listing.tables[name] = TableData(name, plain, [], create=sql, insert_columns=plain)
    return listing


def _duckdb_tables(engine: DuckdbEngine, limits: QueryLimits) -> Snapshot:
    listing = Snapshot(catalog=engine.run("SELECT current_database()", limits).rows[0][0])
    where = "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal"
    tables = engine.run(f"SELECT table_name FROM duckdb_tables() {where} AND NOT temporary", limits)
    for (name,) in tables.rows:
        described = engine.run(
            f"SELECT column_name, data_type FROM duckdb_columns() {where} AND table_name = {_literal(name)} "
            "ORDER BY column_index",
            limits,
        )
        columns = [column for column, _ in described.rows]
        create = f"CREATE TABLE {quote(name)} ({', '.join(f'{quote(c)} {t}' for c, t in described.rows)})"
        types = [kind for _, kind in described.rows]
        listing.tables[name] = TableData(
            name, columns, [], create=create, insert_columns=columns, types=types
        )
    views = engine.run(f"SELECT sql FROM duckdb_views() {where} AND NOT temporary ORDER BY view_oid", limits)
    listing.views = [sql for (sql,) in views.rows if sql]
    return listing


def scratch_engine(
    source: SqlEngine, snap: Snapshot, rows: dict[str, list[Row]], timeout_s: float = 30.0
) -> SqlEngine:
    """An engine over a copy holding `rows`; EngineUnavailable when it cannot be built (`timeout_s`:
    PostgreSQL's limit on each statement that builds it)."""
    if isinstance(source, PostgresEngine):
        from assay.verifiers.sql.pgscratch import ScratchPostgres

        pg = ScratchPostgres(source.dsn, snap, rows, connect_timeout_s=source._connect_timeout)
        pg.build(timeout_s)
        return pg
    if isinstance(source, SqliteEngine):
        engine: SqlEngine = _ScratchSqlite(snap, rows, heap_limit_mb=source._heap_limit >> 20)
    elif isinstance(source, DuckdbEngine):
        engine = _ScratchDuckdb(snap, rows, memory_limit_mb=source._memory_limit_mb)
    else:
        raise EngineUnavailable(f"no perturbed copy on {source.kind}")
    engine.build()  # type: ignore[attr-defined]
    return engine


def _insert(table: TableData, marker: str) -> str:
    columns = ", ".join(quote(c) for c in table.insert_columns)
    marks = ", ".join([marker] * len(table.insert_columns))
    return f"INSERT INTO {quote(table.name)} ({columns}) VALUES ({marks})"


class _ScratchSqlite(SqliteEngine):
    def __init__(self, snap: Snapshot, rows: dict[str, list[Row]], heap_limit_mb: int) -> None:
        super().__init__(Path(":memory:"), heap_limit_mb=heap_limit_mb)
        self._snap, self._rows = snap, rows

    def _open(self) -> sqlite3.Connection:
        con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        con.execute("PRAGMA ignore_check_constraints = 1")  # a relabelled row may break a CHECK
        con.execute("BEGIN")
        for name, table in self._snap.tables.items():
            con.execute(table.create)
            if table.insert_columns:
                con.executemany(_insert(table, "?"), self._rows[name])
        con.execute("COMMIT")
        for view in self._snap.views:
            with contextlib.suppress(sqlite3.Error):  # a view over a table left out: reading it fails
                con.execute(view)
        return con

    def build(self) -> None:
        try:
            self._con = self._connect()
        except sqlite3.Error as exc:
            raise EngineUnavailable(f"cannot build the perturbed copy: {exc}") from exc


class _ScratchDuckdb(DuckdbEngine):
    def __init__(self, snap: Snapshot, rows: dict[str, list[Row]], memory_limit_mb: int) -> None:
        super().__init__(Path(":memory:"), memory_limit_mb=memory_limit_mb)
        self._snap, self._rows = snap, rows

    def _connect(self) -> Any:
        duckdb = _duckdb()
        try:
            con = duckdb.connect(":memory:", config=self._config())
            if self._snap.catalog and self._snap.catalog != "memory":  # `school.students` still resolves
                con.execute(f"ATTACH ':memory:' AS {quote(self._snap.catalog)}")
                con.execute(f"USE {quote(self._snap.catalog)}")
            for name, table in self._snap.tables.items():
                con.execute(table.create)
                _insert_chunked(con, table, self._rows[name])
            for view in self._snap.views:
                with contextlib.suppress(duckdb.Error):  # as for SQLite
                    con.execute(view)
        except duckdb.Error as exc:
            raise EngineUnavailable(f"cannot build the perturbed copy: {exc}") from exc
        return con

    def build(self) -> None:
        self._con = self._connect()


def _insert_chunked(con: Any, table: TableData, rows: list[Row]) -> None:
    """Insert column-wise, one list parameter per column (about five times faster than multi-row
    VALUES, which is about six times faster than executemany); multi-row VALUES where a type does not
    cast as a list."""
    duckdb = _duckdb()
    width = len(table.insert_columns)
    if not width or not rows:
        return
    columns = ", ".join(quote(c) for c in table.insert_columns)
    into = f"INSERT INTO {quote(table.name)} ({columns}) "
    if len(table.types) == width:
        unnest = ", ".join(f"UNNEST(?::{kind}[])" for kind in table.types)
        try:
            con.execute(into + f"SELECT {unnest}", [list(col) for col in zip(*rows, strict=True)])
            return
        except duckdb.Error:
            con.execute(f"DELETE FROM {quote(table.name)}")
    per = max(1, _INSERT_CELLS // width)
    mark = "(" + ", ".join(["?"] * width) + ")"
    for start in range(0, len(rows), per):
        chunk = rows[start : start + per]
        con.execute(into + "VALUES " + ", ".join([mark] * len(chunk)), [v for row in chunk for v in row])
