"""What one clustering call's queries gave, so each distinct query runs once per database (issue 42).

The sql task's answer equivalence scores each pair of distinct queries twice, each as the other's gold
(`MutualVerdicts`). Scored one pair at a time, a query met in several pairs ran again on the same
database every time (as the prediction on the group's database and its alternates, as the gold there,
the gold's tie-recovering rewrites), and sqlglot read it again. Within one call a query's outcome on one
database is a fact: the databases are read-only and a perturbed copy, once built, does not change. So the
scorer, given a memo, asks it instead of the engine, and compares what it returns with its own code: the
verdicts are those of scoring the pairs one by one.

What is kept: results, and the errors that come from the query itself (it failed, was refused, or passed
the row or size cap). Not a timeout or running out of memory, which depend on the moment: that query
runs again, as it did before. A result of more than `max_rows` rows, or past `row_budget` rows kept in
all, is not kept either (it runs again), so a call's memory stays bounded. A query whose result changes
from one run to the next (`random()`, the clock) gets its first result every time.

Databases are told apart by the engine object: a perturbed copy rebuilt after its cache evicted it is
another object, and the queries run on it again.

`Recorded` keeps what the worker's scoring ran (every query, on every database and copy), so a group's
clustering, formed in the worker that just scored its items, reads the members' results instead of
running them again: what is kept and what is not follows the memo's rules, within a byte budget per
worker (results of up to 1 MiB, 32 MiB in all).
"""

from __future__ import annotations

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
from assay.verifiers.sql.statement import Analysis

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
    """Query outcomes per (database, query text) and sqlglot readings per query, for one clustering call;
    `recorded`: the worker's scoring's outcomes, read before running a query."""

    def __init__(
        self, max_rows: int = _MAX_ROWS, row_budget: int = _ROW_BUDGET, recorded: Recorded | None = None
    ) -> None:
        self._outcomes: dict[tuple[SqlEngine, str], Outcome] = {}
        self._readings: dict[tuple[str, str, str | None], Analysis] = {}
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

    def reading(
        self, sql: str, dialect: str, source: str | None, analyse: Callable[[str, str, str | None], Analysis]
    ) -> Analysis:
        """`analyse(sql, dialect, source)`, read once per call (an Analysis is never modified)."""
        key = (sql, dialect, source)
        kept = self._readings.get(key)
        if kept is None:
            kept = self._readings[key] = analyse(sql, dialect, source)
        return kept


def plain_run(engine: SqlEngine, sql: str, limits: QueryLimits) -> QueryResult:
    """Running a query without a memo (scoring one item)."""
    return engine.run(sql, limits)
