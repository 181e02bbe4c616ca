"""The persistent Python interpreter of one session, living inside that session's own bubblewrap sandbox.

It runs on the sandbox's /usr/bin/python3 (stdlib only, never imports assay), started from its mounted
file by the sandbox's runtime (`assay.sandbox.SandboxLauncher`), which lends it the frame codec of the
control pipe as module `sandbox_frames`. Two roles:

- the *supervisor* (pid 2, protected by the seccomp filter from signals, never runs user code) talks to
  the host over the control pipe, enforces each call's wall limit and output cap, kills whatever a cell
  left running, and accounts CPU time from the kernel's own counters (never from anything user code can
  touch);
- the *holder* keeps the session's globals and runs each cell in place. A fork per cell (as a checkpoint)
  was tried first: with numpy loaded the fork and its copy-on-write faults cost several milliseconds, far
  more than a trivial cell. So a cell past its wall limit is interrupted instead (SIGINT, which Python
  raises as KeyboardInterrupt in the cell, as Jupyter's interrupt does) and the session carries on with
  whatever the cell had done. A cell that ignores the interrupt, exits the interpreter or crashes it ends
  the session, with the reason.

The session's total CPU budget is the holder's RLIMIT_CPU (the kernel kills it with SIGXCPU when spent).
Everything the holder says is treated as untrusted: user code shares its memory. A lie can only hurt its
own session (every process here is that session's); the supervisor's deadlines hold anyway.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import json
import linecache
import os
import resource
import select
import signal
import sys
import time
import traceback
from typing import Any

try:  # in the sandbox: the runtime that starts this file lends it its frame codec
    from sandbox_frames import read_frame, write_frame
except ImportError:  # imported on the host (for its constants, and by type checks)
    from assay.sandbox import read_frame, write_frame

PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
CONTROL_IN, CONTROL_OUT = 200, 201
PACKAGES = "/opt/assay/python"
RESTORE_GRACE_S = 2.0  # how long an interrupted cell may take to stop before the session ends
_TICK = os.sysconf("SC_CLK_TCK")


# -- the holder (user code runs here) -----------------------------------------------------------------
def _say(fd: int, **message: Any) -> None:
    """One short JSON line to the supervisor (under PIPE_BUF, so writes from two processes never mix)."""
    os.write(fd, (json.dumps(message) + "\n").encode()[:4000])


def _run_cell(namespace: dict[str, Any], code: str, seq: int) -> bool:
    """Execute one cell as Jupyter would: the value of a final expression is printed. True if no error."""
    filename = f"<cell {seq}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        tree = ast.parse(code, filename)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        assert last is None or isinstance(last, ast.Expr)
        exec(compile(tree, filename, "exec", dont_inherit=True), namespace)
        if last is not None:
            expr = ast.Expression(last.value)
            value = eval(compile(expr, filename, "eval", dont_inherit=True), namespace)
            if value is not None:
                namespace["_"] = value
                print(repr(value))
        return True
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: a cell never ends the session
        shown = traceback.TracebackException(type(exc), exc, exc.__traceback__)
        # Only the cell's frames: this file's own (the cell runner, the interrupt handler) are hidden.
        shown.stack = traceback.StackSummary.from_list([f for f in shown.stack if f.filename != __file__])
        sys.stderr.write("".join(shown.format()))
        return False
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()


def _read_line(fd: int) -> bytes:
    """One request line. Chunked reads are safe: the supervisor sends the next request only after this
    one is answered, so the pipe never holds more than one."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            os._exit(0)  # the supervisor is gone
        data += chunk
    return data


def _holder(req_r: int, rep_w: int) -> None:
    """Run cells in this process, one at a time, in one namespace. Never returns.

    A cell runs in place (no fork per cell: a fork of an interpreter holding numpy costs more than the
    cell). The supervisor stops a cell past its wall limit with SIGINT, which Python turns into a
    KeyboardInterrupt in the cell, as Jupyter's interrupt does.
    """
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    in_cell = [False]

    def interrupt(signum: int, frame: Any) -> None:
        if in_cell[0]:  # an interrupt that arrives between cells (the cell just ended) is dropped
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    while True:
        request = json.loads(_read_line(req_r))
        seq = int(request["seq"])
        ok = False
        try:
            in_cell[0] = True
            ok = _run_cell(namespace, request["code"], seq)
        except BaseException:  # an interrupt that landed outside the cell's own try
            ok = False
        finally:
            in_cell[0] = False
        _say(rep_w, seq=seq, ev="done", ok=ok)


