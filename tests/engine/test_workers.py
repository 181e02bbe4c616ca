"""The worker pool never waits forever for a task no worker takes.

pebble starts a task's timeout only when a worker takes it, and a task handed to a pool in the instant
the pool broke (its forkserver and with it every worker killed) is neither taken nor failed: without an
outer bound the item, and the request holding it, waited forever. These tests hand the pool such a
lost task (a future nothing will ever complete) in place of pebble's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from typing import Any

import pytest

from assay.engine import workers
from assay.engine.workers import WorkerPool
from assay.registry import Registry
from assay.settings import Settings
from assay.types import Result, Status

ITEM = {"task": "math", "response": "\\boxed{4}", "reference": "4"}


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[WorkerPool]:
    monkeypatch.setattr(workers, "_START_GRACE_S", 0.5)
    settings = Settings(workers=1)
    pool = WorkerPool(settings, Registry.from_settings(settings))
    yield pool
    pool.close(wait=False)


def _bounded(run: Coroutine[Any, Any, Result]) -> Result:
    """The run, or TimeoutError well before pytest's own limit (the bug was a wait without end)."""
    return asyncio.run(asyncio.wait_for(run, 60))


def _lose_the_first_task(pool: WorkerPool, monkeypatch: pytest.MonkeyPatch, pool_state: str) -> None:
    """The first task handed over is lost; its pool is then "broken" (pebble no longer runs it),
    "replaced" (another item's hand-over already swapped in a fresh pool) or "healthy"."""
    real = pool._schedule
    lost: list[Future[Any]] = []

    def schedule(*args: Any) -> Future[Any]:
        if lost:
            return real(*args)
        lost.append(Future())
        pool._pool_of[lost[0]] = pool._pool
        if pool_state in ("broken", "replaced"):
            pool._pool.stop()
        if pool_state == "replaced":
            pool._pool = pool._new_pool()
        return lost[0]

    monkeypatch.setattr(pool, "_schedule", schedule)


@pytest.mark.parametrize(("pool_state", "restarts"), [("broken", 1), ("replaced", 0)])
def test_a_task_lost_in_a_broken_pool_is_sent_again_to_a_fresh_one(
    pool: WorkerPool, monkeypatch: pytest.MonkeyPatch, pool_state: str, restarts: int
) -> None:
    _lose_the_first_task(pool, monkeypatch, pool_state)
    result = _bounded(pool.run("math", ITEM, {}, deadline_s=5.0))
    assert (result.status, result.correct) == (Status.OK, True)
    assert pool.restarts == restarts  # a replacement is counted where it happens


def test_a_task_no_worker_takes_ends_as_timeout_not_a_hang(
    pool: WorkerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lose_the_first_task(pool, monkeypatch, "healthy")
    result = _bounded(pool.run("math", ITEM, {}, deadline_s=0.5))
    assert result.status is Status.TIMEOUT
    assert "no worker took the item within 1s" in result.reason
    assert pool.restarts == 0  # the pool was not broken: it stays
