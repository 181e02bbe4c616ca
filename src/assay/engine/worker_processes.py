"""How worker processes start: from the forkserver, without the caller's `__main__`, tied to their parent.

Why not the stdlib's forkserver context as is: every child it starts re-runs the parent's main script
(as `__mp_main__`) so that functions defined there can be unpickled. A first script written without an
`if __name__ == "__main__":` guard (`import assay; print(assay.score(...))`) then calls `assay.score`
again inside each worker, which starts workers of its own, and the whole tree hangs. Assay's workers
only run code from importable modules (scorers and plugins are named "module:Class"), so they are
started without the main module and an unguarded script works.

Why a memory limit: a SQL query or a sympy simplification can grow a worker without bound, and SQLite's
heap limit and DuckDB's memory_limit do not cover what Python holds (fetched rows, sympy trees). Past
`Settings.worker_memory_mb` an allocation fails: Python raises MemoryError, which the scorer turns into
the item's verdict, instead of the machine's OOM killer choosing a victim.

Why a parent watch: a worker busy with a long sympy simplification does not notice that the process
that started it is gone, and the forkserver stays up while any worker lives; each worker exits as soon
as its caller's end of a pipe closes, so killing a script mid-run leaves no process behind.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import resource
import signal
import sys
import threading
from multiprocessing import popen_forkserver, spawn
from multiprocessing.connection import wait
from multiprocessing.context import ForkServerContext, ForkServerProcess
from typing import Any

# spawn.prepare() in the child re-runs the main module when one of these keys is present.
_MAIN_KEYS = ("init_main_from_path", "init_main_from_name")

_launching = threading.local()
_install_lock = threading.Lock()
_stdlib_preparation_data = spawn.get_preparation_data


def _preparation_data(name: str) -> dict[str, Any]:
    """The stdlib's data for a new child, less the main module while one of our workers launches.

    The flag is thread-local, so processes the caller starts from other threads keep their main module.
    """
    data: dict[str, Any] = _stdlib_preparation_data(name)
    if getattr(_launching, "worker", False):
        for key in _MAIN_KEYS:
            data.pop(key, None)
    return data


class _WorkerPopen(popen_forkserver.Popen):
    def _launch(self, process_obj: Any) -> None:
        _launching.worker = True
        try:
            super()._launch(process_obj)  # type: ignore[misc]  # typeshed omits the private method
        finally:
            _launching.worker = False


class _WorkerProcess(ForkServerProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> _WorkerPopen:  # the stdlib name
        return _WorkerPopen(process_obj)


class WorkerContext(ForkServerContext):
    """A forkserver context whose processes start without the parent's main module (pebble takes it)."""

    Process = _WorkerProcess

    def __init__(self) -> None:
        super().__init__()
        with _install_lock:
            spawn.get_preparation_data = _preparation_data


def die_with_parent() -> None:
    """In a worker: exit at once when the process that started it is gone (killed, crashed, exited),
    or the forkserver that forked it.

    The caller: a Linux parent-death signal would not do, as a worker's parent is the forkserver, which
    stays up as long as any worker holds its pipe; the caller's sentinel pipe is what is watched.

    The forkserver: the pool learns that a worker exited through a pipe the forkserver holds, so once the
    forkserver is gone every worker reads as dead. One still alive would be an orphan the pool no longer
    counts but that still takes tasks from the pool's queue (their items were lost). The parent-death
    signal makes the workers die with the forkserver, so the pool's view is the truth and it replaces
    them.
    """
    _die_with_forkserver()
    caller = multiprocessing.parent_process()
    if caller is None:
        return

    def watch() -> None:
        wait([caller.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="assay-watch-parent", daemon=True).start()


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_forkserver() -> None:
    """SIGKILL this process when its parent (the forkserver) dies; Linux only, elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def limit_memory(megabytes: int) -> None:
    """In a worker: cap its address space (RLIMIT_AS) at `megabytes` MiB; 0 leaves it unlimited.

    Address space, not resident memory: it is what the kernel can refuse per process without a cgroup,
    and a refused allocation is an error the worker sees rather than a kill. Never raises the limit.
    """
    if megabytes <= 0:
        return
    wanted = megabytes << 20
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if soft == resource.RLIM_INFINITY or wanted < soft:
        resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
