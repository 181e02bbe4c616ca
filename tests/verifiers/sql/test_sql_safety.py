"""Safety at the engine level, with the static sqlglot filter bypassed, and runaway queries in the pipeline.

Every dangerous statement of the dev set goes straight to each engine: writes must be refused, runaway
reads must stop at the deadline or the row cap, and the database files must stay byte-identical.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from sql_helpers import escaped_files, file_hashes, load_cases

from assay.engine.scoring import Engine
from assay.settings import Settings, SqlSettings
from assay.types import Status
from assay.verifiers.sql.engines import (
    REFUSED,
    TIMEOUT,
    TOO_LARGE,
    DuckdbEngine,
    QueryError,
    QueryLimits,
    SqlEngine,
    SqliteEngine,
)
from assay.verifiers.sql.statement import extract_sql

DANGER = [case for case in load_cases() if case["category"] == "danger"]
RUNAWAY_NOTES = ("recursive CTE", "cartesian")  # reads that are only dangerous by size or time
LIMITS = QueryLimits(timeout_s=1.0, max_rows=10_000, max_bytes=8 << 20)
EXTRA = {
    "sqlite": [
        "SELECT * FROM pragma_table_info('students')",  # harmless, but the authorizer is an allow-list
        "REINDEX students",
        "DETACH DATABASE main",
        "SAVEPOINT s1",
        "SELECT replace(hex(zeroblob(100000000)), '0', 'ab')",  # a value over SQLITE_LIMIT_LENGTH
    ],
    "duckdb": [
        "SET enable_external_access = true",
        "INSTALL httpfs",
        "LOAD json",
        "CHECKPOINT",
        "EXPORT DATABASE '/tmp/assay_sql_danger_export'",
        "SELECT * FROM read_text('/etc/hostname')",
        "CREATE TEMP TABLE t AS SELECT 1",
    ],
}


def open_engine(kind: str, directory: Path) -> SqlEngine:
    if kind == "sqlite":
        return SqliteEngine(directory / "school.sqlite")
    return DuckdbEngine(directory / "school.duckdb")


@pytest.fixture(params=["sqlite", "duckdb"])
def engine(request: pytest.FixtureRequest, sql_dir: Path) -> SqlEngine:
    built = open_engine(request.param, sql_dir)
    request.addfinalizer(built.close)
    return built


@pytest.mark.parametrize("case", DANGER, ids=[case["note"] for case in DANGER])
def test_dangerous_statement_changes_nothing(case: dict[str, str], engine: SqlEngine, sql_dir: Path) -> None:
    sql = extract_sql(case["response"])
    assert sql is not None
    before = file_hashes(sql_dir), escaped_files()
    runaway = case["note"].startswith(RUNAWAY_NOTES)
    try:
        engine.run(sql, LIMITS)
    except QueryError as exc:
        assert not runaway or exc.kind in {TIMEOUT, TOO_LARGE}, exc.message
    else:
        # Only a bounded read may complete (DuckDB counts a 4-way cartesian product within the second).
        assert runaway and engine.kind == "duckdb" and "COUNT" in sql
    assert (file_hashes(sql_dir), escaped_files()) == before


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
def test_engine_specific_escapes_are_refused(kind: str, sql_dir: Path) -> None:
    engine = open_engine(kind, sql_dir)
    before = file_hashes(sql_dir), escaped_files()
    try:
        for sql in EXTRA[kind]:
            with pytest.raises(QueryError):
                engine.run(sql, LIMITS)
            assert engine.run("SELECT COUNT(*) FROM students", LIMITS).rows == [(40,)]  # still usable
    finally:
        engine.close()
    assert (file_hashes(sql_dir), escaped_files()) == before


BIG_SORT = (
    "SELECT COUNT(*) FROM (SELECT a.score, b.score, c.term FROM enrollments a, enrollments b, enrollments c "
    "ORDER BY a.score || b.score || c.term LIMIT 10000000) t"
)


@pytest.mark.parametrize("spill", [False, True])
def test_duckdb_never_spills_next_to_the_database(spill: bool, sql_dir: Path, tmp_path: Path) -> None:
    # A copy: DuckDB refuses a second configuration for a file another test already opened.
    (tmp_path / "db").mkdir()
    shutil.copy(sql_dir / "school.duckdb", tmp_path / "db" / "school.duckdb")
    spill_dir = tmp_path / "spill" if spill else None
    engine = DuckdbEngine(tmp_path / "db" / "school.duckdb", memory_limit_mb=20, spill_dir=spill_dir)
    before = file_hashes(tmp_path / "db")
    limits = QueryLimits(timeout_s=60.0, max_rows=10, max_bytes=1 << 20)
    try:
        if spill:
            assert engine.run(BIG_SORT, limits).rows == [(160**3,)]
        else:
            with pytest.raises(QueryError) as caught:
                engine.run(BIG_SORT, limits)
            assert caught.value.kind == TOO_LARGE
    finally:
        engine.close()
    assert file_hashes(tmp_path / "db") == before


def test_second_statement_is_refused_by_the_engine(engine: SqlEngine) -> None:
    with pytest.raises(QueryError) as caught:
        engine.run("SELECT 1; DELETE FROM students", LIMITS)
    assert caught.value.kind == REFUSED


def test_runaway_query_is_interrupted_and_the_connection_stays_usable(engine: SqlEngine) -> None:
    with pytest.raises(QueryError) as caught:
        engine.run(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c", LIMITS
        )
    assert caught.value.kind == TIMEOUT
    assert engine.run("SELECT COUNT(*) FROM courses", LIMITS).rows == [(10,)]


def test_result_over_the_row_cap_is_too_large_not_truncated(engine: SqlEngine) -> None:
    with pytest.raises(QueryError) as caught:
        engine.run("SELECT a.id FROM students a, students b, students c", LIMITS)
    assert caught.value.kind == TOO_LARGE


def _descendants() -> dict[int, str]:
    """pid -> state letter of every process below this one (pool workers and their forkserver)."""
    parents: dict[int, int] = {}
    states: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            parents[int(entry.name)], states[int(entry.name)] = int(fields[1]), fields[0]
    found: dict[int, str] = {}
    frontier = [os.getpid()]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found[child] = states[child]
                frontier.append(child)
    return found


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
def test_runaway_item_frees_its_worker_without_a_kill(kind: str, sql_dir: Path) -> None:
    settings = Settings(workers=1, sql=SqlSettings(databases=sql_dir, query_timeout_s=1.0, deadline_s=5.0))
    runaway = (
        "```sql\nWITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c\n```"
    )
    on = {"engine": kind}
    items = [
        {"task": "sql", "db_id": "school", "reference": "SELECT 1", "response": runaway, "options": on},
        {
            "task": "sql",
            "db_id": "school",
            "reference": "SELECT 40",
            "response": "SELECT COUNT(*) FROM students",
            "options": on,
        },
    ]
    with Engine(settings) as pipeline:
        first, second = pipeline.score(items)
        assert first.status is Status.OK and first.correct is False and "timeout" in first.reason
        assert second.status is Status.OK and second.correct is True  # served by the same worker
        assert pipeline.worker_restarts == 0  # the engine stopped the query; no kill was needed
        busy = _descendants()
        until = time.monotonic() + 5.0
        while "R" in busy.values() and time.monotonic() < until:  # bounded polling for an idle pool
            threading.Event().wait(0.05)
            busy = _descendants()
        assert "R" not in busy.values(), f"a process is still running: {busy}"


def test_item_deadline_shorter_than_the_query_limit_is_a_timeout(sql_dir: Path) -> None:
    settings = Settings(workers=1, sql=SqlSettings(databases=sql_dir, query_timeout_s=30.0, deadline_s=1.5))
    runaway = (
        "```sql\nWITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c\n```"
    )
    items = [
        {"task": "sql", "db_id": "school", "reference": "SELECT 1", "response": runaway},
        {"task": "sql", "db_id": "school", "reference": "SELECT 1", "response": "SELECT 1"},
    ]
    with Engine(settings) as pipeline:
        first, second = pipeline.score(items)
    assert first.status is Status.TIMEOUT and first.reward is None  # our deadline, never a reward of 0
    assert second.status is Status.OK and second.correct is True
