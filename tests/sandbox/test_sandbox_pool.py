"""The slot pool with fake slots: bounded waiting, overload errors, recycling. No sandbox needed."""

from __future__ import annotations

from typing import Any

import pytest

from assay.sandbox import Limits, RunOutcome, SandboxError, SlotPool


class FakeSlot:
    def __init__(self, name: str) -> None:
        self.name = name
        self.submissions = 0
        self.oom_seen = False
        self.closed = False
        self.wipes = 0

    @property
    def alive(self) -> bool:
        return not self.closed

    def write_files(self, files: dict[str, bytes], mode: int = 0o644) -> None:
        pass

    def run(
        self, request: dict[str, Any], stdin: bytes, limits: Limits, collect: str | None = None
    ) -> RunOutcome:
        return RunOutcome(exit_code=0, cpu_s=0.0, wall_s=0.0)

    def wipe(self) -> None:
        self.wipes += 1

    def close(self) -> None:
        self.closed = True


def make_pool(**kwargs: Any) -> tuple[SlotPool, list[FakeSlot]]:
    made: list[FakeSlot] = []

    def factory(name: str) -> FakeSlot:
        made.append(FakeSlot(name))
        return made[-1]

    return SlotPool(factory, **{"size": 1, **kwargs}), made  # type: ignore[arg-type]


def test_slots_start_lazily_and_are_reused_after_a_wipe() -> None:
    pool, made = make_pool()
    assert made == []
    for _ in range(3):
        with pool.slot():
            pass
    assert len(made) == 1 and made[0].wipes == 3


def test_the_pool_never_queues_a_caller_beyond_its_slots() -> None:
    # The engine's fair gate is the one wait for a slot (issue 24): a caller the gate did not admit is a
    # bug, refused at once rather than parked in a second queue.
    pool, made = make_pool(size=1)
    with pool.slot(), pytest.raises(SandboxError, match="busy"), pool.slot():
        pass
    with pool.slot():  # the refusal took nothing: the slot is free again and reused
        pass
    assert len(made) == 1 and pool.busy == 0


def test_crashed_slot_is_replaced() -> None:
    pool, made = make_pool()
    with pytest.raises(SandboxError), pool.slot():
        raise SandboxError("runtime died")
    with pool.slot():
        pass
    assert made[0].closed and len(made) == 2 and pool.recycled == 1


def test_oom_slot_is_replaced() -> None:
    pool, made = make_pool()
    with pool.slot() as slot:
        slot.oom_seen = True
    with pool.slot():
        pass
    assert made[0].closed and len(made) == 2


def test_slot_is_recycled_after_n_submissions() -> None:
    pool, made = make_pool(recycle_after=2)
    for _ in range(4):
        with pool.slot():
            pass
    assert len(made) == 2 and made[0].closed


def test_closed_pool_refuses_work() -> None:
    pool, made = make_pool()
    with pool.slot():
        pass
    pool.close()
    assert made[0].closed
    with pytest.raises(SandboxError), pool.slot():
        pass


def test_slot_that_died_while_idle_is_replaced() -> None:
    pool, made = make_pool()
    with pool.slot():
        pass
    made[0].closed = True  # as if killed from outside
    with pool.slot() as slot:
        assert slot is made[1]
    assert pool.recycled == 1
