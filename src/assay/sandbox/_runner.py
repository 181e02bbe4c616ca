"""The warm runtime that lives inside one sandbox slot and forks once per test.

It runs on the sandbox's own /usr/bin/python3 (stdlib only, never imports assay) and talks to the host
over its stdin/stdout with length-prefixed frames. Per test it forks a child that applies rlimits and then
either execs a program (C++, node, java, a compiled binary) or, for Python, runs the user's code in the
already-warm interpreter: that skips interpreter start-up, the main cost of a process per test.

Most of a small test's cost is the kernel's: fork, and a page fault for every page either process
writes afterwards (copy-on-write). So the runtime does once what it can: it compiles a submission's
program itself, once, and forks each test with the code object ready (a program that fails to compile
or warns is compiled in the child, which then reports it as Python would); it builds the test's
stdio wrappers and signal dispositions once; and right after a fork it waits for a quick child to end
before touching anything, so that its own writes are not copies.

After each test every other process in the sandbox is killed (`_sweep`): this process is a child
subreaper, so a double-forked daemon cannot outlive its test. Expected outputs never come here; the host
compares. An assert test forks two processes, the evaluator and the program (`run_assert`; the code
that runs in them is `_harness`, mounted beside this file). Started with a path, it runs that program
instead (`launch`: a session's interpreter), lending it the frame codec. The host imports this module only
for `read_frame`/`write_frame`.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import errno
import fcntl
import importlib
import io
import os
import resource
import select
import shutil
import signal
import struct
import sys
import time
import types
import warnings
from typing import TYPE_CHECKING, Any, BinaryIO

_HEADER = struct.Struct(">II")  # json length, blob count
_BLOB = struct.Struct(">Q")
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
HARNESS = "/opt/assay/harness.py"  # where the host mounts `_harness`
CONTROL_IN, CONTROL_OUT = 200, 201  # the host pipe, moved out of the way of the user's fds 0-3


if TYPE_CHECKING or __name__ != "__main__":  # on the host, and for type checks
    from assay.sandbox import _harness
else:  # in the sandbox, started as a script: the harness is mounted beside this file
    import importlib.util

    _spec = importlib.util.spec_from_file_location("_harness", HARNESS)
    _harness = importlib.util.module_from_spec(_spec)
    sys.modules["_harness"] = _harness
    _spec.loader.exec_module(_harness)

PACKAGES = _harness.PACKAGES
PLAIN_TYPES, NotPlain, to_wire, from_wire, decode_plain = (
    _harness.PLAIN_TYPES,
    _harness.NotPlain,
    _harness.to_wire,
    _harness.from_wire,
    _harness.decode_plain,
)
_dumps, _loads, _compile, _write_all = (
    _harness._dumps,
    _harness._loads,
    _harness._compile,
    _harness._write_all,
)
_exit_code, _print_user_exception = _harness._exit_code, _harness._print_user_exception


def write_frame(stream: BinaryIO, header: dict[str, Any], blobs: list[bytes] = ()) -> None:  # type: ignore[assignment]
    """Send a JSON header and raw byte blobs (program output may be binary)."""
    data = _dumps(header).encode()
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
    header = _loads(_read_exact(stream, size).decode())
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
        os.closerange(4, 1024)
        os.setpgid(0, 0)
        os.chdir(request.get("cwd", "/tmp"))
        _apply_limits(request["limits"])
        atexit._clear()  # nothing of the runtime's runs at a test's exit
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
    """Run user code as `python3 main.py` would, or import it and make one call. Returns the exit code.

    Under a call test the program is imported, not run as a script (as LiveCodeBench's harness does): its
    `if __name__ == "__main__":` demo is skipped. The call's result goes to fd 3 as plain data
    (`to_wire`); the host decodes and compares it. A script ends as CPython ends one (`_finalize`).
    """
    sys.stdin, sys.stdout, sys.stderr = _STDIO
    sys.argv = ["main.py"]
    mode = spec["mode"]
    module = types.ModuleType("__main__" if mode == "script" else "solution")
    module.__dict__.update(__file__="main.py", __builtins__=builtins)
    sys.modules["__main__"] = module
    code = 0
    try:
        exec(spec.get("code") or _compile(spec["source"], "main.py"), module.__dict__)
        if mode == "call":
            _write_all(3, _dumps(_call(module.__dict__, spec)).encode())
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:
        _print_user_exception(exc)
        code = 1
    if mode == "script":
        _finalize()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    return code


def _call(namespace: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The call test's target (a method of `class Solution` when there is one) and its plain result."""
    holder = namespace.get("Solution")
    target = getattr(holder(), spec["fn_name"]) if isinstance(holder, type) else None
    if target is None:
        target = namespace[spec["fn_name"]]
    value = target(*spec["args"])
    sys.stdout.flush()
    try:
        return {"ok": to_wire(value)}
    except NotPlain as exc:
        return {"bad": f"the call returned {exc}, which is not plain data ({PLAIN_TYPES})"}
    except (RecursionError, ValueError) as exc:
        return {"bad": f"the call returned a value that cannot be sent as plain data: {exc}"}


def _finalize() -> None:
    """What CPython does after a script's last line (Py_FinalizeEx): wait for the non-daemon threads,
    then run the atexit hooks. What either prints counts (issue 28: it used to be lost)."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException as exc:
            _print_user_exception(exc)
    atexit._run_exitfuncs()


_STDIO: list[Any] = []  # the test's sys.stdin/stdout/stderr, built once by `_build_stdio`


def _build_stdio() -> None:
    """Make the wrappers over fds 0-2 that every test's Python gets, once, instead of in each child.

    Each child inherits a pristine copy (the runtime never uses them). They are built while fds 1-2 are a
    pipe, as in every test, so what FileIO caches about its fd (not seekable) holds in the children.
    """
    read_end, write_end = os.pipe()
    saved = [os.dup(1), os.dup(2)]
    for fd in (1, 2):
        os.dup2(write_end, fd)
    _STDIO[:] = [
        io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8"),
        io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8"),
        io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True
        ),
    ]
    for fd, original in zip((1, 2), saved, strict=True):
        os.dup2(original, fd)
    for fd in (read_end, write_end, *saved):
        os.close(fd)


# -- the parent: one test -----------------------------------------------------------------------------
PRECOMPILE_MAX = 256 * 1024  # larger sources compile in each test's child, under its limits
_SUBMISSION: dict[str, Any] = {}  # the current submission's compiled program; cleared when it ends


def _precompile(source: str, filename: str) -> Any:
    """Compile here, once, so no forked test pays for it; None: let the child compile (and fail) itself.

    Compiling in a forked child is the dearest step of a small test (the parser's allocations hit
    copy-on-write pages). A source that does not compile cleanly, or that warns (a warning the child
    would print to the program's stderr), is left to the child, which then behaves as before.
    """
    if len(source) > PRECOMPILE_MAX:
        return None
    try:
        with warnings.catch_warnings(record=True) as caught:
            code = _compile(source, filename)
    except BaseException:  # SyntaxError, RecursionError, MemoryError, ...: the child reports it
        return None
    return None if caught else code


def _program(source: str) -> Any:
    """The submission's program, compiled on its first test and reused by the others."""
    if _SUBMISSION.get("source") != source:
        _SUBMISSION.clear()
        _SUBMISSION.update(source=source, code=_precompile(source, "main.py"))
    return _SUBMISSION["code"]


_TICK = os.sysconf("SC_CLK_TCK")
_QUIET_S = 0.005  # how long the runtime first waits, untouched, for a child to end (see run_test)
_CPU_CHECK_S = 0.05  # how often a running child's CPU time is read (RLIMIT_CPU is the coarse backstop)


def _cpu_of(pid: int) -> float:
    """CPU seconds used so far by a running child (utime + stime from /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def _collect(
    pid: int,
    exited: int,
    started: float,
    pipes: dict[int, bytearray],
    limits: dict[str, Any],
    program: int | None = None,
) -> dict[str, Any]:
    """Read output until the child exits; kill it past its CPU or wall time or output cap.

    The pidfd `exited` wakes us the moment the child exits, even while a daemon it left keeps the pipes
    open. With `program` (an assert test: `pid` is the evaluator), the CPU time checked and reported is
    the program's, both stop at a limit, and the program is stopped once the evaluator is done.
    """
    watched = pid if program is None else program
    deadline = started + limits["wall_s"]
    caps = dict(zip(pipes, (limits["stdout"], limits["stderr"], limits["stdout"]), strict=False))
    killed: str | None = None
    poller = select.poll()
    for fd in pipes:
        poller.register(fd, select.POLLIN | select.POLLHUP)
    poller.register(exited, select.POLLIN)
    open_fds = set(pipes)
    stderr_fd = list(pipes)[1]
    cpu_check = started + _CPU_CHECK_S  # most tests end before the first look at /proc
    while True:
        now = time.monotonic()
        if killed is None and now >= deadline:
            killed = "wall"
        elif killed is None and now >= cpu_check:
            cpu_check = now + _CPU_CHECK_S
            if _cpu_of(watched) > limits["cpu_s"]:
                killed = "cpu"
        if killed is not None:
            _kill(pid, watched)
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
            if len(pipes[fd]) > caps[fd] and killed is None and fd != stderr_fd:
                killed = "output"  # stderr past its cap is only cut (diagnostics are not the answer)
                _kill(pid, watched)
        if done:
            break
    _, status, rusage = os.wait4(pid, 0)
    if program is not None:
        status, rusage = _stop(program)
    _drain(pipes, open_fds, caps)
    stderr_cut = len(pipes[stderr_fd]) > caps[stderr_fd]
    for fd, data in pipes.items():
        del data[caps[fd] :]
    return {
        "stderr_truncated": stderr_cut,
        "exit_code": os.waitstatus_to_exitcode(status),
        "cpu_s": round(rusage.ru_utime + rusage.ru_stime, 4),
        "wall_s": round(time.monotonic() - started, 4),
        "max_rss_kb": rusage.ru_maxrss,
        "killed": killed,
    }


def _kill(*pids: int) -> None:
    for pid in dict.fromkeys(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _stop(program: int) -> tuple[int, Any]:
    """The program's exit status and usage; a program still serving calls is stopped and reads as 0."""
    done, status, rusage = os.wait4(program, os.WNOHANG)
    if done:
        return status, rusage
    _kill(program)
    _, _, rusage = os.wait4(program, 0)
    return 0, rusage


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
    if python is not None:
        python["code"] = _program(python["source"])
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child's closerange also closes the read ends and the control pipe
        _child(request, stdin_fd, out_w, err_w, res_w)
    exited = os.pidfd_open(pid)
    # Wait for a quick child to end before doing anything else: a page this process writes while the
    # child lives is copied (copy-on-write); once the child is gone it is only marked writable again.
    select.select((exited,), (), (), _QUIET_S)
    for fd in (stdin_fd, out_w, err_w, res_w):
        os.close(fd)
    pipes = {out_r: bytearray(), err_r: bytearray(), res_r: bytearray()}
    try:
        outcome = _collect(pid, exited, started, pipes, request["limits"])
    finally:
        for fd in (*pipes, exited):
            os.close(fd)
    outcome["leftover"] = _sweep()
    blobs: list[bytes] = list(pipes.values())  # type: ignore[arg-type]  # bytearrays frame as well
    if request.get("collect"):
        outcome["files"], files = _collect_files(request["collect"])
        blobs.extend(files)
    _end_test(request, outcome)
    return outcome, blobs


def _end_test(request: dict[str, Any], outcome: dict[str, Any]) -> None:
    if request.get("cleanup"):
        outcome["cleanup_left"] = _wipe(request["cleanup"])["left"]
    if request.get("cleanup") == "/tmp":  # the submission's last test
        _SUBMISSION.clear()


def run_assert(
    request: dict[str, Any], stdin: bytes, test_fd: int
) -> tuple[dict[str, Any], list[bytes], int]:
    """One assert test: fork the evaluator and the program, run until the evaluator has its verdict.

    Returns the outcome (the program's exit and usage; `exit_code` 0 when it was still serving, then
    stopped) and the memfd holding the evaluator's verdict, which the caller sends on unread.
    """
    os.makedirs(request.get("cwd", "/tmp"), exist_ok=True)
    h = _harness
    python = request["python"]
    python["code"] = _program(python["source"])
    python["reply_cap"] = request["limits"]["stdout"]
    stdin_fd = os.memfd_create("stdin")
    os.write(stdin_fd, stdin)
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    verdict_fd = os.memfd_create("verdict")
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    started = time.monotonic()
    evaluator = os.fork()
    if evaluator == 0:
        _harness_child(
            request,
            {h.EVAL_REQUESTS: req_w, h.EVAL_REPLIES: rep_r, h.EVAL_VERDICT: verdict_fd, h.EVAL_TEST: test_fd},
            "/",
            h.evaluate,
        )
    os.close(test_fd)
    program = os.fork()
    if program == 0:
        fds = {0: stdin_fd, 1: out_w, 2: err_w, h.REQUESTS: req_r, h.REPLIES: rep_w}
        _harness_child(request, fds, request.get("cwd", "/tmp"), lambda spec: h.serve_program(spec, _STDIO))
    exited = os.pidfd_open(evaluator)
    select.select((exited,), (), (), _QUIET_S)
    for fd in (stdin_fd, req_r, req_w, rep_r, rep_w, out_w, err_w):
        os.close(fd)
    pipes = {out_r: bytearray(), err_r: bytearray()}
    try:
        outcome = _collect(evaluator, exited, started, pipes, request["limits"], program=program)
    finally:
        for fd in (*pipes, exited):
            os.close(fd)
    outcome["leftover"] = _sweep()
    _end_test(request, outcome)
    return outcome, list(pipes.values()), verdict_fd  # type: ignore[arg-type]  # bytearrays frame


def _harness_child(request: dict[str, Any], fds: dict[int, int], cwd: str, main: Any) -> None:
    """Never returns: put `fds` in place (0-2 default to /dev/null), close the rest, apply limits, run."""
    code = 1
    try:
        null = os.open("/dev/null", os.O_RDWR)
        fds = {0: null, 1: null, 2: null, **fds}
        # Park every source above the targets first: a source may sit on another's target number.
        moved = {target: fcntl.fcntl(source, fcntl.F_DUPFD, 64) for target, source in fds.items()}
        for target, source in moved.items():
            os.dup2(source, target)
        os.closerange(max(fds) + 1, 1024)
        for fd in range(max(fds) + 1):
            if fd not in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        os.setpgid(0, 0)
        os.chdir(cwd)
        _apply_limits(request["limits"])
        atexit._clear()
        code = main(request["python"])
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(2, f"sandbox: cannot start: {type(exc).__name__}: {exc}\n".encode())
    os._exit(code)


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
    """Empty `root` (making it if it is missing); `left` counts what could not be removed."""
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        os.makedirs(root)
        return {"ok": True, "left": 0}
    if not names:  # the usual case after a test: nothing to do
        return {"ok": True, "left": 0}
    for name in names:
        path = os.path.join(root, name)
        with contextlib.suppress(OSError):
            os.rmdir(path)  # an empty directory (the run dir, usually); never follows a symlink
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    return {"ok": True, "left": len(os.listdir(root))}


def serve() -> None:
    """Answer requests until the host closes the pipe."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # Inherited by every test: the cgroup OOM killer then picks the biggest process, the test's hog,
    # never a small runtime (which cannot lower a child's score itself: that needs CAP_SYS_RESOURCE).
    with open("/proc/self/oom_score_adj", "w") as fh:
        fh.write("1000")
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # tests cannot open /proc/<us>/mem
    os.dup2(0, CONTROL_IN)
    os.dup2(1, CONTROL_OUT)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    _build_stdio()
    # Default dispositions, as a test expects them (Python ignores SIGPIPE and SIGXFSZ and catches
    # SIGINT), set here once for every child. The runtime itself then dies of SIGPIPE when the host has
    # gone, which is how it should end anyway.
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    import site  # started with -S, so no host site-packages: add what `site` gives a program by hand

    site.setquit()  # exit() and quit()
    site.setcopyright()
    site.sethelper()
    if os.path.isdir(PACKAGES):  # the package prefix
        site.addsitedir(PACKAGES)
    inp = os.fdopen(CONTROL_IN, "rb", buffering=0)  # unbuffered: sealed blobs must stay in the pipe
    out = os.fdopen(CONTROL_OUT, "wb")
    warm = ("io", "types", "builtins", "traceback", "json", "math", "collections", "itertools", "functools")
    for name in (*warm, "heapq", "bisect", "re", "string", "typing", "random", "fractions", "decimal"):
        __import__(name)
    import gc

    gc.freeze()  # fewer copy-on-write faults in each forked test
    write_frame(out, {"ready": True, "pid": os.getpid()})
    while True:
        try:
            header, blobs, sealed = _read_request(inp)
        except EOFError:
            return
        op = header.get("op")
        verdict_fd = None
        if op == "run" and sealed:
            reply, out_blobs, verdict_fd = run_assert(header, blobs[0] if blobs else b"", sealed.pop(0))
        elif op == "run":
            reply, out_blobs = run_test(header, blobs[0] if blobs else b"")
        elif op == "write":
            reply, out_blobs = _write_files(header, blobs), []
        elif op == "wipe":  # the end of a submission
            _SUBMISSION.clear()
            reply, out_blobs = _wipe(header["root"]), []
        else:
            reply, out_blobs = {"ok": True, "pid": os.getpid()}, []
        for fd in sealed:
            os.close(fd)
        if verdict_fd is None:
            write_frame(out, reply, out_blobs)
        else:
            _write_sealed_reply(out, reply, out_blobs, verdict_fd)


def _read_request(stream: BinaryIO) -> tuple[dict[str, Any], list[bytes], list[int]]:
    """One request; its blobs from `header["sealed"]` on (an assert test's code) go, unread, to memfds.

    This runtime's memory is what every program process starts as, so test code must never enter it: it
    moves from the host's pipe into a memfd by splice(2), kernel to kernel.
    """
    size, count = _HEADER.unpack(_read_exact(stream, _HEADER.size))
    header = _loads(_read_exact(stream, size).decode())
    first_sealed = int(header.pop("sealed", count))
    blobs, sealed = [], []
    for index in range(count):
        (length,) = _BLOB.unpack(_read_exact(stream, _BLOB.size))
        if index < first_sealed:
            blobs.append(_read_exact(stream, length))
            continue
        fd = os.memfd_create("sealed")
        sealed.append(fd)
        _splice_into(stream.fileno(), fd, length)
    return header, blobs, sealed


def _splice_into(source: int, target: int, length: int) -> None:
    """Move `length` bytes from the control stream into a file without reading them here. splice(2)
    needs a pipe on one side: a socket (docker's attach stream) goes through a pipe of our own."""
    try:
        while length:
            moved = os.splice(source, target, length)
            if not moved:
                raise EOFError("peer closed the control pipe")
            length -= moved
        return
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    read_end, write_end = os.pipe()
    try:
        while length:
            moved = os.splice(source, write_end, min(length, 1 << 16))
            if not moved:
                raise EOFError("peer closed the control pipe")
            length -= moved
            while moved:
                moved -= os.splice(read_end, target, moved)
    finally:
        os.close(read_end)
        os.close(write_end)


def _write_sealed_reply(out: BinaryIO, header: dict[str, Any], blobs: list[bytes], sealed: int) -> None:
    """A reply whose last blob is the memfd `sealed`, sent by sendfile(2) without reading it here."""
    length = os.fstat(sealed).st_size
    data = _dumps(header).encode()
    parts = [_HEADER.pack(len(data), len(blobs) + 1), data]
    for blob in blobs:
        parts += [_BLOB.pack(len(blob)), blob]
    out.write(b"".join([*parts, _BLOB.pack(length)]))
    out.flush()
    offset = 0
    while offset < length:
        offset += os.sendfile(out.fileno(), sealed, offset, length - offset)
    os.close(sealed)


def launch(path: str) -> None:
    """Run another sandbox program (a session's interpreter) as `__main__` instead of serving tests.

    The program finds this module's frame codec as module `sandbox_frames` (`read_frame`,
    `write_frame`): one codec at both ends of every sandbox's control pipe, loaded from mounted files.
    """
    import importlib.util

    frames = types.ModuleType("sandbox_frames", "The frame codec of the sandbox's control pipe.")
    frames.read_frame, frames.write_frame = read_frame, write_frame  # type: ignore[attr-defined]
    sys.modules["sandbox_frames"] = frames
    spec = importlib.util.spec_from_file_location("__main__", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load the sandbox program {path}")
    program = importlib.util.module_from_spec(spec)
    sys.modules["__main__"] = program
    sys.argv[:] = sys.argv[1:]  # as `python3 program.py` would see it
    spec.loader.exec_module(program)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        launch(sys.argv[1])
    else:
        serve()
