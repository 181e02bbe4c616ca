"""Fixtures of the sandbox tests: one shared pool of two slots, and checks that the host stayed clean."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from assay_testing import bwrap_works
from sandbox_support import LIMITS, SETTINGS

from assay.sandbox import Executor, Limits, RunOutcome, TestInput, create_executor, lookup


@pytest.fixture(scope="session")
def executor() -> Iterator[Executor]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    ex = create_executor(SETTINGS)
    yield ex
    ex.pool.close()


@pytest.fixture
def run(executor: Executor) -> Callable[..., RunOutcome]:
    """Run one program on one input and return its outcome; asserts the host is clean afterwards."""

    def run_one(source: str, language: str = "python", stdin: bytes = b"", **limits: object) -> RunOutcome:
        lang = lookup(language)
        assert lang is not None
        chosen = Limits(**{**LIMITS.__dict__, **limits})
        execution = executor.execute(lang, source, [TestInput(stdin=stdin)], chosen)
        assert execution.compile_error is None, execution.compile_error
        assert execution.runs
        assert_host_clean(executor)
        return execution.runs[0]

    return run_one


def slot_tasks(executor: Executor) -> list[int]:
    """Tasks in the idle slots' pids cgroups: per slot, bwrap, its reaper and the warm runtime."""
    counts = []
    for slot in executor.pool._idle:  # the pool's own list: tests may look inside
        pids = slot.cgroup.pids  # type: ignore[attr-defined]
        if pids is not None:
            counts.append(len((pids / "cgroup.procs").read_text().split()))
    return counts


def assert_host_clean(executor: Executor) -> None:
    """No process survived its test, and the pool still answers a trivial program."""
    assert all(count <= 3 for count in slot_tasks(executor)), slot_tasks(executor)
    lang = lookup("python")
    assert lang is not None
    execution = executor.execute(lang, "print(6 * 7)", [TestInput()], LIMITS)
    assert execution.runs and execution.runs[0].stdout == b"42\n"