def _start_holder(limits: dict[str, Any], req_r: int, rep_w: int, out_w: int) -> None:
    """In the first holder: stdio to the output pipe, the session's fixed rlimits, then wait for cells."""
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    keep = {0, 1, 2, req_r, rep_w}
    for fd in range(3, 1024):
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as in any Python program
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name, key in (("RLIMIT_AS", "address_space"), ("RLIMIT_FSIZE", "fsize"), ("RLIMIT_NPROC", "nproc")):
        if limits.get(key):
            resource.setrlimit(getattr(resource, name), (limits[key], limits[key]))
    if limits.get("cpu_s"):  # the session's whole CPU budget: SIGXCPU at the soft limit ends it
        cpu = max(1, int(limits["cpu_s"]))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)  # noqa: SIM115
    sys.argv = [""]
    _holder(req_r, rep_w)


# -- the supervisor (never runs user code) ------------------------------------------------------------
class Supervisor:
    """Holds the host pipe and the session's pipes; one instance, in pid 2."""

    def __init__(self, limits: dict[str, Any]) -> None:
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.holder = os.fork()
        if self.holder == 0:
            try:
                os.close(self.req_w)
                os.close(self.rep_r)
                os.close(self.out_r)
                _start_holder(limits, req_r, rep_w, out_w)
            finally:
                os._exit(1)
        for fd in (req_r, rep_w, out_w):
            os.close(fd)
        os.set_blocking(self.rep_r, False)
        os.set_blocking(self.out_r, False)
        self.cpu_budget = limits.get("cpu_s")
        self.pending = b""
        self.seq = self.seen = 0
        self.lost: str | None = None

    def _messages(self) -> list[dict[str, Any]]:
        """Complete lines from the holder's pipe; garbage ends the session (it can only be ours)."""
        try:
            chunk = os.read(self.rep_r, 65536)
        except BlockingIOError:
            return []
        if not chunk:
            self.lost = self._death()
            return []
        self.pending += chunk
        *lines, self.pending = self.pending.split(b"\n")
        if len(self.pending) > 8192:
            self.lost = "the interpreter sent an unreadable message"
        messages = []
        for line in lines:
            try:
                message = json.loads(line)
                messages.append(message if isinstance(message, dict) else {})
            except ValueError:
                self.lost = "the interpreter sent an unreadable message"
        return messages

    def _death(self) -> str:
        """Why the holder's channel closed, from its exit status (it is our child)."""
        for _ in range(50):
            with contextlib.suppress(ChildProcessError):
                pid, status = os.waitpid(self.holder, os.WNOHANG)
                if pid:
                    return _why_exited(status, self.cpu_budget)
            time.sleep(0.002)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.holder, signal.SIGKILL)
        return "the interpreter closed its channel to the supervisor"

    def execute(self, header: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        """Run one cell under its wall limit and output cap; returns the reply and the output."""
        if self.lost:
            return {"lost": self.lost}, b""
        self.seq += 1
        started = time.monotonic()
        cap, deadline = int(header["output_bytes"]), started + float(header["wall_s"])
        try:
            os.write(self.req_w, (json.dumps({"seq": self.seq, "code": header["code"]}) + "\n").encode())
        except OSError:
            self.lost = self._death()
            return {"lost": self.lost}, b""
        output, self.seen = bytearray(), 0
        state: dict[str, Any] = {"end": None}
        self._wait(state, output, cap, deadline)
        if state["end"] is None and self.lost is None:  # past the wall limit
            self._interrupt(state, output, cap)
        self._drain(output, cap)
        self._sweep()
        reply: dict[str, Any] = {"wall_s": round(time.monotonic() - started, 4), "cpu_total_s": self.cpu()}
        reply["truncated"] = self.seen - len(output)
        if self.cpu_budget and reply["cpu_total_s"] > self.cpu_budget and not self.lost:
            # The holder's RLIMIT_CPU does not count the processes a cell started: they count here.
            self.lost = f"the session used its CPU budget ({self.cpu_budget:g} s)"
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.holder, signal.SIGKILL)
        if self.lost:
            reply["lost"] = self.lost
            reply["outcome"] = state.get("why", "crashed")
        else:
            reply.update(state["end"])
        return reply, bytes(output)

    def _wait(self, state: dict[str, Any], output: bytearray, cap: int, deadline: float) -> None:
        while state["end"] is None and self.lost is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            ready = select.select([self.rep_r, self.out_r], [], [], remaining)[0]
            if self.out_r in ready:
                self._read_output(output, cap)
            if self.rep_r in ready:
                for message in self._messages():
                    if message.get("seq") == self.seq and message.get("ev") == "done":
                        ok = message.get("ok") is True and "why" not in state
                        state["end"] = {"outcome": state.get("why") or ("ok" if ok else "error")}

    def _interrupt(self, state: dict[str, Any], output: bytearray, cap: int) -> None:
        """SIGINT the holder and give it a grace period to finish the cell; if it does not, nothing of
        the session's state can be trusted to come back, so the session ends."""
        state["why"] = "timeout"
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.holder, signal.SIGINT)
        self._wait(state, output, cap, time.monotonic() + RESTORE_GRACE_S)
        if state["end"] is None and self.lost is None:
            self.lost = "a call ran past its wall limit and did not stop when interrupted"
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.holder, signal.SIGKILL)
        state["end"] = {"outcome": "timeout"}

    def _read_output(self, output: bytearray, cap: int) -> int:
        """Read what is there; keep up to `cap` bytes, count the rest (never block the writer)."""
        try:
            chunk = os.read(self.out_r, 65536)
        except BlockingIOError:
            return 0
        output += chunk[: max(0, cap - len(output))]
        self.seen += len(chunk)
        return len(chunk)

    def _drain(self, output: bytearray, cap: int) -> None:
        for _ in range(64):  # bounded: a thread left printing in the holder cannot keep us here
            if not self._read_output(output, cap):
                return

    def _others(self, spare: int | None) -> list[int]:
        keep = {1, os.getpid(), spare}
        return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep]

    def _sweep(self) -> None:
        """Reap what exited and kill every process but the holder: a cell's child processes do not
        outlive the cell (this process is a child subreaper, so a double-forked daemon is found too)."""
        spare = None if self.lost else self.holder
        for _ in range(100):
            with contextlib.suppress(ChildProcessError):
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            others = [pid for pid in self._others(spare) if not _zombie(pid)]
            if not others:
                return
            for pid in others:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.002)

    def cpu(self) -> float:
        """CPU seconds of every process the session ever ran, from the kernel's counters."""
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        total = usage.ru_utime + usage.ru_stime
        for pid in self._others(None):
            total += _cpu_of(pid)
        return round(total, 4)


