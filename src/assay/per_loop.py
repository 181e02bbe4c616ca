"""One value per event loop, for async HTTP clients: an httpx.AsyncClient (and the semaphores beside it)
belongs to the loop it was made on, while a scorer is called from several loops (the API's, a worker
thread's, a test's). The judge and the PRM's vLLM backend both hold their clients here, so there is one
rule for making, reusing and closing them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Generic, TypeVar

T = TypeVar("T")
CLOSE_WAIT_S = 5.0  # a wedged loop must not hang shutdown


class PerLoop(Generic[T]):
    """`get()` returns the running loop's value, made by `make` on first use; values of closed loops are
    dropped (their sockets went with the loop). `close_one` closes a value on its own loop."""

    def __init__(self, make: Callable[[], T], close_one: Callable[[T], Coroutine[Any, Any, None]]) -> None:
        self._make = make
        self._close_one = close_one
        self._values: dict[asyncio.AbstractEventLoop, T] = {}

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        value = self._values.get(loop)
        if value is None:
            for stale in [other for other in self._values if other.is_closed()]:
                del self._values[stale]
            value = self._values[loop] = self._make()
        return value

    async def aclose(self) -> None:
        """Close the running loop's value (for async code that owns the loop, before it ends)."""
        value = self._values.pop(asyncio.get_running_loop(), None)
        if value is not None:
            await self._close_one(value)

    def close(self) -> None:
        """Close every value on its own loop. Called from inside a running loop, that loop's value is
        closed by a task, which only finishes if the loop keeps running: async owners `aclose()` first."""
        for loop, value in list(self._values.items()):
            del self._values[loop]
            if loop.is_closed():
                continue
            if not loop.is_running():
                loop.run_until_complete(self._close_one(value))
            elif _running_loop() is loop:
                loop.create_task(self._close_one(value))
            else:
                with contextlib.suppress(FutureTimeout):
                    asyncio.run_coroutine_threadsafe(self._close_one(value), loop).result(CLOSE_WAIT_S)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
