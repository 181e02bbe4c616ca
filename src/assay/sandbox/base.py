"""The backend-independent vocabulary of the sandbox: limits, one run's outcome, the slot interface.

A *slot* is one long-lived sandbox (a bubblewrap sandbox or a docker container) with the warm runtime of
`_runner` inside. Backends implement `Slot`; the pool and the executor only use this interface.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from assay.errors import AssayError

# Per-test verdicts, in the order the scorer reports them.
PASSED = "passed"
WRONG_ANSWER = "wrong_answer"
RUNTIME_ERROR = "runtime_error"
TIME_LIMIT = "time_limit"
MEMORY_LIMIT = "memory_limit"
OUTPUT_LIMIT = "output_limit"
COMPILE_ERROR = "compile_error"

_OOM_MARKERS = (
    b"MemoryError",
    b"std::bad_alloc",
    b"JavaScript heap out of memory",
    b"java.lang.OutOfMemoryError",
)
SIGKILL, SIGXCPU = 9, 24


class SandboxError(AssayError):
    """Our side failed (a slot crashed or hung, bwrap is missing): the item's status is `error`."""


@dataclass(frozen=True)
class Limits:
    """What one test may use. `time_s` is CPU time; the wall limit is derived and more generous."""

    time_s: float = 2.0
    memory_mb: int = 512
    wall_s: float | None = None
    stdout_bytes: int = 16 * 1024 * 1024
    stderr_bytes: int = 64 * 1024
    file_bytes: int = 64 * 1024 * 1024
    open_files: int = 256
    processes: int = 64
    address_space: bool = True  # RLIMIT_AS is sane for C/C++/Python, not for JVMs and V8

    @property
    def wall(self) -> float:
        return self.wall_s if self.wall_s is not None else self.time_s * 3 + 1.0

    def wire(self, nproc: int | None) -> dict[str, Any]:
        """The limits as the warm runtime applies them in the child."""
        memory = self.memory_mb * 1024 * 1024
        return {
            "cpu_s": self.time_s,
            "wall_s": self.wall,
            "stdout": self.stdout_bytes,
            "stderr": self.stderr_bytes,
            "fsize": self.file_bytes,
            "nofile": self.open_files,
            "nproc": nproc,
            "address_space": memory + 64 * 1024 * 1024 if self.address_space else None,
            "stack": min(memory, 256 * 1024 * 1024),
        }


@dataclass
class RunOutcome:
    """How one program run ended, as measured inside the sandbox."""

    exit_code: int | None
    cpu_s: float
    wall_s: float
    stdout: bytes = b""
    stderr: bytes = b""
    result: bytes = b""  # what the harness wrote on fd 3 (function return value, assert nonce)
    killed: str | None = None  # "cpu", "wall", "output" when the runtime killed the child
    oom: bool = False  # the cgroup's OOM killer fired during the run
    max_rss_kb: int = 0
    stderr_truncated: bool = False  # stderr went past its cap: the rest was dropped, the run went on
    files: dict[str, bytes] = field(default_factory=dict)  # collected artefacts (compilers only)

    @classmethod
    def from_reply(cls, reply: dict[str, Any], blobs: list[bytes], oom: bool = False) -> RunOutcome:
        """The runtime's reply frame (any backend) as an outcome: blobs are stdout, stderr, fd 3,
        then the collected files in the order `reply["files"]` names them."""
        names = reply.get("files") or []
        return cls(
            exit_code=reply["exit_code"],
            cpu_s=reply["cpu_s"],
            wall_s=reply["wall_s"],
            stdout=blobs[0],
            stderr=blobs[1],
            result=blobs[2],
            killed=reply.get("killed"),
            oom=oom,
            max_rss_kb=reply.get("max_rss_kb", 0),
            stderr_truncated=bool(reply.get("stderr_truncated")),
            files=dict(zip(names, blobs[3:], strict=False)),
        )

    @property
    def status(self) -> str:
        """passed (exited 0), runtime_error, time_limit, memory_limit or output_limit."""
        if self.killed == "output":
            return OUTPUT_LIMIT
        if self.oom:
            return MEMORY_LIMIT
        if self.killed in ("cpu", "wall") or self.exit_code == -SIGXCPU:
            return TIME_LIMIT
        if self.exit_code == 0:
            return PASSED
        if any(marker in self.stderr for marker in _OOM_MARKERS):
            return MEMORY_LIMIT
        if self.exit_code == -25:  # SIGXFSZ: the file-size limit
            return OUTPUT_LIMIT
        return RUNTIME_ERROR

    def details(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
            "max_rss_kb": self.max_rss_kb,
            **({"killed": self.killed} if self.killed else {}),
            **({"stderr_truncated": True} if self.stderr_truncated else {}),
        }


class Slot(Protocol):
    """One long-lived sandbox with a warm runtime."""

    submissions: int
    oom_seen: bool

    @property
    def alive(self) -> bool: ...

    def write_files(self, files: dict[str, bytes], mode: int = 0o644) -> None: ...

    def run(
        self,
        request: dict[str, Any],
        stdin: bytes,
        limits: Limits,
        collect: str | None = None,
    ) -> RunOutcome: ...

    def wipe(self) -> None: ...

    def close(self) -> None: ...
