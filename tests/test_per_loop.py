"""PerLoop: one value per event loop, reused on its loop, closed on its own loop, dropped with its loop."""

from __future__ import annotations

import asyncio
import threading

from assay.per_loop import PerLoop


class Thing:
    def __init__(self) -> None:
        self.closed_on: asyncio.AbstractEventLoop | None = None

    async def aclose(self) -> None:
        self.closed_on = asyncio.get_running_loop()


def holder() -> tuple[PerLoop[Thing], list[Thing]]:
    made: list[Thing] = []

    def make() -> Thing:
        made.append(Thing())
        return made[-1]

    return PerLoop(make, Thing.aclose), made


def test_one_value_per_loop_reused_within_it() -> None:
    values, made = holder()

    async def twice() -> tuple[Thing, Thing]:
        return values.get(), values.get()

    first, again = asyncio.run(twice())
    assert first is again
    second, _ = asyncio.run(twice())
    assert second is not first and len(made) == 2


def test_close_runs_each_close_on_the_loop_that_made_the_value() -> None:
    values, made = holder()
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.run_forever()

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        ready.wait(5)
        asyncio.run_coroutine_threadsafe(_get(values), loop).result(5)
        idle = asyncio.new_event_loop()
        idle.run_until_complete(_get(values))  # a loop that is not running when close() is called
        values.close()
        assert made[0].closed_on is loop and made[1].closed_on is idle
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
        idle.close()


def test_values_of_closed_loops_are_dropped_not_closed() -> None:
    values, made = holder()
    asyncio.run(_get(values))  # its loop closes when run() returns
    asyncio.run(_get(values))
    values.close()
    assert len(made) == 2
    assert made[0].closed_on is None  # nothing can close it: its loop is gone


def test_aclose_closes_the_running_loops_value_only() -> None:
    values, made = holder()

    async def use_and_close() -> None:
        values.get()
        await values.aclose()

    asyncio.run(use_and_close())
    assert made[0].closed_on is not None


async def _get(values: PerLoop[Thing]) -> Thing:
    return values.get()
