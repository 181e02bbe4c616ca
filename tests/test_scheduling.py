"""FairGate: round-robin across lanes, a bounded wait reported as such, cancelled waiters leave."""

from __future__ import annotations

import asyncio

import pytest

from assay.scheduling import FairGate, SlotWaitTimeout


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
