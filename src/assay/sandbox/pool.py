"""A bounded pool of long-lived sandbox slots.

Slots start lazily. A submission holds one slot for all its tests (so it compiles once). Afterwards the
slot is wiped (its /tmp emptied) and reused, or closed and replaced when it crashed, saw an OOM kill, or
served `recycle_after` submissions.

The pool has no queue: the engine's fair gate (`assay.engine.scheduling`, kind "sandbox", `code.slots`
wide) is the one wait for a slot, so a caller reaches the pool only when a slot is its own. More callers than
slots is a caller's bug, answered at once with `SandboxError` (status `error`), never a wait (issue 24:
a code item used to wait in two queues, with two "busy" errors).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterator

from assay.sandbox.base import SandboxError, Slot

log = logging.getLogger("assay.sandbox")
_pool_ids = itertools.count()


class SlotPool:
    def __init__(
        self,
        factory: Callable[[str], Slot],
        size: int,
        recycle_after: int = 200,
        on_close: Callable[[str], None] | None = None,
    ) -> None:
        self._on_close = on_close
        self._factory = factory
        self.size = size
        self.recycle_after = recycle_after
        self.prefix = f"pool-{os.getpid()}-{next(_pool_ids)}"
        self._names = itertools.count()
        self._idle: list[Slot] = []
        self._busy = 0
        self._lock = threading.Lock()
        self._closed = False
        self.recycled = 0

    @property
    def busy(self) -> int:
        return self._busy

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
    def slot(self) -> Iterator[Slot]:
        """Hold one slot for a submission; `SandboxError` when every slot is already held."""
        with self._lock:
            if self._closed:
                raise SandboxError("sandbox pool is closed")
            if not self._idle and self._busy >= self.size:
                raise SandboxError(
                    f"every one of the {self.size} sandbox slots is busy: take a slot at the engine's"
                    " sandbox gate first (Engine.run_program, or score code items through an Engine)"
                )
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
        with self._lock:
            self._busy -= 1
            if keep and slot is not None and not self._closed:
                self._idle.append(slot)
            elif keep and slot is not None:
                slot.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for slot in idle:
            slot.close()
        if self._on_close is not None:
            self._on_close(self.prefix)
