"""The host side of a session's Python interpreter: one long-lived bubblewrap sandbox per session.

The sandbox is the code sandbox's (`assay.sandbox.bwrap`): the same namespaces, unprivileged host uid per
sandbox, `--cap-drop ALL`, read-only /usr, seccomp filter, cgroup memory/pids limits and the runtime's
package prefix. Only the program inside differs: `_repl` keeps the session's globals between calls
instead of forking a fresh child per test. One sandbox per session (not one shared sandbox forking an
interpreter per session) so that sessions share no /tmp, no pid namespace and no uid: reading another
session's variables, files or processes would mean escaping bubblewrap.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

from assay.sandbox import _harness, _runner, bwrap
from assay.sandbox.base import SandboxError
from assay.sessions import _repl

_SAFETY_S = 5.0  # the host's backstop beyond a call's wall limit (the supervisor answers well before)


def _bootstrap() -> bytes:
    """The one file a session sandbox runs: the plain-data codec as module `_harness` (the runner reads
    its codec from there), the frame codec as module `_runner`, then `_repl`."""
    harness = Path(_harness.__file__).read_text()
    runner = Path(_runner.__file__).read_text()
    repl = Path(_repl.__file__).read_text()
    prelude = (
        "import sys as _sys, types as _types\n"
        "_h = _types.ModuleType('_harness')\n"
        "_sys.modules['_harness'] = _h\n"
        f"exec(compile({harness!r}, 'harness', 'exec'), _h.__dict__)\n"
        "_m = _types.ModuleType('_runner')\n"
        f"exec(compile({runner!r}, 'runner', 'exec'), _m.__dict__)\n"
        "_sys.modules['_runner'] = _m\n"
        "del _h, _m, _sys, _types\n"
    )
    future = "from __future__ import annotations\n"
    head, _, tail = repl.partition(future)  # a __future__ import must stay first
    return (head + future + prelude + tail).encode()


@dataclass(frozen=True)
class CellOutcome:
    """How one call ended, as the supervisor in the sandbox measured it."""

    outcome: str  # ok | error (an exception) | timeout | crashed
    output: bytes
    truncated: int  # bytes of output past the cap, dropped
    wall_s: float
    cpu_total_s: float  # every process of the session so far, from the kernel's counters
    lost: str | None = None  # set when the interpreter is gone: the session is over, this says why


class Interpreter(bwrap.BwrapSlot):
    """One session's sandbox and interpreter. Calls are serialised by a lock (one cell at a time)."""

    def __init__(
        self, config: bwrap.BwrapConfig, name: str, memory_mb: int, cpu_s: float | None = None
    ) -> None:
        memory = memory_mb * 1024 * 1024
        self._fixed = {
            "address_space": memory + 64 * 1024 * 1024,
            "fsize": 64 * 1024 * 1024,
            "nproc": config.processes if os.geteuid() == 0 else None,
            "cpu_s": cpu_s,
        }
        self.lock = threading.Lock()
        super().__init__(config, name)
        if self.cgroup.memory is not None:
            self.cgroup.set_memory(memory + 96 * 1024 * 1024)  # headroom: supervisor, /tmp

    def _open_fds(self) -> dict[str, int]:
        fds = super()._open_fds()
        os.ftruncate(fds["runner"], 0)
        os.lseek(fds["runner"], 0, os.SEEK_SET)
        os.write(fds["runner"], _bootstrap())
        os.lseek(fds["runner"], 0, os.SEEK_SET)
        return fds

    def _start(self) -> Any:
        proc = super()._start()
        # The supervisor reads the session's fixed limits before it starts the holder and says ready.
        with contextlib.suppress(OSError):
            _runner.write_frame(cast(BinaryIO, proc.stdin), {"limits": self._fixed})
        return proc

    def execute(self, code: str, wall_s: float, output_bytes: int) -> CellOutcome:
        """Run one cell. SandboxError when the sandbox itself died or stopped answering."""
        header = {"op": "exec", "code": code, "wall_s": wall_s, "output_bytes": output_bytes}
        with self.lock:
            reply, blobs = self._exchange(header, [], timeout=wall_s + _repl.RESTORE_GRACE_S + _SAFETY_S)
        return CellOutcome(
            outcome=str(reply.get("outcome", "crashed")),
            output=blobs[0] if blobs else b"",
            truncated=int(reply.get("truncated", 0)),
            wall_s=float(reply.get("wall_s", 0.0)),
            cpu_total_s=float(reply.get("cpu_total_s", 0.0)),
            lost=reply.get("lost"),
        )

    def memory_bytes(self) -> int | None:
        """What the session's cgroup is charged now (None without a memory controller)."""
        if self.cgroup.memory is None:
            return None
        name = "memory.usage_in_bytes" if self.cgroup.version == 1 else "memory.current"
        try:
            return int((self.cgroup.memory / name).read_text())
        except (OSError, ValueError):
            return None


def start(config: bwrap.BwrapConfig, name: str, memory_mb: int, cpu_s: float | None = None) -> Interpreter:
    """A started interpreter, or SandboxError saying why not."""
    try:
        return Interpreter(config, name, memory_mb, cpu_s)
    except OSError as exc:
        raise SandboxError(f"cannot start a session sandbox: {exc}") from exc
