"""What a group's queries gave, so each distinct query runs at most once per database (issue 42).

The sql task's answer equivalence (equivalence.py) compares the results of a group's queries on the same
databases: the group's instance, its alternates, the perturbed copies. Within one clustering call a
query's outcome on one database is a fact (the databases are read-only and a perturbed copy, once built,
does not change), so the call's `QueryMemo` runs each (database, query) once, and first asks `Recorded`:
what the worker's own scoring ran. Clusters form in the worker task that just scored the group's items,
so there the members' results on the database and on the reference's copies are all recorded, and the
clustering runs nothing.

What is kept: results, and the errors that come from the query itself (it failed, was refused, or passed
the row or size cap). Not a timeout or running out of memory, which depend on the moment: that query
runs again. The memo keeps no result of more than `max_rows` rows, nor past `row_budget` rows in all (it
runs again), so a call's memory stays bounded; `Recorded` keeps results of up to 1 MiB (about:
engines.value_size), 32 MiB a worker, least recently used dropped first. Scoring never reads what it
recorded: it runs every query afresh, so a query whose result changes from one run to the next
(`random()`, the clock) is scored as before, and clustered by the result scoring saw.

Databases are told apart by the engine object: a perturbed copy rebuilt after its cache evicted it is
another object, and the queries run on it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from cachetools import LRUCache

from assay.verifiers.sql.engines import (
    OUT_OF_MEMORY,
    TIMEOUT,
    QueryError,
    QueryLimits,
    QueryResult,
    SqlEngine,
    value_size,
)

Run = Callable[[SqlEngine, str, QueryLimits], QueryResult]  # how the scorer runs a query on a database

_MAX_ROWS = 10_000  # as the scorer's gold cache: longer results run again
_ROW_BUDGET = 200_000


Outcome = QueryResult | QueryError


def _kept(exc: QueryError) -> bool:
    """An error the query causes itself (kept), not one of the moment (a timeout, memory: not kept)."""
    return exc.kind != TIMEOUT and exc.message != OUT_OF_MEMORY


class Recorded:
    """What one worker's scoring ran, per (database, query text): results of at most `max_bytes` (about:
    engines.value_size), least recently used dropped first past `byte_budget` in all. Scoring runs every
    query afresh and only writes here; a clustering call reads."""

    def __init__(self, max_bytes: int = 1 << 20, byte_budget: int = 32 << 20) -> None:
        self._max_bytes = max_bytes
        self._outcomes: LRUCache[tuple[SqlEngine, str], tuple[Outcome, int]] = LRUCache(
            maxsize=byte_budget, getsizeof=lambda kept: kept[1]
        )

    def run(self, engine: SqlEngine, sql: str, limits: QueryLimits) -> QueryResult:
        """`engine.run(sql, limits)`, its outcome recorded."""
        try:
            result = engine.run(sql, limits)
        except QueryError as exc:
            if _kept(exc):
                self._outcomes[(engine, sql)] = (exc, 256)
            raise
        size = 256 + sum(8 + sum(value_size(v) for v in row) for row in result.rows)
        if size <= self._max_bytes:
            self._outcomes[(engine, sql)] = (result, size)
        return result

    def get(self, engine: SqlEngine, sql: str) -> Outcome | None:
        kept = self._outcomes.get((engine, sql))
        return kept[0] if kept is not None else None


class QueryMemo:
    """Query outcomes per (database, query text), for one clustering call; `recorded`: the worker's
    scoring's outcomes, read before running a query."""

    def __init__(
        self, max_rows: int = _MAX_ROWS, row_budget: int = _ROW_BUDGET, recorded: Recorded | None = None
    ) -> None:
        self._outcomes: dict[tuple[SqlEngine, str], Outcome] = {}
        self._max_rows, self._rows_left = max_rows, row_budget
        self._recorded = recorded

    def run(self, engine: SqlEngine, sql: str, limits: QueryLimits) -> QueryResult:
        """`engine.run(sql, limits)`, or what it gave the first time in this call (or in the worker's
        scoring, when recorded)."""
        key = (engine, sql)
        kept = self._outcomes.get(key)
        if kept is None and self._recorded is not None:
            kept = self._recorded.get(engine, sql)
        if isinstance(kept, QueryError):
            raise kept
        if kept is not None:
            return kept
        try:
            result = engine.run(sql, limits)
        except QueryError as exc:
            if _kept(exc):
                self._outcomes[key] = exc
            raise
        if len(result.rows) <= min(self._max_rows, self._rows_left):
            self._rows_left -= len(result.rows)
            self._outcomes[key] = result
        return result


class Budget:
    """The item's deadline split into query timeouts, so the engine stops a query before the pool kills;
    `run` runs each query (scoring's records what it ran; a clustering call's reads that first: memo.py)."""

    def __init__(self, deadline_s: float, query_timeout_s: float, run: Run) -> None:
        self.end = time.monotonic() + deadline_s - min(0.5, deadline_s * 0.1)
        self.query_timeout_s = query_timeout_s
        self.run = run

    def timeout(self) -> tuple[float, bool]:
        """(seconds for the next query, whether the item deadline cut it below query_timeout_s)."""
        remaining = self.end - time.monotonic()
        return max(0.01, min(self.query_timeout_s, remaining)), remaining < self.query_timeout_s


def plain_run(engine: SqlEngine, sql: str, limits: QueryLimits) -> QueryResult:
    """Running a query without a memo (scoring one item)."""
    return engine.run(sql, limits)
