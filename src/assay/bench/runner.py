"""Run Assay and the baselines over the same rows, one verifier after the other.

Assay goes through `assay.engine.scoring.Engine`, the real pipeline (worker pool, deadlines), in chunks so a
progress bar can move; its latency is the engine's per-item `elapsed_ms`. Baselines run one item at a
time in the calling (main) thread: math-verify's SIGALRM timeouts work only there (its issues #11, #50), and
it is how verl's default reward manager calls them. A baseline that raises is an `error` for that item
(a `TimeoutError` is a `timeout`); it never drops the row. Plugin baselines get no deadline of ours.
A row that could not become an item is `invalid` for every verifier without being run.

Before timing, each verifier scores the first valid row once (Assay: once per worker) and the answer is
thrown away: imports and worker start-up (about a second each for sympy and math-verify) would
otherwise land in the first items' latency and make p99 a measure of start-up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from assay.bench.dataset import Row
from assay.engine.scoring import Engine
from assay.types import Result, Status

ASSAY = "assay"


@dataclass(frozen=True)
class Outcome:
    """What one verifier said about one row. `accepted` is set exactly when `status` is ok."""

    status: str  # ok, invalid, timeout, error (assay.types.Status values)
    accepted: bool | None
    elapsed_ms: float
    reason: str = ""
    extracted: str | None = None


@dataclass(frozen=True)
class Run:
    verifier: str
    outcomes: list[Outcome]
    wall_s: float  # wall time of the whole pass over the rows (throughput = rows / wall_s)


Progress = Callable[[str, int], Any]  # (verifier name, total) -> a tqdm-like object with update/close


class _NoBar:
    def update(self, n: int = 1) -> None: ...

    def close(self) -> None: ...


def _bar(progress: Progress | None, name: str, total: int) -> Any:
    return progress(name, total) if progress is not None else _NoBar()


def _from_result(result: Result) -> Outcome:
    if result.status is not Status.OK:
        return Outcome(result.status.value, None, result.elapsed_ms, result.reason, result.extracted)
    # Graded tasks leave `correct` null: a reward of at least 0.5 counts as an accept.
    accepted = result.correct if result.correct is not None else (result.reward or 0.0) >= 0.5
    return Outcome("ok", accepted, result.elapsed_ms, result.reason, result.extracted)


def run_assay(rows: Sequence[Row], engine: Engine, progress: Progress | None = None, chunk: int = 64) -> Run:
    """Score every valid row through the engine; problem rows are `invalid` without a call."""
    outcomes: dict[int, Outcome] = {
        row.index: Outcome("invalid", None, 0.0, row.problem) for row in rows if row.problem
    }
    valid = [row for row in rows if not row.problem]
    if valid:
        engine.score([valid[0].item] * engine.settings.workers)
    bar = _bar(progress, ASSAY, len(rows))
    bar.update(len(outcomes))
    started = time.perf_counter()
    for start in range(0, len(valid), chunk):
        part = valid[start : start + chunk]
        for row, result in zip(part, engine.score([row.item for row in part]), strict=True):
            outcomes[row.index] = _from_result(result)
        bar.update(len(part))
    wall_s = time.perf_counter() - started
    bar.close()
    return Run(ASSAY, [outcomes[row.index] for row in rows], wall_s)


def call_baseline(baseline: Callable[[dict[str, Any]], Any], item: dict[str, Any]) -> Outcome:
    """One call, timed; exceptions and non-boolean answers become statuses with the reason."""
    started = time.perf_counter()
    try:
        value = baseline(dict(item))
    except TimeoutError as exc:
        return Outcome("timeout", None, _ms(started), f"TimeoutError: {exc}")
    except Exception as exc:
        return Outcome("error", None, _ms(started), f"{type(exc).__name__}: {exc}")
    elapsed = _ms(started)
    # verl-style scorers return 0.0/1.0; anything else is not a verdict we can read.
    if isinstance(value, bool) or (isinstance(value, int | float) and value in (0, 1)):
        return Outcome("ok", bool(value), elapsed)
    return Outcome("error", None, elapsed, f"returned {value!r}, not a bool")


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


def run_baseline(
    name: str,
    baseline: Callable[[dict[str, Any]], Any],
    rows: Sequence[Row],
    progress: Progress | None = None,
) -> Run:
    """Call the baseline on every valid row in this thread; problem rows are `invalid`."""
    first = next((row for row in rows if not row.problem), None)
    if first is not None:
        call_baseline(baseline, first.item)
    outcomes = []
    bar = _bar(progress, name, len(rows))
    started = time.perf_counter()
    for row in rows:
        if row.problem:
            outcomes.append(Outcome("invalid", None, 0.0, row.problem))
        else:
            outcomes.append(call_baseline(baseline, row.item))
        bar.update(1)
    wall_s = time.perf_counter() - started
    bar.close()
    return Run(name, outcomes, wall_s)
