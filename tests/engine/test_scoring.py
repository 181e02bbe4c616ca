"""The one pipeline: validation, ordering, deadlines that kill workers, crashes that stay per item."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from assay_test_plugins import PLUGINS

import assay
from assay.engine.scoring import Engine
from assay.errors import QueueFullError
from assay.settings import Settings
from assay.types import Status

MATH_OK = {"task": "math", "response": "so the answer is \\boxed{\\frac12}", "reference": "0.5"}


def test_results_come_back_in_item_order_with_ids(make_settings: Callable[..., Settings]) -> None:
    items = [
        {"id": "a", **MATH_OK},
        {"id": "b", "task": "math", "response": "\\boxed{3}", "reference": "4"},
        {"id": 3, "task": "nope"},
    ]
    with Engine(make_settings()) as engine:
        results = engine.score(items)
    assert [r.id for r in results] == ["a", "b", "3"]
    assert [r.status for r in results] == [Status.OK, Status.OK, Status.INVALID]
    assert [r.reward for r in results] == [1.0, 0.0, None]
    assert all(r.elapsed_ms >= 0 for r in results)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ([1, 2], "must be a JSON object"),
        ("text", "must be a JSON object"),
        ({"response": "x"}, 'missing field "task"'),
        ({"task": "math", "refrence": "1"}, 'unknown field "refrence" (did you mean "reference"?)'),
        ({"task": "maths"}, 'unknown task "maths" (did you mean "math"?)'),
        ({"task": "math", "options": {"rel_tl": 1}}, 'unknown option "rel_tl"'),
        (
            {"task": "math", "response": ["5"], "reference": "5"},
            "response",
        ),  # a number is its text (issue 31)
        ({"task": "math", "response": "1"}, "non-empty reference"),
    ],
)
def test_malformed_items_are_invalid_with_a_reason(
    make_settings: Callable[..., Settings], raw: object, reason: str
) -> None:
    with Engine(make_settings()) as engine:
        (result,) = engine.score([raw])
    assert result.status is Status.INVALID
    assert result.reward is None
    assert reason in result.reason


def test_a_worker_past_its_deadline_is_killed_and_the_next_item_is_served(
    make_settings: Callable[..., Settings],
) -> None:
    with Engine(make_settings(workers=1, deadline_s=0.5)) as engine:
        hung, after = engine.score([{"task": "hang"}, MATH_OK])
        assert hung.status is Status.TIMEOUT and hung.reward is None
        assert "deadline" in hung.reason
        assert after.status is Status.OK and after.correct is True
        assert engine.worker_restarts == 1
        assert b'assay_worker_restarts_total{cause="timeout"} 1.0' in engine.metrics.render()


def test_a_math_tower_is_a_timeout_not_a_wrong_answer(make_settings: Callable[..., Settings]) -> None:
    tower = {"task": "math", "response": "$9^{9^{9^{9}}}$", "reference": "9^{9^{9^{9}}}"}
    with Engine(make_settings(workers=1, math={"deadline_s": 1.0})) as engine:
        result, after = engine.score([tower, MATH_OK])
    # Either a verdict (if the verifier can decide cheaply) or our timeout; never an error or a hang.
    assert result.status in {Status.OK, Status.TIMEOUT}
    if result.status is Status.OK:
        assert result.correct is True
    assert after.status is Status.OK


def test_a_crashed_worker_is_an_error_and_the_pool_keeps_serving(
    make_settings: Callable[..., Settings],
) -> None:
    with Engine(make_settings(workers=1)) as engine:
        crashed, after = engine.score([{"task": "crash"}, MATH_OK])
        assert crashed.status is Status.ERROR and "died" in crashed.reason
        assert after.status is Status.OK


def test_a_scorer_exception_is_an_error_for_that_item_only(make_settings: Callable[..., Settings]) -> None:
    with Engine(make_settings()) as engine:
        buggy, fine = engine.score([{"task": "buggy"}, MATH_OK])
    assert buggy.status is Status.ERROR and "ZeroDivisionError" in buggy.reason
    assert fine.status is Status.OK


def test_thread_and_async_scorers_get_deadlines(make_settings: Callable[..., Settings]) -> None:
    with Engine(make_settings()) as engine:
        slow_thread, slow_async, fast_async = engine.score(
            [{"task": "slow_thread"}, {"task": "slow_async"}, {"task": "slow_async", "response": "fast"}]
        )
    assert slow_thread.status is Status.TIMEOUT
    assert slow_async.status is Status.TIMEOUT
    assert fast_async.status is Status.OK and fast_async.reward == 0.25 and fast_async.correct is None


def test_admission_is_bounded(make_settings: Callable[..., Settings]) -> None:
    with Engine(make_settings(queue_size=3)) as engine:
        engine.admit(2)
        with pytest.raises(QueueFullError, match="queue full"):
            engine.admit(2)
        engine.release(2)
        engine.admit(3)
        assert engine.pending == 3


def test_score_async_runs_on_the_callers_loop(make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    gate = tmp_path / "open"
    gate.touch()
    item = {"task": "gate", "response": "x", "reference": "x", "options": {"gate": str(gate)}}

    async def run(engine: Engine) -> list[assay.Result]:
        return await engine.score_async([item, item])

    with Engine(make_settings()) as engine:
        results = asyncio.run(run(engine))
    assert [r.correct for r in results] == [True, True]


def test_the_library_entry_point_scores_in_process() -> None:
    settings = Settings(workers=1)
    (result,) = assay.score([MATH_OK], settings=settings)
    assert result.status is Status.OK and result.correct is True
    assert result.extracted is not None


def test_a_cancelled_batch_frees_its_worker_and_its_queue(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    held = {"task": "gate", "response": "x", "reference": "x", "options": {"gate": str(tmp_path / "never")}}

    async def run(engine: Engine) -> assay.Result:
        batch = asyncio.ensure_future(engine.score_async([held] * 3))
        for _ in range(2000):  # bounded: until the first item holds the only worker
            await asyncio.sleep(0.005)  # sleep-ok: yields to the loop while polling
            if engine._runner.gates("workers").waiting == 2:
                break
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch
        assert engine._runner.gates("workers").waiting == 0
        (result,) = await asyncio.wait_for(engine.score_async([MATH_OK]), 30)
        return result

    with Engine(make_settings(workers=1, deadline_s=120.0)) as engine:
        result = asyncio.run(run(engine))
    assert result.status is Status.OK and result.correct is True


def test_a_wait_for_a_worker_is_bounded_and_reported_as_a_wait(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    held = {"task": "gate", "response": "x", "reference": "x", "options": {"gate": str(gate)}}

    async def run(engine: Engine) -> list[assay.Result]:
        batch = asyncio.ensure_future(engine.score_async([held, MATH_OK]))
        seen = []
        for _ in range(6000):  # bounded: until the math item queued and then gave up its wait
            await asyncio.sleep(0.005)  # sleep-ok: yields to the loop while polling
            seen.append(engine._runner.gates("workers").waiting)
            if 1 in seen and seen[-1] == 0:
                break
        gate.touch()
        return await batch

    with Engine(make_settings(workers=1, deadline_s=120.0, wait_s=0.3)) as engine:
        first, second = asyncio.run(run(engine))
    assert first.status is Status.OK
    assert second.status is Status.TIMEOUT and second.details["cause"] == "slot_wait"
    assert "ASSAY_WAIT_S" in second.reason


def test_a_reviewer_sees_its_tasks_verdicts_and_its_failures_never_lose_one(
    make_settings: Callable[..., Settings],
) -> None:
    items = [
        {"task": "math", "response": "\\boxed{4}", "reference": "4"},
        {"task": "math", "response": "boom \\boxed{3}", "reference": "4"},
        {"task": "math", "response": "stall \\boxed{4}", "reference": "4"},
        {"task": "overstay", "response": "x"},
    ]
    settings = make_settings(plugins=[*PLUGINS, "assay_test_plugins:MathReviewer"])
    with Engine(settings) as engine:
        seen, broke, stalled, other = engine.score(items)
    assert (seen.correct, seen.details["seen_by"]) == (True, "math_reviewer")
    assert (broke.correct, broke.reward) == (False, 0.0)  # the verdict as the rules gave it
    assert broke.details["review"] == {
        "by": "math_reviewer", "status": "error", "reason": "RuntimeError: the reviewer broke"
    }  # fmt: skip
    assert (stalled.correct, stalled.details["review"]["status"]) == (True, "timeout")
    assert "0.3s" in stalled.details["review"]["reason"]
    assert "review" not in other.details and "seen_by" not in other.details  # not a task it reviews


def test_elapsed_ms_is_the_items_own_work_not_its_wait_for_a_thread(
    make_settings: Callable[..., Settings],
) -> None:
    """Issue 43 item 4: with one scoring thread, the quick item waits 0.3 s behind the held one; its
    `elapsed_ms` is its own work, as the held one's is its 0.3 s."""
    settings = make_settings(threads=1, plugins=[*PLUGINS, "assay_test_plugins:HeldThreadScorer"])
    with Engine(settings) as engine:
        held, quick = engine.score(
            [{"task": "held_thread", "response": "hold"}, {"task": "held_thread", "response": "quick"}]
        )
    assert held.status is Status.OK and quick.status is Status.OK
    assert held.elapsed_ms >= 300.0
    assert quick.elapsed_ms < held.elapsed_ms / 3  # it waited ~300 ms; it worked microseconds


