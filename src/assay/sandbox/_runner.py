"""The warm runtime that lives inside one sandbox slot and forks once per test.

It runs on the sandbox's own /usr/bin/python3 (stdlib only, never imports assay) and talks to the host
over its stdin/stdout with length-prefixed frames. Per test it forks a child that applies rlimits and then
either execs a program (C++, node, java, a compiled binary) or, for Python, runs the user's code in the
already-warm interpreter: that skips interpreter start-up, the main cost of a process per test.

After each test every other process in the sandbox is killed (`_sweep`): this process is a child
subreaper, so a double-forked daemon cannot outlive its test. Expected outputs never come here; the host
compares. The host imports this module only for `read_frame`/`write_frame`.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import struct
import sys
import time
from typing import Any, BinaryIO

_HEADER = struct.Struct(">II")  # json length, blob count
_BLOB = struct.Struct(">Q")
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
CONTROL_IN, CONTROL_OUT = 200, 201
_LIBC: Any = None  # the host pipe, moved out of the way of the user's fds 0-3


def write_frame(stream: BinaryIO, header: dict[str, Any], blobs: list[bytes] = ()) -> None:  # type: ignore[assignment]
    """Send a JSON header and raw byte blobs (program output may be binary)."""
    data = json.dumps(header).encode()
    parts = [_HEADER.pack(len(data), len(blobs)), data]
    for blob in blobs:
        parts.append(_BLOB.pack(len(blob)))
        parts.append(blob)
    stream.write(b"".join(parts))
    stream.flush()


def _read_exact(stream: BinaryIO, size: int) -> bytes:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            raise EOFError("peer closed the control pipe")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(stream: BinaryIO) -> tuple[dict[str, Any], list[bytes]]:
    size, count = _HEADER.unpack(_read_exact(stream, _HEADER.size))
    header = json.loads(_read_exact(stream, size))
    blobs = [_read_exact(stream, _BLOB.unpack(_read_exact(stream, _BLOB.size))[0]) for _ in range(count)]
    return header, blobs


# -- inside the child --------------------------------------------------------------------------------
def _apply_limits(limits: dict[str, Any]) -> None:
    cpu = int(limits["cpu_s"]) + 1  # whole seconds; the parent also checks the measured CPU time
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize"], limits["fsize"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["nofile"], limits["nofile"]))
    if limits.get("nproc"):
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
    if limits.get("address_space"):
        resource.setrlimit(resource.RLIMIT_AS, (limits["address_space"], limits["address_space"]))
    stack = limits.get("stack")
    if stack:
        hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
        soft = stack if hard == resource.RLIM_INFINITY else min(stack, hard)
        resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))


def _child(request: dict[str, Any], stdin_fd: int, out_w: int, err_w: int, res_w: int) -> None:
    """Never returns: set up fds and limits, then exec or run Python in place."""
    code = 1
    try:
        os.dup2(stdin_fd, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.dup2(res_w, 3)
        keep = 4
        if request.get("python") and request["python"].get("nonce_fd"):
            os.dup2(NONCE_FD, 4)
            keep = 5
        os.closerange(keep, 1024)
        os.setpgid(0, 0)
        os.chdir(request.get("cwd", "/tmp"))
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        _apply_limits(request["limits"])
        if request.get("python") is not None:
            code = _run_python(request["python"])
        else:
            env = request.get("env") or {}
            os.execve(request["argv"][0], request["argv"], env)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(2, f"sandbox: cannot start: {type(exc).__name__}: {exc}\n".encode())
    os._exit(code)


def _run_python(spec: dict[str, Any]) -> int:
    """Run user code as `python3 main.py` would, then the call or the asserts. Returns the exit code."""
    import builtins
    import io
    import traceback
    import types

    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8")
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True
    )
    sys.argv = ["main.py"]
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__="main.py", __builtins__=builtins)
    sys.modules["__main__"] = module
    mode = spec["mode"]
    code = 0
    try:
        exec(compile(spec["source"], "main.py", "exec"), module.__dict__)
        if mode == "call":
            namespace = module.__dict__
            holder = namespace.get("Solution")
            target = getattr(holder(), spec["fn_name"]) if isinstance(holder, type) else None
            if target is None:
                target = namespace[spec["fn_name"]]
            value = json.dumps(target(*spec["args"]))
            sys.stdout.flush()
            os.write(3, value.encode())
        elif mode == "assert":
            exec(compile(spec["test"], "test.py", "exec"), module.__dict__)
            sys.stdout.flush()
            os.write(3, os.read(int(spec["nonce_fd"]), 64))
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException as exc:
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None  # hide the harness frame
        traceback.print_exception(type(exc), exc, tb)
        code = 1
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    return code


# -- the parent: one test -----------------------------------------------------------------------------
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_of(pid: int) -> float:
    """CPU seconds used so far by a running child (utime + stime from /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def _collect(pid: int, pipes: dict[int, bytearray], limits: dict[str, Any]) -> dict[str, Any]:
    """Read output until the child exits; kill it past its CPU or wall time or output cap.

    A pidfd wakes us the moment the child exits, even while a daemon it left keeps the pipes open.
    """
    import select

    started = time.monotonic()
    deadline = started + limits["wall_s"]
    caps = dict(zip(pipes, (limits["stdout"], limits["stderr"], limits["stdout"]), strict=True))
    killed: str | None = None
    poller = select.poll()
    for fd in pipes:
        poller.register(fd, select.POLLIN | select.POLLHUP)
    exited = os.pidfd_open(pid)
    poller.register(exited, select.POLLIN)
    open_fds = set(pipes)
    try:
        while True:
            if killed is None and time.monotonic() >= deadline:
                killed = "wall"
            elif killed is None and _cpu_of(pid) > limits["cpu_s"]:
                killed = "cpu"
            if killed is not None:
                os.kill(pid, signal.SIGKILL)
            done = False
            for fd, _ in poller.poll(50):
                if fd == exited:
                    done = True
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                    continue
                if len(pipes[fd]) <= caps[fd]:  # past the cap: read on (never block the child), keep nothing
                    pipes[fd] += chunk
                if len(pipes[fd]) > caps[fd] and killed is None:
                    killed = "output"
                    os.kill(pid, signal.SIGKILL)
            if done:
                break
    finally:
        os.close(exited)
    _, status, rusage = os.wait4(pid, 0)
    _drain(pipes, open_fds, caps)
    for fd, data in pipes.items():
        del data[caps[fd] :]
    return {
        "exit_code": os.waitstatus_to_exitcode(status),
        "cpu_s": round(rusage.ru_utime + rusage.ru_stime, 4),
        "wall_s": round(time.monotonic() - started, 4),
        "max_rss_kb": rusage.ru_maxrss,
        "killed": killed,
    }


def _drain(pipes: dict[int, bytearray], open_fds: set[int], caps: dict[int, int]) -> None:
    """Read what a finished child left in its pipes without waiting for processes that kept them open."""
    for fd in list(open_fds):
        os.set_blocking(fd, False)
        try:
            while len(pipes[fd]) <= caps[fd]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                pipes[fd] += chunk
        except BlockingIOError:
            pass


def _sweep() -> int:
    """Kill and reap every process but ourselves and pid 1. Returns how many were left behind."""
    # Fast path: we are a child subreaper, so every orphan of the test became our child. No child
    # left means no process left (the test process itself is already reaped).
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return 0
    me = os.getpid()
    for _ in range(200):
        others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
        for pid in others:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            if not others:
                return 0
        if not others:
            return 0
        time.sleep(0.002)
    return len(others)


NONCE_FD = 190  # where the parent parks the assert nonce until the child moves it to fd 4


def run_test(request: dict[str, Any], stdin: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """Fork one child for one test, collect its outcome, then clear the sandbox of every process."""
    os.makedirs(request.get("cwd", "/tmp"), exist_ok=True)
    stdin_fd = os.memfd_create("stdin")
    os.write(stdin_fd, stdin)
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    python = request.get("python")
    if python is not None and python.get("mode") == "assert":
        # The nonce waits in a pipe that the harness reads only after the last assert.
        nonce_r, nonce_w = os.pipe()
        os.write(nonce_w, python.pop("nonce").encode())
        os.close(nonce_w)
        os.dup2(nonce_r, NONCE_FD)
        os.close(nonce_r)
        python["nonce_fd"] = 4
    pid = os.fork()
    if pid == 0:
        for fd in (out_r, err_r, res_r, CONTROL_IN, CONTROL_OUT):
            os.close(fd)
        _child(request, stdin_fd, out_w, err_w, res_w)
    for fd in (stdin_fd, out_w, err_w, res_w):
        os.close(fd)
    if python is not None and python.get("mode") == "assert":
        os.close(NONCE_FD)
    pipes = {out_r: bytearray(), err_r: bytearray(), res_r: bytearray()}
    try:
        outcome = _collect(pid, pipes, request["limits"])
    finally:
        for fd in pipes:
            os.close(fd)
    outcome["leftover"] = _sweep()
    blobs = [bytes(b) for b in pipes.values()]
    if request.get("collect"):
        outcome["files"], files = _collect_files(request["collect"])
        blobs.extend(files)
    if request.get("cleanup"):
        outcome["cleanup_left"] = _wipe(request["cleanup"])["left"]
    return outcome, blobs


def _collect_files(directory: str, budget: int = 64 * 1024 * 1024) -> tuple[list[str], list[bytes]]:
    """The regular files a compiler left in `directory` (read before any user code ran)."""
    names, blobs = [], []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "rb") as fh:
            data = fh.read(budget + 1)
        budget -= len(data)
        if budget < 0:
            break
        names.append(name)
        blobs.append(data)
    return names, blobs


def _write_files(header: dict[str, Any], blobs: list[bytes]) -> dict[str, Any]:
    for path, blob in zip(header["paths"], blobs, strict=False):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(blob)
        os.chmod(path, int(header.get("mode", 0o644)))
    return {"ok": True}


def _wipe(root: str) -> dict[str, Any]:
    import shutil

    os.makedirs(root, exist_ok=True)
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    return {"ok": True, "left": len(os.listdir(root))}


def serve() -> None:
    """Answer requests until the host closes the pipe."""
    global _LIBC
    import ctypes

    _LIBC = ctypes.CDLL(None, use_errno=True)
    _LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # Inherited by every test: the cgroup OOM killer then picks the biggest process, the test's hog,
    # never a small runtime (which cannot lower a child's score itself: that needs CAP_SYS_RESOURCE).
    with open("/proc/self/oom_score_adj", "w") as fh:
        fh.write("1000")
    _LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # tests cannot open /proc/<us>/mem
    os.dup2(0, CONTROL_IN)
    os.dup2(1, CONTROL_OUT)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    inp = os.fdopen(CONTROL_IN, "rb", buffering=0)
    out = os.fdopen(CONTROL_OUT, "wb")
    warm = ("io", "types", "builtins", "traceback", "json", "math", "collections", "itertools", "functools")
    for name in (*warm, "heapq", "bisect", "re", "string", "typing", "random", "fractions", "decimal"):
        __import__(name)
    import gc

    gc.freeze()  # fewer copy-on-write faults in each forked test
    write_frame(out, {"ready": True, "pid": os.getpid()})
    while True:
        try:
            header, blobs = read_frame(inp)
        except EOFError:
            return
        op = header.get("op")
        if op == "run":
            reply, out_blobs = run_test(header, blobs[0] if blobs else b"")
        elif op == "write":
            reply, out_blobs = _write_files(header, blobs), []
        elif op == "wipe":
            reply, out_blobs = _wipe(header["root"]), []
        else:
            reply, out_blobs = {"ok": True, "pid": os.getpid()}, []
        write_frame(out, reply, out_blobs)


if __name__ == "__main__":
    serve()
