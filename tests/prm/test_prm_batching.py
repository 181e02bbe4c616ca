"""Length-sorted batches under a token budget, and the micro-batcher thread (no model involved)."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.prm.batching import MicroBatcher, plan_batches


@given(st.lists(st.integers(1, 300), max_size=40), st.integers(1, 1000), st.integers(1, 8))
def test_plans_cover_every_item_once_and_respect_the_budget(
    lengths: list[int], budget: int, items: int
) -> None:
    batches = plan_batches(lengths, budget, items)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= items
        padded = len(batch) * max(lengths[i] for i in batch)
        assert padded <= budget or len(batch) == 1  # an item over the budget runs alone


def test_plans_group_similar_lengths() -> None:
    assert plan_batches([100, 5, 90, 6], max_tokens=200, max_items=8) == [[1, 3], [2, 0]]


class _Recorder:
    """A fake model: doubles numbers, records the batches it saw, can be held at a gate."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.gate = threading.Event()
        self.gate.set()

    def run(self, batch: list[int]) -> list[int]:
        self.gate.wait(30)
        self.batches.append(list(batch))
        return [2 * x for x in batch]


def _batcher(recorder: _Recorder, **overrides: float) -> MicroBatcher[int, int, int]:
    settings = {"max_tokens": 1000, "max_items": 4, "wait_s": 60.0, **overrides}
    return MicroBatcher(
        lambda: None,
        lambda job: job,
        lambda prepared: prepared,
        recorder.run,
        max_tokens=int(settings["max_tokens"]),
        max_items=int(settings["max_items"]),
        wait_s=settings["wait_s"],
    )


def test_jobs_submitted_together_share_one_batch_sorted_by_size() -> None:
    recorder = _Recorder()
    batcher = _batcher(recorder)
    try:
        futures = [batcher.submit(n) for n in (30, 10, 40, 20)]  # the 4th fills the round at once
        assert [f.result(30) for f in futures] == [60, 20, 80, 40]
    finally:
        batcher.close()
    assert recorder.batches == [[10, 20, 30, 40]]


def test_a_cancelled_job_is_skipped() -> None:
    recorder = _Recorder()
    recorder.gate.clear()
    batcher = _batcher(recorder, wait_s=0.0)
    try:
        first = batcher.submit(1)  # held at the gate inside run()
        second = batcher.submit(2)
        assert second.cancel()
        recorder.gate.set()
        assert first.result(30) == 2
    finally:
        batcher.close()
    assert [2] not in recorder.batches


def test_a_failing_setup_fails_every_job_with_its_error() -> None:
    def setup() -> None:
        raise RuntimeError("no model here")

    batcher: MicroBatcher[int, int, int] = MicroBatcher(
        setup, lambda j: j, lambda p: p, lambda b: b, max_tokens=10, max_items=2, wait_s=0.0
    )
    try:
        futures: list[Future[int]] = [batcher.submit(1), batcher.submit(2)]
        for future in futures:
            with pytest.raises(RuntimeError, match="no model here"):
                future.result(30)
    finally:
        batcher.close()


def test_a_failing_prepare_fails_only_its_job() -> None:
    def prepare(job: int) -> int:
        if job < 0:
            raise ValueError("negative")
        return job

    recorder = _Recorder()
    batcher: MicroBatcher[int, int, int] = MicroBatcher(
        lambda: None, prepare, lambda p: p, recorder.run, max_tokens=100, max_items=1, wait_s=60.0
    )
    try:
        bad, good = batcher.submit(-1), batcher.submit(3)
        with pytest.raises(ValueError, match="negative"):
            bad.result(30)
        assert good.result(30) == 6  # the failed job takes no room: the good one fills the round
    finally:
        batcher.close()