def _why_exited(status: int, cpu_budget: float | None) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code == -signal.SIGXCPU:
        return f"the session used its CPU budget ({cpu_budget:g} s)" if cpu_budget else "CPU limit reached"
    if code == -signal.SIGKILL:
        return "the interpreter was killed (SIGKILL: memory limit or killed from outside)"
    if code < 0:
        return f"the interpreter died of signal {-code} ({signal.Signals(-code).name})"
    return f"the interpreter exited with status {code}"


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True


def _cpu_of(pid: int) -> float:
    """utime + stime + the same of its reaped children (/proc/<pid>/stat fields 14-17)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / _TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def serve() -> None:
    """Start the interpreter, then answer the host until it closes the pipe."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # user code cannot open /proc/<supervisor>/mem
    os.dup2(0, CONTROL_IN)
    os.dup2(1, CONTROL_OUT)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    inp = os.fdopen(CONTROL_IN, "rb", buffering=1 << 16)
    out = os.fdopen(CONTROL_OUT, "wb")
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    header, _ = read_frame(inp)  # the session's fixed limits come first
    _prepare_python()
    supervisor = Supervisor(header.get("limits", {}))
    write_frame(out, {"ready": True, "pid": os.getpid()})
    while True:
        try:
            header, _ = read_frame(inp)
        except EOFError:
            return
        if header.get("op") == "exec":
            reply, blob = supervisor.execute(header)
            write_frame(out, reply, [blob])
        else:
            write_frame(out, {"ok": True, "pid": os.getpid(), "cpu_total_s": supervisor.cpu()})


def _prepare_python() -> None:
    """What `site` gives a program (started with -S, so no host site-packages), plus our packages."""
    import site

    site.setquit()
    site.setcopyright()
    site.sethelper()
    if os.path.isdir(PACKAGES):
        site.addsitedir(PACKAGES)
    for name in ("ast", "linecache", "traceback", "json", "math", "collections", "itertools", "re"):
        __import__(name)
    import gc

    gc.freeze()


if __name__ == "__main__":
    serve()
