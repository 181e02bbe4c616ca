"""Fair, bounded admission to a fixed number of execution slots (worker processes, sandboxes).

Why: items used to queue first-come first-served inside the pools, and an item's deadline ran while it
queued. One POST of 164 looping programs on 2 sandbox slots then lost most of its verdicts to the wait,
and a 1-item request sent next waited behind all of them (issue 12). Here:

- a request (one batch) has its own FIFO lane; a freed slot goes to the next lane in round-robin order,
  so concurrent requests share the slots and a small request is never stuck behind a large one;
- an item waits at most `wait_s` for its turn (`SlotWaitTimeout`, reported apart from a deadline), and
  its deadline starts only once it holds a slot;
- a waiter whose request was cancelled (the client went away) leaves its lane at once.

A gate lives on one event loop: it is not thread-safe, and every call comes from that loop.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import Hashable


class SlotWaitTimeout(Exception):
    """No slot came free within the item's wait bound; the item did not run."""

    def __init__(self, gate: str, waited_s: float) -> None:
        super().__init__(f"no {gate} slot came free within {waited_s:.3g}s")
        self.gate = gate
        self.waited_s = waited_s


class FairGate:
    """At most `size` holders at once; waiters are served round-robin across their lanes (requests)."""

    def __init__(self, name: str, size: int) -> None:
        if size <= 0:
            raise ValueError("a gate needs at least one slot")
        self.name = name
        self.size = size
        self._busy = 0
        self._lanes: OrderedDict[Hashable, deque[asyncio.Future[None]]] = OrderedDict()

    @property
    def busy(self) -> int:
        return self._busy

    @property
    def waiting(self) -> int:
        return sum(len(lane) for lane in self._lanes.values())

    async def acquire(self, lane: Hashable, wait_s: float) -> float:
        """Wait for a slot in `lane`'s turn; returns the seconds waited. Pair with `release()`."""
        if self._busy < self.size and not self._lanes:
            self._busy += 1
            return 0.0
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[None] = loop.create_future()
        self._lanes.setdefault(lane, deque()).append(turn)
        expiry = loop.call_later(wait_s, self._expire, lane, turn, wait_s)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled() and turn.exception() is None:
                self.release()  # the slot was handed over just as the waiter was cancelled
            else:
                self._forget(lane, turn)
                turn.cancel()
            raise
        finally:
            expiry.cancel()
        return time.monotonic() - started

    def release(self) -> None:
        """Give the slot to the next lane's first waiter (that lane moves to the back), or free it."""
        while self._lanes:
            lane, waiters = next(iter(self._lanes.items()))
            turn = waiters.popleft()
            if waiters:
                self._lanes.move_to_end(lane)
            else:
                del self._lanes[lane]
            if not turn.done():
                turn.set_result(None)  # the slot passes straight to this waiter: `_busy` is unchanged
                return
        self._busy -= 1

    def _expire(self, lane: Hashable, turn: asyncio.Future[None], wait_s: float) -> None:
        if not turn.done():
            self._forget(lane, turn)
            turn.set_exception(SlotWaitTimeout(self.name, wait_s))

    def _forget(self, lane: Hashable, turn: asyncio.Future[None]) -> None:
        waiters = self._lanes.get(lane)
        if waiters is None:
            return
        try:
            waiters.remove(turn)
        except ValueError:
            return
        if not waiters:
            del self._lanes[lane]
