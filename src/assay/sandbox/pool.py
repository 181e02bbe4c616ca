"""A bounded pool of long-lived sandbox slots with a bounded wait queue.

Slots start lazily. A submission holds one slot for all its tests (so it compiles once). Afterwards the
slot is wiped (its /tmp emptied) and reused, or closed and replaced when it crashed, saw an OOM kill, or
served `recycle_after` submissions. When every slot is busy, at most `max_waiting` callers wait; one more
gets `SandboxBusy` at once (the HTTP layer answers 429), and a waiter gives up after `wait_s`: overload is
an error, never a hang.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterator

from assay.sandbox.base import SandboxBusy, SandboxError, Slot

log = logging.getLogger("assay.sandbox")
_pool_ids = itertools.count()


class SlotPool:
    def __init__(
        self,
        factory: Callable[[str], Slot],
        size: int,
        max_waiting: int,
        recycle_after: int = 200,
        wait_s: float = 60.0,
        on_close: Callable[[str], None] | None = None,
    ) -> None:
        self._on_close = on_close
        self._factory = factory
        self.size = size
        self.max_waiting = max_waiting
        self.recycle_after = recycle_after
        self.wait_s = wait_s
        self.prefix = f"pool-{os.getpid()}-{next(_pool_ids)}"
        self._names = itertools.count()
        self._idle: list[Slot] = []
        self._busy = 0
        self._waiting = 0
        self._cond = threading.Condition()
        self._closed = False
        self.recycled = 0

    @property
    def busy(self) -> int:
        return self._busy

    @property
    def waiting(self) -> int:
        return self._waiting

    def _take(self) -> Slot | None:
        """Reserve a slot under the lock: a live idle one, or None meaning "start a new one"."""
        self._busy += 1
        while self._idle:
            slot = self._idle.pop()
            if slot.alive:
                return slot
            self.recycled += 1
            slot.close()  # died while idle (killed from outside): replace it
        return None

    @contextlib.contextmanager
    def slot(self, wait_s: float | None = None) -> Iterator[Slot]:
        """Hold one slot for a submission; raises SandboxBusy when overloaded."""
        wait_s = self.wait_s if wait_s is None else min(wait_s, self.wait_s)
        with self._cond:
            if self._closed:
                raise SandboxError("sandbox pool is closed")
            if not self._idle and self._busy >= self.size:
                if self._waiting >= self.max_waiting:
                    raise SandboxBusy(f"all {self.size} sandbox slots busy and {self._waiting} waiting")
                self._waiting += 1
                try:
                    ok = self._cond.wait_for(lambda: self._idle or self._busy < self.size, wait_s)
                finally:
                    self._waiting -= 1
                if not ok:
                    raise SandboxBusy(f"no sandbox slot free within {wait_s:g}s")
            slot = self._take()
        healthy = False
        try:
            if slot is None:
                slot = self._factory(f"{self.prefix}/slot-{next(self._names)}")
            yield slot
            healthy = True
        finally:
            self._give_back(slot, healthy)

    def _give_back(self, slot: Slot | None, healthy: bool) -> None:
        keep = False
        if slot is not None:
            slot.submissions += 1
            keep = healthy and slot.alive and not slot.oom_seen and slot.submissions < self.recycle_after
            if keep:
                try:
                    slot.wipe()
                except SandboxError as exc:
                    log.warning("sandbox slot failed to wipe, replacing it: %s", exc)
                    keep = False
            if not keep:
                self.recycled += 1
                slot.close()
        with self._cond:
            self._busy -= 1
            if keep and slot is not None and not self._closed:
                self._idle.append(slot)
            elif keep and slot is not None:
                slot.close()
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        for slot in idle:
            slot.close()
        if self._on_close is not None:
            self._on_close(self.prefix)
