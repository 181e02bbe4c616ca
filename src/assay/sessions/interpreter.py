"""The host side of a session's Python interpreter: one long-lived sandboxed process per session.

The sandbox is the code sandbox's, through its public surface (`assay.sandbox.SandboxLauncher`): the same
namespaces, unprivileged host uid per sandbox, `--cap-drop ALL`, read-only /usr, seccomp filter, cgroup
memory/pids limits and the runtime's package prefix. Only the program inside differs: `_repl`, a file of
this package that the sandbox's runtime starts in its own place, keeps the session's globals between
calls instead of forking a fresh child per test. One sandbox per session (not one shared sandbox forking
an interpreter per session) so that sessions share no /tmp, no pid namespace and no uid: reading another
session's variables, files or processes would mean escaping bubblewrap.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from assay.sandbox import SandboxLauncher, SandboxProcess
from assay.sessions import _repl

_SAFETY_S = 5.0  # the host's backstop beyond a call's wall limit (the supervisor answers well before)
_HEADROOM_MB = 96  # the sandbox's memory beyond the interpreter's: the supervisor and /tmp


@dataclass(frozen=True)
class CellOutcome:
    """How one call ended, as the supervisor in the sandbox measured it."""

    outcome: str  # ok | error (an exception) | timeout | crashed
    output: bytes
    truncated: int  # bytes of output past the cap, dropped
    wall_s: float
    cpu_total_s: float  # every process of the session so far, from the kernel's counters
    lost: str | None = None  # set when the interpreter is gone: the session is over, this says why


class Interpreter:
    """One session's sandboxed interpreter (it holds the process). Calls are serialised by a lock (one
    cell at a time)."""

    def __init__(
        self, launcher: SandboxLauncher, name: str, memory_mb: int, cpu_s: float | None = None
    ) -> None:
        memory = memory_mb * 1024 * 1024
        # The supervisor reads the session's fixed limits before it starts the holder and says ready.
        fixed = {
            "address_space": memory + 64 * 1024 * 1024,
            "fsize": 64 * 1024 * 1024,
            "nproc": launcher.nproc,
            "cpu_s": cpu_s,
        }
        self.lock = threading.Lock()
        self.process: SandboxProcess = launcher.start(
            name, _repl.__file__, hello={"limits": fixed}, memory_mb=memory_mb + _HEADROOM_MB
        )

    @property
    def alive(self) -> bool:
        return self.process.alive

    def execute(self, code: str, wall_s: float, output_bytes: int) -> CellOutcome:
        """Run one cell. SandboxError when the sandbox itself died or stopped answering."""
        header = {"op": "exec", "code": code, "wall_s": wall_s, "output_bytes": output_bytes}
        timeout = wall_s + _repl.RESTORE_GRACE_S + _SAFETY_S
        with self.lock:
            reply, blobs = self.process.exchange(header, [], timeout=timeout)
        return CellOutcome(
            outcome=str(reply.get("outcome", "crashed")),
            output=blobs[0] if blobs else b"",
            truncated=int(reply.get("truncated", 0)),
            wall_s=float(reply.get("wall_s", 0.0)),
            cpu_total_s=float(reply.get("cpu_total_s", 0.0)),
            lost=reply.get("lost"),
        )

    def out_of_memory(self) -> bool:
        """Whether the cgroup's OOM killer fired in this session's sandbox."""
        return self.process.oom_kills() > 0

    def memory_bytes(self) -> int | None:
        """What the session's sandbox is charged now (None without a memory controller)."""
        return self.process.memory_bytes()

    def close(self) -> None:
        self.process.close()
