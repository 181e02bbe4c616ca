"""FairGate: round-robin across lanes, a bounded wait reported as such, cancelled waiters leave."""

from __future__ import annotations

import asyncio

import pytest

from assay.engine.scheduling import FairGate, GateFull, Gates, SlotWaitTimeout


def test_slots_go_round_robin_across_lanes() -> None:
    async def run() -> list[str]:
        gate = FairGate("test", 1)
        order: list[str] = []
        await gate.acquire("holder", 5)

        async def item(lane: str, name: str) -> None:
            await gate.acquire(lane, 5)
            order.append(name)
            gate.release()

        big = [asyncio.create_task(item("big", f"big{i}")) for i in range(4)]
        await asyncio.sleep(0)  # sleep-ok: lets the big batch queue first (no wall-clock wait)
        small = asyncio.create_task(item("small", "small"))
        await asyncio.sleep(0)  # sleep-ok: the same, for the small request
        gate.release()
        await asyncio.gather(*big, small)
        return order

    assert asyncio.run(run()) == ["big0", "small", "big1", "big2", "big3"]


def test_a_wait_past_its_bound_is_a_slot_wait_timeout() -> None:
    async def run() -> None:
        gate = FairGate("sandbox", 1)
        await gate.acquire("a", 1)
        with pytest.raises(SlotWaitTimeout, match="no sandbox slot came free"):
            await gate.acquire("b", 0.05)
        assert gate.waiting == 0 and gate.busy == 1

    asyncio.run(run())


def test_a_cancelled_waiter_leaves_and_the_slot_is_not_lost() -> None:
    async def run() -> None:
        gate = FairGate("workers", 1)
        await gate.acquire("a", 1)
        waiter = asyncio.create_task(gate.acquire("b", 5))
        await asyncio.sleep(0)  # sleep-ok: lets the waiter queue (no wall-clock wait)
        assert gate.waiting == 1
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert gate.waiting == 0
        gate.release()
        assert gate.busy == 0
        assert await gate.acquire("c", 1) == 0.0

    asyncio.run(run())


def test_a_bounded_caller_is_refused_only_when_every_slot_is_taken_and_enough_wait() -> None:
    async def run() -> None:
        gate = FairGate("sandbox", 1)
        assert await gate.acquire("a", 1, max_waiting=0) == 0.0  # a free slot is never refused
        with pytest.raises(GateFull, match="every sandbox slot is taken and 0 callers already wait"):
            await gate.acquire("b", 1, max_waiting=0)
        waiter = asyncio.create_task(gate.acquire("c", 5))  # an unbounded caller still queues
        await asyncio.sleep(0)  # sleep-ok: lets the waiter queue (no wall-clock wait)
        with pytest.raises(GateFull):
            await gate.acquire("d", 1, max_waiting=1)
        assert gate.waiting == 1 and gate.busy == 1  # the refusals took no place and no slot
        gate.release()
        await waiter
        gate.release()
        assert gate.busy == 0

    asyncio.run(run())


def test_a_refusal_is_a_slot_wait_so_every_caller_reports_it_one_way() -> None:
    assert issubclass(GateFull, SlotWaitTimeout)
    result = Gates.waited_too_long(GateFull("sandbox", 3))
    assert result.status.value == "timeout" and result.details["cause"] == "slot_wait"
    assert "ASSAY_CODE__WAIT_S" in result.reason
