"""The event loop behind the synchronous `Engine.score` and `Engine.score_groups`.

Library users call from plain (maybe multi-threaded) code; the engine's async pipeline runs on one loop in
a daemon thread of its own, started on first use, so the gates and async clients live on one loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class BackgroundLoop:
    """One event loop in one thread; `run` waits for a coroutine on it from any other thread."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """The coroutine's result, run on the background loop (started on first use)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._started()).result()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="assay-engine-loop", daemon=True
                )
                self._thread.start()
            return self._loop

    def close(self) -> None:
        """Stop the loop and its thread, if they were started."""
        with self._lock:
            loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
