"""Batches for a model in this process: length-sorted under a token budget, gathered across HTTP calls.

Why sorted by length: a padded batch costs (items x longest) tokens; sorting puts similar lengths
together, so little of the budget goes to padding. Why gather across calls: a trainer sends a few items
per request (OpenRLHF sends one), and one forward pass over many items is far cheaper than many over one.

`MicroBatcher` runs in one thread of its own and is fed through a thread-safe queue, so it serves any
number of event loops (the API's, the engine's, a test's) with `asyncio.wrap_future`. It waits at most
`wait_s` after the first item of a round, then prepares (tokenises) the round's items, plans batches with
`plan_batches` and runs them one after the other: forward passes are serialised, as they share one model.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

J = TypeVar("J")  # a job as submitted
P = TypeVar("P")  # a job prepared for the model (token ids)
R = TypeVar("R")  # one job's result


def plan_batches(lengths: Sequence[int], max_tokens: int, max_items: int) -> list[list[int]]:
    """Group indices into batches whose padded size (items x longest) stays within `max_tokens`.

    Shortest first; an item longer than the whole budget still runs, alone. Every index appears once.
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        longest = lengths[index]  # sorted ascending: the newcomer is the longest so far
        if current and ((len(current) + 1) * longest > max_tokens or len(current) >= max_items):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


@dataclass
class _Job(Generic[J, R]):
    job: J
    future: Future[R]


_STOP = object()


class MicroBatcher(Generic[J, P, R]):
    """Collects jobs for up to `wait_s` (or until `max_tokens` are waiting) and runs them in batches.

    `setup()` runs once in the batcher's thread before the first round (the model is loaded there, so a
    slow load never blocks an event loop); if it raises, every job of that round and later gets the error.
    `prepare(job)` returns the prepared job, `size(prepared)` its tokens; `run(batch)` returns one result
    per prepared job, in order. An exception from `prepare` fails that job only; from `run`, its batch.
    """

    def __init__(
        self,
        setup: Callable[[], None],
        prepare: Callable[[J], P],
        size: Callable[[P], int],
        run: Callable[[list[P]], list[R]],
        *,
        max_tokens: int,
        max_items: int,
        wait_s: float,
        name: str = "assay-prm-batcher",
    ) -> None:
        self._setup, self._prepare, self._size, self._run = setup, prepare, size, run
        self.max_tokens, self.max_items, self.wait_s = max_tokens, max_items, wait_s
        self._queue: queue.SimpleQueue[_Job[J, R] | object] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._start_lock = threading.Lock()
        self._setup_error: BaseException | None = None
        self._closed = False
        self.batch_sizes: list[int] = []  # items per forward pass, most recent last (bounded)

    def submit(self, job: J) -> Future[R]:
        """Queue one job; the future holds its result or exception."""
        if self._closed:
            raise RuntimeError("the batcher is closed")
        with self._start_lock:
            if not self._thread.is_alive() and self._thread.ident is None:
                self._thread.start()
        future: Future[R] = Future()
        self._queue.put(_Job(job, future))
        return future

    def close(self, timeout: float = 30.0) -> None:
        """Stop the thread after the jobs already queued; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._thread.ident is not None:
            self._queue.put(_STOP)
            self._thread.join(timeout)

    # -- the batcher thread ----------------------------------------------------------------------
    def _loop(self) -> None:
        try:
            self._setup()
        except BaseException as exc:  # reported to every job; the thread keeps draining the queue
            log.exception("prm backend failed to start")
            self._setup_error = exc
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            round_, stop = self._gather(first)
            self._serve(round_)
            if stop:
                return

    def _gather(self, first: object) -> tuple[list[tuple[_Job[J, R], P]], bool]:
        """One round: the first job plus whatever arrives within `wait_s`, prepared as they come."""
        prepared: list[tuple[_Job[J, R], P]] = []
        waiting_tokens = 0
        deadline = time.monotonic() + self.wait_s
        entry: object = first
        while True:
            if not isinstance(entry, _Job):  # the only other thing queued is the stop sentinel
                return prepared, True
            ready = self._accept(entry)
            if ready is not None:
                prepared.append((entry, ready))
                waiting_tokens += self._size(ready)
            if waiting_tokens >= self.max_tokens or len(prepared) >= self.max_items:
                return prepared, False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return prepared, False
            try:
                entry = self._queue.get(timeout=remaining)
            except queue.Empty:
                return prepared, False

    def _accept(self, entry: _Job[J, R]) -> P | None:
        """The prepared job, or None when it was cancelled or failed (its future then says why)."""
        if not entry.future.set_running_or_notify_cancel():
            return None  # the caller gave up (deadline passed) before we started
        if self._setup_error is not None:
            entry.future.set_exception(self._setup_error)
            return None
        try:
            return self._prepare(entry.job)
        except Exception as exc:
            entry.future.set_exception(exc)
            return None

    def _serve(self, round_: list[tuple[_Job[J, R], P]]) -> None:
        if not round_:
            return
        sizes = [self._size(ready) for _, ready in round_]
        for batch in plan_batches(sizes, self.max_tokens, self.max_items):
            jobs = [round_[i] for i in batch]
            try:
                results = self._run([ready for _, ready in jobs])
            except Exception as exc:
                log.exception("prm forward pass failed")
                for entry, _ in jobs:
                    entry.future.set_exception(exc)
                continue
            self.batch_sizes = [*self.batch_sizes[-99:], len(jobs)]
            for (entry, _), result in zip(jobs, results, strict=True):
                entry.future.set_result(result)
