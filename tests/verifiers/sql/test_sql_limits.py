"""Result caps enforced as rows arrive, and SQL workers under a memory limit (issue 28).

A worker held 1.9 GB while refusing 40 rows of 48 MB: the 64 MB cap was looked at every 512 rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from assay.engine.workers import WorkerPool
from assay.registry import Registry
from assay.settings import Settings, SqlSettings
from assay.types import Status
from assay.verifiers.sql.engines import TOO_LARGE, QueryError, QueryLimits, SqliteEngine, collect, value_size

MB = 1 << 20
HUGE_ROW = (b"x" * (12 * MB),) * 4  # 48 MB of values; one object shared, so the test itself stays small
# 40 rows of four 12 MB blobs, computed by SQLite as they are fetched.
HUGE_QUERY = (
    "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 40) "
    "SELECT tick(i), randomblob(12000000), randomblob(12000000), randomblob(12000000), "
    "randomblob(12000000) FROM c"
)


class CountingCursor:
    def __init__(self, rows: int) -> None:
        self.left = rows
        self.handed = 0

    def fetchmany(self, size: int) -> Sequence[tuple[Any, ...]]:
        count = min(size, self.left)
        self.left -= count
        self.handed += count
        return [HUGE_ROW] * count


def test_the_byte_cap_stops_the_fetch_at_the_row_that_passes_it() -> None:
    cursor = CountingCursor(40)
    with pytest.raises(QueryError) as raised:
        collect(cursor.fetchmany, QueryLimits(timeout_s=1, max_rows=100_000, max_bytes=64 * MB))
    assert raised.value.kind == TOO_LARGE
    assert cursor.handed == 2  # 48 MB, then 96 MB > 64 MB: the third row is never asked for


def test_small_rows_are_still_fetched_in_batches() -> None:
    sizes: list[int] = []
    rows = [(1, "ab")] * 2000

    def fetchmany(size: int) -> list[tuple[Any, ...]]:
        sizes.append(size)
        batch = rows[:size]
        del rows[:size]
        return batch

    assert len(collect(fetchmany, QueryLimits(timeout_s=1, max_rows=10_000, max_bytes=64 * MB))) == 2000
    assert sizes[0] == 1 and max(sizes) == 512


def test_nested_values_count_their_members() -> None:
    assert value_size(["x" * 1000, {"k": b"y" * 500}]) > 1500


def test_sqlite_computes_no_more_huge_rows_than_the_cap_needs(sql_dir: Path) -> None:
    engine = SqliteEngine(sql_dir / "school.sqlite", heap_limit_mb=1024, max_value_bytes=16 * MB)
    computed: list[int] = []
    engine.run("SELECT 1", QueryLimits(timeout_s=5, max_rows=10, max_bytes=MB))  # opens the connection
    assert engine._con is not None
    engine._con.create_function("tick", 1, lambda i: computed.append(i) or i)
    with pytest.raises(QueryError) as raised:
        engine.run(HUGE_QUERY, QueryLimits(timeout_s=30, max_rows=100_000, max_bytes=64 * MB))
    engine.close()
    assert raised.value.kind == TOO_LARGE
    assert len(computed) <= 3, computed  # was: all 40 rows (1.9 GB) before the cap was checked


@pytest.mark.slow
def test_a_query_past_the_worker_memory_limit_is_a_wrong_answer_and_the_pool_serves_on(
    sql_dir: Path,
) -> None:
    # The engines' own caps are lifted so that only the worker's address-space limit can stop it.
    sql = SqlSettings(
        databases=sql_dir, memory_limit_mb=8192, max_result_mb=8192, query_timeout_s=60, deadline_s=120
    )
    settings = Settings(workers=1, worker_memory_mb=1536, sql=sql)
    pool = WorkerPool(settings, Registry.from_settings(settings))
    gold = "SELECT name FROM students WHERE age > 20"
    greedy = (
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 400) "
        "SELECT randomblob(10000000) FROM c"
    )

    async def run(response: str) -> Any:
        item = {"task": "sql", "db_id": "school", "reference": gold, "response": response}
        return await pool.run("sql", item, {}, deadline_s=120)

    try:
        hog = asyncio.run(run(greedy))
        after = asyncio.run(run(gold))
    finally:
        pool.close(wait=False)
    assert hog.status is Status.OK and hog.reward == 0.0, hog.reason
    assert "ran out of memory" in hog.reason
    assert after.status is Status.OK and after.reward == 1.0, after.reason
    assert pool.restarts == 0  # the worker refused the allocation; it was not killed


@pytest.mark.parametrize("megabytes", [1, 512, 1023])
def test_a_worker_memory_limit_too_small_to_start_is_refused_with_a_reason(megabytes: int) -> None:
    with pytest.raises(ValueError, match="worker_memory_mb must be 0"):
        Settings(worker_memory_mb=megabytes)
    assert Settings(worker_memory_mb=0).worker_memory_mb == 0