def test_elapsed_ms_leaves_out_the_worker_pool_starting(make_settings: Callable[..., Settings]) -> None:
    """In process the first item waits for the pool to start (sympy warmed: seconds); that is not its
    scoring time (it was: 5-14 s reported for `\\boxed{42}`)."""
    import time

    with Engine(make_settings(workers=1)) as engine:
        started = time.perf_counter()
        [result] = engine.score([MATH_OK])
        wall_ms = (time.perf_counter() - started) * 1000.0
    assert result.status is Status.OK and result.reward == 1.0
    assert 0 < result.elapsed_ms < wall_ms / 10


def test_a_scorer_bug_with_no_message_is_placed_not_named_bare(
    make_settings: Callable[..., Settings],
) -> None:
    """Issue 43 item 10: a reason ended on ": RuntimeError: " for an exception raised with no message; it
    now says where it was raised, in a worker and in a thread alike."""
    bare = ["assay_test_plugins:BareBugScorer", "assay_test_plugins:BareBugThreadScorer"]
    with Engine(make_settings(plugins=[*PLUGINS, *bare])) as engine:
        in_worker, in_thread = engine.score([{"task": "bare_bug"}, {"task": "bare_bug_thread"}])
    for result in (in_worker, in_thread):
        assert result.status is Status.ERROR
        assert re.fullmatch(
            r"scorer failed: RuntimeError at assay_test_plugins\.py:\d+, no message", result.reason
        )
