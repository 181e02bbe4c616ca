"""An item's deadline that measures the judge's own time, not the item's wait for a request slot.

Why: the client allows `concurrency` requests in flight; with 80 items on a slow but healthy backend,
49-53 of them spent their whole deadline queued for a slot and ended `timeout`. The clock is paused
while every request of the item waits for a slot and none is running, and the deadline moves out by
that pause. Waiting has its own bound (`judge.wait_s`, enforced by the pipeline's outer deadline).

The clock travels in a context variable, so the client finds the item's clock in whichever task of the
item (both orders, every ensemble vote) makes the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Iterator

_CURRENT: contextvars.ContextVar[ItemClock | None] = contextvars.ContextVar("assay_judge_clock", default=None)


class ItemClock:
    def __init__(self, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        self.waited_s = 0.0
        self._waiting = 0
        self._running = 0
        self._paused_at: float | None = None
        self._timeout: asyncio.Timeout | None = None
        self._left: float | None = None

    @contextlib.asynccontextmanager
    async def running_item(self) -> AsyncIterator[None]:
        """Bound the item's body by the deadline (raises TimeoutError), paused while it only waits."""
        token = _CURRENT.set(self)
        try:
            async with asyncio.timeout(self.deadline_s) as self._timeout:
                yield
        finally:
            _CURRENT.reset(token)
            self._timeout = None

    def waiting(self) -> contextlib.AbstractContextManager[None]:
        return self._counted(waiting=1)

    def working(self) -> contextlib.AbstractContextManager[None]:
        return self._counted(running=1)

    @contextlib.contextmanager
    def _counted(self, waiting: int = 0, running: int = 0) -> Iterator[None]:
        """One more item waiting (or working) for the block's length."""
        self._change(waiting=waiting, running=running)
        try:
            yield
        finally:
            self._change(waiting=-waiting, running=-running)

    def _change(self, waiting: int = 0, running: int = 0) -> None:
        """Pause the deadline (no timer) while the item only waits; resume it with the time it had left."""
        self._waiting += waiting
        self._running += running
        paused = self._waiting > 0 and self._running == 0
        now = asyncio.get_running_loop().time()
        timer = self._timeout
        if paused and self._paused_at is None:
            self._paused_at = now
            when = timer.when() if timer is not None else None
            self._left = None if when is None else max(0.0, when - now)
            if timer is not None:
                timer.reschedule(None)
        elif not paused and self._paused_at is not None:
            self.waited_s += now - self._paused_at
            self._paused_at = None
            if timer is not None and self._left is not None:
                timer.reschedule(now + self._left)


def current_clock() -> ItemClock | None:
    """The clock of the item whose request this is, if any (None outside a judge item)."""
    return _CURRENT.get()


@contextlib.contextmanager
def waiting_for_slot() -> Iterator[None]:
    clock = current_clock()
    with clock.waiting() if clock is not None else contextlib.nullcontext():
        yield


@contextlib.contextmanager
def judging() -> Iterator[None]:
    clock = current_clock()
    with clock.working() if clock is not None else contextlib.nullcontext():
        yield
