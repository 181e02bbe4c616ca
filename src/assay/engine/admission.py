"""The bounded count of items a deployment has admitted and not yet answered.

One more than the queue size is refused at once with `QueueFullError` (HTTP 429 + Retry-After), so
overload is an answer the client can act on, never a hang. Shared by the in-process `Engine` and the
Ray-backed engine, which admit the same way.
"""

from __future__ import annotations

import threading

from assay.errors import QueueFullError
from assay.metrics import Metrics
from assay.settings import Settings


class Admission:
    """Counts admitted items under `settings.queue_size`; keeps the queue-depth gauge current."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self._settings = settings
        self._metrics = metrics
        self._pending = 0
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        return self._pending

    def admit(self, count: int) -> None:
        """Reserve room for `count` items or raise QueueFullError (the API answers 429)."""
        settings = self._settings
        with self._lock:
            if self._pending + count > settings.queue_size:
                self._metrics.rejected.inc(count)
                raise QueueFullError(self._pending, settings.queue_size, settings.retry_after_s)
            self._pending += count
            self._metrics.queue_depth.set(self._pending)

    def release(self, count: int) -> None:
        with self._lock:
            self._pending -= count
            self._metrics.queue_depth.set(self._pending)
