"""Our own failures are `error`, never a reward of 0: a slot killed mid-test, overload, a hung runtime."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest
from assay_testing import bwrap_works
from sandbox_support import LIMITS

from assay.sandbox import SandboxError, TestInput, lookup
from assay.sandbox.bwrap import BwrapSlot
from assay.settings import CodeSettings, Settings
from assay.types import Item, Status
from assay.verifiers.code import CodeOptions, CodeScorer


@pytest.fixture
def scorer() -> Iterator[CodeScorer]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    code = CodeSettings(slots=1, tmpfs_mb=32, processes=32, deadline_s=30)
    instance = CodeScorer(Settings(code=code))
    yield instance
    instance.close()


def _item(source: str) -> Item:
    return Item(task="code", response=source, tests=[{"stdin": "", "stdout": "1"}])


def test_slot_killed_mid_test_is_an_error_and_the_slot_is_replaced(scorer: CodeScorer) -> None:
    pool = scorer.executor.pool
    assert scorer.score(_item("print(1)"), CodeOptions()).reward == 1.0
    (slot,) = pool._idle
    assert isinstance(slot, BwrapSlot)
    results = []
    program = "import time\ntime.sleep(60)"  # sleep-ok: the sandboxed program
    worker = threading.Thread(target=lambda: results.append(scorer.score(_item(program), CodeOptions())))
    worker.start()
    deadline = time.monotonic() + 30
    while pool.busy == 0 or len((slot.cgroup.pids / "cgroup.procs").read_text().split()) < 4:  # type: ignore[operator]
        assert time.monotonic() < deadline, "the test program never started"
        time.sleep(0.01)  # sleep-ok: bounded polling for a state change
    slot.cgroup.kill_all()  # the whole sandbox dies, runtime included, as in a crash
    worker.join(30)
    (result,) = results
    assert result.status is Status.ERROR and result.reward is None
    assert scorer.score(_item("print(1)"), CodeOptions()).reward == 1.0
    assert pool.recycled >= 1


def test_overload_is_an_error_not_a_hang(scorer: CodeScorer) -> None:
    with scorer.executor.pool.slot():
        result = scorer.score(_item("print(1)"), CodeOptions())
    assert result.status is Status.ERROR and "busy" in result.reason


def test_executor_refuses_a_caller_beyond_its_slots(scorer: CodeScorer) -> None:
    python = lookup("python")
    assert python is not None
    with scorer.executor.pool.slot(), pytest.raises(SandboxError, match="busy"):
        scorer.executor.execute(python, "print(1)", [TestInput()], LIMITS)


def test_hung_runtime_is_killed_at_the_host_deadline(scorer: CodeScorer) -> None:
    with pytest.raises(SandboxError), scorer.executor.pool.slot() as slot:
        assert isinstance(slot, BwrapSlot) and slot.cgroup.pids is not None
        for pid in (slot.cgroup.pids / "cgroup.procs").read_text().split():
            os.kill(int(pid), signal.SIGSTOP)  # the runtime never answers
        started = time.monotonic()
        try:
            slot.exchange({"op": "ping"}, [], timeout=0.5)
        finally:
            assert time.monotonic() - started < 10
    assert not slot.alive
    assert scorer.score(_item("print(1)"), CodeOptions()).reward == 1.0
