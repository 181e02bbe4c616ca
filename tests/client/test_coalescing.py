"""Concurrent small calls merged into batches (assay.client.coalescing): each caller gets its own results in
order, a failed batch fails each of its callers with that error, a cancelled caller drops out alone,
and nothing waits longer than the window."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.client.coalescing import Coalescer


class Recorder:
    def __init__(self, fail: BaseException | None = None) -> None:
        self.batches: list[list[int]] = []
        self.fail = fail
        self.release = asyncio.Event()
        self.release.set()

    async def send(self, items: list[int]) -> list[str]:
        self.batches.append(items)
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        return [f"r{i}" for i in items]


@given(
    st.lists(st.lists(st.integers(0, 10**6), min_size=1, max_size=5), min_size=1, max_size=60),
    st.sampled_from([0.001, None]),
)
def test_every_caller_gets_its_own_results_in_order(calls: list[list[int]], window_s: float | None) -> None:
    async def main() -> tuple[list[list[str]], Recorder]:
        recorder = Recorder()
        coalescer = Coalescer(recorder.send, window_s=window_s, max_items=16, in_flight=2)
        answers = await asyncio.gather(*(coalescer.submit(c) for c in calls))
        return answers, recorder

    answers, recorder = asyncio.run(main())
    assert answers == [[f"r{i}" for i in c] for c in calls]
    assert all(len(b) <= 16 for b in recorder.batches)
    assert sum(len(b) for b in recorder.batches) == sum(len(c) for c in calls)


def test_two_thousand_single_calls_go_out_as_full_batches() -> None:
    async def main() -> Recorder:
        recorder = Recorder()
        coalescer = Coalescer(recorder.send, window_s=0.005, max_items=250)
        await asyncio.gather(*(coalescer.submit([i]) for i in range(2000)))
        return recorder

    recorder = asyncio.run(main())
    assert [len(b) for b in recorder.batches] == [250] * 8


def test_opportunistic_calls_go_alone_while_room_then_in_full_batches() -> None:
    """window_s=None: the first call goes at once; the 1,999 that arrive while it is out fill batches,
    and the last partial batch goes when the first comes back (no window, no timer)."""

    async def main() -> Recorder:
        recorder = Recorder()
        coalescer = Coalescer(recorder.send, window_s=None, max_items=250, in_flight=1)
        answers = await asyncio.gather(*(coalescer.submit([i]) for i in range(2000)))
        assert answers == [[f"r{i}"] for i in range(2000)]
        return recorder

    recorder = asyncio.run(main())
    assert [len(b) for b in recorder.batches] == [1, *[250] * 7, 249]


def test_a_failed_batch_fails_each_of_its_callers_with_that_error() -> None:
    async def main() -> list[BaseException | list[str]]:
        coalescer = Coalescer(Recorder(fail=RuntimeError("server gone")).send, window_s=0.001, max_items=8)
        return await asyncio.gather(*(coalescer.submit([i]) for i in range(3)), return_exceptions=True)

    outcomes = asyncio.run(main())
    assert all(isinstance(o, RuntimeError) and str(o) == "server gone" for o in outcomes)


def test_a_cancelled_caller_drops_out_and_the_rest_are_answered() -> None:
    async def main() -> tuple[list[str], list[list[int]]]:
        recorder = Recorder()
        coalescer = Coalescer(recorder.send, window_s=10.0, max_items=3)
        doomed = asyncio.ensure_future(coalescer.submit([1]))
        await asyncio.sleep(0)  # it is pending in the window
        doomed.cancel()
        first, second = await asyncio.gather(coalescer.submit([2]), coalescer.submit([3, 4]))
        return first + second, recorder.batches

    answered, batches = asyncio.run(main())
    assert answered == ["r2", "r3", "r4"] and batches == [[2, 3, 4]]


def test_a_lone_call_waits_only_for_the_window() -> None:
    async def main() -> float:
        coalescer = Coalescer(Recorder().send, window_s=0.05, max_items=1000)
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.wait_for(coalescer.submit([1]), timeout=5)
        return loop.time() - start

    assert asyncio.run(main()) >= 0.05


def test_a_call_that_fills_a_batch_is_sent_at_once_as_it_is() -> None:
    async def main() -> list[list[int]]:
        recorder = Recorder()
        coalescer = Coalescer(recorder.send, window_s=60.0, max_items=4)
        await asyncio.wait_for(coalescer.submit([1, 2, 3, 4, 5]), timeout=5)
        return recorder.batches

    assert asyncio.run(main()) == [[1, 2, 3, 4, 5]]


def test_drain_sends_what_is_pending() -> None:
    async def main() -> list[str]:
        coalescer = Coalescer(Recorder().send, window_s=60.0, max_items=100)
        pending = asyncio.ensure_future(coalescer.submit([7]))
        await asyncio.sleep(0)
        await coalescer.drain()
        return await pending

    assert asyncio.run(main()) == ["r7"]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        Coalescer(Recorder().send, window_s=-1, max_items=4)


def test_a_batch_whose_callers_all_left_is_cancelled() -> None:
    async def main() -> bool:
        recorder = Recorder()
        recorder.release.clear()  # the send never finishes on its own
        coalescer = Coalescer(recorder.send, window_s=0.0, max_items=8)
        callers = [asyncio.ensure_future(coalescer.submit([i])) for i in range(2)]
        while not recorder.batches:
            await asyncio.sleep(0)
        (delivery,) = coalescer._deliveries
        for caller in callers:
            caller.cancel()
        await asyncio.gather(*callers, return_exceptions=True)
        await asyncio.gather(delivery, return_exceptions=True)
        return delivery.cancelled()

    assert asyncio.run(asyncio.wait_for(main(), 10))


def test_cancel_stops_pending_calls_and_batches_in_flight() -> None:
    async def main() -> list[Any]:
        recorder = Recorder()
        recorder.release.clear()
        coalescer = Coalescer(recorder.send, window_s=60.0, max_items=3)
        in_flight = asyncio.ensure_future(coalescer.submit([1, 2]))
        filler = asyncio.ensure_future(coalescer.submit([3]))  # fills the batch: it is sent, stuck in send
        while not recorder.batches:
            await asyncio.sleep(0)
        pending = asyncio.ensure_future(coalescer.submit([4]))  # waits for the window
        await asyncio.sleep(0)
        await coalescer.cancel()
        return await asyncio.gather(in_flight, filler, pending, return_exceptions=True)

    outcomes = asyncio.run(asyncio.wait_for(main(), 10))
    assert all(isinstance(o, asyncio.CancelledError) for o in outcomes)
