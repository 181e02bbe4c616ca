"""Fair, bounded admission to a fixed number of execution slots (worker processes, sandboxes).

Why: items used to queue first-come first-served inside the pools, and an item's deadline ran while it
queued. One POST of 164 looping programs on 2 sandbox slots then lost most of its verdicts to the wait,
and a 1-item request sent next waited behind all of them (issue 12). Here:

- a request (one batch) has its own FIFO lane; a freed slot goes to the next lane in round-robin order,
  so concurrent requests share the slots and a small request is never stuck behind a large one;
- an item waits at most `wait_s` for its turn (`SlotWaitTimeout`, reported apart from a deadline), and
  its deadline starts only once it holds a slot;
- a waiter whose request was cancelled (the client went away) leaves its lane at once;
- a caller may also bound how many wait before it (`max_waiting`, /run_code's bound): one more is
  refused at once (`GateFull`), never queued.

The gate is the only queue in front of a resource: the sandbox pool behind it has no wait of its own,
so an item waits once and meets one kind of "busy" (issue 24). `Gates` holds one gate per kind of slot
("workers", "sandbox") per event loop.

A gate lives on one event loop: it is not thread-safe, and every call comes from that loop.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Hashable

from assay.settings import Settings
from assay.types import Result


class SlotWaitTimeout(Exception):
    """No slot came free within the item's wait bound; the item did not run."""

    def __init__(self, gate: str, waited_s: float) -> None:
        super().__init__(f"no {gate} slot came free within {waited_s:.3g}s")
        self.gate = gate
        self.waited_s = waited_s


class GateFull(SlotWaitTimeout):
    """Every slot is taken and as many callers as the caller allows already wait: refused at once."""

    def __init__(self, gate: str, waiting: int) -> None:
        Exception.__init__(self, f"every {gate} slot is taken and {waiting} callers already wait")
        self.gate = gate
        self.waited_s = 0.0
        self.waiting = waiting


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

    async def acquire(self, lane: Hashable, wait_s: float, max_waiting: int | None = None) -> float:
        """Wait for a slot in `lane`'s turn; returns the seconds waited. Pair with `release()`.

        With `max_waiting`, a caller that would wait behind that many others is refused (`GateFull`)."""
        if self._busy < self.size and not self._lanes:
            self._busy += 1
            return 0.0
        if max_waiting is not None and self.waiting >= max_waiting:
            raise GateFull(self.name, self.waiting)
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


# kind -> (the setting that bounds its wait, read from Settings, and that setting's variable name)
_WAIT_BOUNDS = {"sandbox": "ASSAY_CODE__WAIT_S", "workers": "ASSAY_WAIT_S"}


class Gates:
    """The gate of each kind of slot, one set per event loop (a gate's futures belong to one loop):
    "workers" (the math/sql process pool, `workers` slots) and "sandbox" (`code.slots`)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, FairGate]] = (
            weakref.WeakKeyDictionary()
        )

    def __call__(self, kind: str) -> FairGate:
        """The running loop's gate for `kind`."""
        gates = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        gate = gates.get(kind)
        if gate is None:
            size = self._settings.code.slots if kind == "sandbox" else self._settings.workers
            gate = gates[kind] = FairGate(kind, size)
        return gate

    def waiting(self, kind: str) -> int:
        """Callers waiting for a `kind` slot on any loop (a reading for tests and probes, from any thread)."""
        return sum(gates[kind].waiting for gates in list(self._by_loop.values()) if kind in gates)

    def wait_bound(self, kind: str) -> float:
        """How long an item may wait for a `kind` slot by default."""
        return self._settings.code.wait_s if kind == "sandbox" else self._settings.wait_s

    @staticmethod
    def waited_too_long(exc: SlotWaitTimeout) -> Result:
        """An item's answer when it never got a slot: `timeout`, naming the setting that bounds it."""
        setting = _WAIT_BOUNDS.get(exc.gate, "ASSAY_WAIT_S")
        return Result.timeout(
            f"not run: no {exc.gate} slot came free within {exc.waited_s:g}s ({setting})",
            details={"cause": "slot_wait", "waited_s": round(exc.waited_s, 3)},
        )
