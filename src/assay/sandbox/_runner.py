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
compares. The host imports this module only for `read_frame`/`write_frame`.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import errno
import fcntl
import importlib
import io
import json
import math
import os
import resource
import select
import shutil
import signal
import struct
import sys
import time
import traceback
import types
import warnings
from typing import Any, BinaryIO

_HEADER = struct.Struct(">II")  # json length, blob count
_BLOB = struct.Struct(">Q")
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
CONTROL_IN, CONTROL_OUT = 200, 201  # the host pipe, moved out of the way of the user's fds 0-3
PACKAGES = "/opt/assay/python"  # where the host mounts the package prefix, when it has one


def _json_dumps() -> Any:
    """`json.dumps` without its per-call set-up (a closure and a C encoder built for every call).

    Two frames cross per test; in the runtime every page Python touches after a fork is a page fault.
    """
    from json import encoder

    c_make_encoder = getattr(encoder, "c_make_encoder", None)
    if c_make_encoder is None:
        return json.dumps
    try:
        # markers, default, encoder, indent, separators, sort_keys, skipkeys, allow_nan
        args = (None, encoder.JSONEncoder().default, encoder.encode_basestring_ascii, None, ": ", ", ")
        make = c_make_encoder(*args, False, False, True)
        make({}, 0)
    except (TypeError, ValueError):  # another interpreter's private signature: the plain way
        return json.dumps
    return lambda obj: "".join(make(obj, 0))


_dumps = _json_dumps()
_loads = json.JSONDecoder().decode


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


# -- plain data across the process boundary ------------------------------------------------------------
# A call's arguments and result cross between the evaluator and the program as JSON in which every
# object is a one-key tag (tuple, dict, set, frozenset, bytes, a non-finite float, a program name), so
# what arrives is only builtin data, rebuilt by the receiver: no pickle, no object of the sender's.
PLAIN_TYPES = "int, float, str, bool, None, list, tuple, dict, set, frozenset, bytes"


class NotPlain(TypeError):
    """A value that cannot cross the boundary: anything but the builtin types, checked all the way down."""


def _loosen(value: Any) -> Any:
    """A few stdlib containers that honest programs return for plain data, as their builtin base."""
    kind = type(value)
    if kind.__module__ == "collections" and isinstance(value, dict):  # Counter, OrderedDict, defaultdict
        return dict.copy(value)
    if kind.__module__ == "numpy" and hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise NotPlain(f"{kind.__module__}.{kind.__qualname__}")


def to_wire(value: Any, ref: Any = None) -> Any:
    """`value` as tagged JSON; NotPlain for anything that is not builtin data (`ref`: names of proxies)."""
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str:
        return value
    if kind is float:
        return value if value - value == 0 else {"F": repr(value)}
    if kind is list:
        return [to_wire(item, ref) for item in value]
    if kind is tuple:
        return {"T": [to_wire(item, ref) for item in value]}
    if kind is dict:
        return {"D": [[to_wire(k, ref), to_wire(v, ref)] for k, v in value.items()]}
    if kind is set or kind is frozenset:
        return {"S" if kind is set else "Z": [to_wire(item, ref) for item in value]}
    if kind is bytes:
        return {"B": value.hex()}
    name = ref(value) if ref is not None else None
    if name is not None:
        return {"G": name}
    return to_wire(_loosen(value), ref)


_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def from_wire(obj: Any, names: Any = None) -> Any:
    """The builtin value a tagged JSON document stands for; ValueError for anything else.

    `names` resolves `{"G": name}` (the program side only: a proxy passed as an argument)."""
    kind = type(obj)
    if obj is None or kind is bool or kind is int or kind is float or kind is str:
        return obj
    if kind is list:
        return [from_wire(item, names) for item in obj]
    if kind is not dict or len(obj) != 1:
        raise ValueError("not a plain-data document")
    ((tag, body),) = obj.items()
    if tag == "F" and body in _FLOATS:
        return _FLOATS[body]
    if tag == "B" and type(body) is str:
        return bytes.fromhex(body)
    if tag == "G" and names is not None and type(body) is str:
        return names(body)
    if type(body) is not list:
        raise ValueError("not a plain-data document")
    if tag == "T":
        return tuple(from_wire(item, names) for item in body)
    if tag == "S":
        return {from_wire(item, names) for item in body}
    if tag == "Z":
        return frozenset(from_wire(item, names) for item in body)
    if tag == "D" and all(type(pair) is list and len(pair) == 2 for pair in body):
        return {from_wire(k, names): from_wire(v, names) for k, v in body}
    raise ValueError("not a plain-data document")


def decode_plain(data: bytes) -> Any:
    """A whole document as the builtin value it carries; ValueError (or RecursionError) otherwise."""
    try:
        return from_wire(_loads(data.decode("utf-8")))
    except (UnicodeDecodeError, TypeError, RecursionError) as exc:  # unhashable set items, deep nesting
        raise ValueError(f"not a plain-data document: {exc}") from exc


_LENGTH = struct.Struct(">I")


def _send(fd: int, message: dict[str, Any]) -> None:
    data = _dumps(message).encode()
    _write_all(fd, _LENGTH.pack(len(data)) + data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _recv(fd: int, cap: int) -> dict[str, Any] | None:
    """One message, or None at end of stream; ValueError for a frame past `cap` or not a JSON object."""
    head = _read_fd(fd, _LENGTH.size)
    if head is None:
        return None
    (size,) = _LENGTH.unpack(head)
    if size > cap:
        raise ValueError(f"a message of {size} bytes, over the {cap}-byte limit")
    body = _read_fd(fd, size)
    if body is None:
        return None
    message = _loads(body.decode("utf-8"))
    if type(message) is not dict:
        raise ValueError("not a message")
    return message


def _read_fd(fd: int, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


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


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=sys.stderr)
    return 1


def _print_user_exception(exc: BaseException) -> None:
    tb = exc.__traceback__.tb_next if exc.__traceback__ else None  # hide the harness frame
    traceback.print_exception(type(exc), exc, tb)


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


def _compile(source: str, filename: str) -> Any:
    # dont_inherit: the user's code must not pick up this module's `from __future__` imports.
    return compile(source, filename, "exec", dont_inherit=True)


# -- assert tests: the program serves calls, the evaluator runs the test --------------------------------
# Two processes per assert test (issue 28). The program process imports the user's code and answers
# calls on fds 3 (requests) and 4 (replies) with plain data; the evaluator holds the test code and calls
# the program's names through proxies, so every comparison runs on builtin values, with builtins and
# frames the program never touches. The test code reaches the evaluator in a memfd spliced from the host
# pipe: it never enters this runtime's memory, which every program process is a copy of. The evaluator
# writes the verdict into a memfd that only it holds and the runtime sends on without reading.
REQUESTS, REPLIES = 3, 4  # the program's ends of its call channel
EVAL_REQUESTS, EVAL_REPLIES, EVAL_VERDICT, EVAL_TEST = 3, 4, 5, 6  # the evaluator's descriptors


def _serve_program(spec: dict[str, Any]) -> int:
    """The program process: import the user's code, then answer calls until the evaluator hangs up."""
    sys.stdin, sys.stdout, sys.stderr = _STDIO
    sys.argv = ["main.py"]
    module = types.ModuleType("solution")
    module.__dict__.update(__file__="main.py", __builtins__=builtins)
    sys.modules["__main__"] = module
    namespace = module.__dict__
    try:
        exec(spec.get("code") or _compile(spec["source"], "main.py"), namespace)
    except SystemExit as exc:  # a program that ends on import never answers
        return _exit_code(exc)
    except BaseException as exc:
        _print_user_exception(exc)
        return 1
    cap = int(spec["reply_cap"])
    while True:
        try:
            message = _recv(REQUESTS, cap)
        except (OSError, ValueError):
            return 1
        if message is None:
            return 0
        if message.get("op") == "names":
            reply = _describe(namespace, message.get("want") or [])
        else:
            reply = _answer(namespace, message)
        data = _dumps(reply)
        if len(data) > cap:
            data = _dumps({"bad": f"a return value of {len(data)} bytes, over the {cap}-byte limit"})
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        _write_all(REPLIES, _LENGTH.pack(len(data.encode())) + data.encode())


def _describe(namespace: dict[str, Any], want: list[str]) -> dict[str, Any]:
    """What the program binds to the names a test uses: a callable, a module, or plain data."""
    names: dict[str, Any] = {}
    for name in want:
        if type(name) is not str or name not in namespace:
            continue
        value = namespace[name]
        if isinstance(value, types.ModuleType):
            names[name] = {"m": getattr(value, "__name__", "")}
        elif callable(value):
            names[name] = {"c": 1}
        else:
            with contextlib.suppress(Exception):
                names[name] = {"v": to_wire(value)}
    return {"names": names}


def _answer(namespace: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """Run one call; its result as plain data, the exception it raised, or why it cannot cross."""
    try:
        target = namespace[message["name"]]
        args = from_wire(message["args"], namespace.__getitem__)
        kwargs = from_wire(message["kwargs"], namespace.__getitem__)
    except (KeyError, ValueError, TypeError) as exc:
        return {"raise": "NameError" if isinstance(exc, KeyError) else "TypeError", "text": repr(exc)}
    try:
        value = target(*args, **kwargs)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt...: the evaluator decides what they mean
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None  # hide the harness frame
        text = "".join(traceback.format_exception(type(exc), exc, tb))
        return {"raise": type(exc).__name__, "exception": isinstance(exc, Exception), "text": text[-4000:]}
    try:
        return {"ok": to_wire(value)}
    except NotPlain as exc:
        return {"bad": f"a call returned {exc}, which is not plain data ({PLAIN_TYPES})"}
    except (RecursionError, ValueError) as exc:  # a cycle, an int past the str-conversion limit
        return {"bad": f"a call returned a value that cannot be sent as plain data: {exc}"}


class ProgramError(Exception):
    """An exception the program raised in a call that has no builtin Exception of the same name."""


class Broken(BaseException):
    """A call that ends the test as a failure, whatever the test does with it. A BaseException, so a
    test's `except Exception` cannot swallow it; and a test that swallows it anyway still fails."""


class ProgramGone(Broken):
    """The program ended (exit, os._exit, a crash, a limit) or broke the call protocol mid-test."""


class NotPlainResult(Broken):
    """A call returned something other than builtin data."""


class ProgramAborted(Broken):
    """The program raised SystemExit, KeyboardInterrupt or another non-Exception in a call: in its own
    process that would have ended the run."""


class _Channel:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.broken: Broken | None = None

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        if isinstance(self.broken, ProgramGone):
            raise self.broken
        try:
            _send(EVAL_REQUESTS, message)
            reply = _recv(EVAL_REPLIES, self.cap)
        except (OSError, ValueError, RecursionError) as exc:
            raise self.fail(ProgramGone(f"the program's reply broke the call protocol: {exc}")) from None
        if reply is None:
            raise self.fail(ProgramGone("the program ended before the test finished"))
        return reply

    def fail(self, broken: Broken) -> Broken:
        self.broken = self.broken or broken
        return broken


class _Proxy:
    """What the test sees of one of the program's callables: a call sends plain data there and back."""

    def __init__(self, channel: _Channel, name: str) -> None:
        self._channel, self.__name__, self.__qualname__ = channel, name, name

    def __repr__(self) -> str:
        return f"<function {self.__name__}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            wire_args = to_wire(list(args), _proxy_name)
            wire_kwargs = to_wire(kwargs, _proxy_name)
        except NotPlain as exc:
            raise TypeError(f"assay: an argument of type {exc} cannot be passed to the program") from None
        reply = self._channel.ask(
            {"op": "call", "name": self.__name__, "args": wire_args, "kwargs": wire_kwargs}
        )
        channel = self._channel
        if "ok" in reply:
            try:
                return from_wire(reply["ok"])
            except (ValueError, TypeError, RecursionError) as exc:
                raise channel.fail(ProgramGone(f"the program's reply is not plain data: {exc}")) from None
        if "bad" in reply:
            raise channel.fail(NotPlainResult(str(reply["bad"])))
        if "raise" in reply:
            name, text = str(reply["raise"]), str(reply.get("text", ""))
            if reply.get("exception") is not True:
                raise channel.fail(ProgramAborted(f"the program raised {name} in a call"))
            raise _program_exception(name, text)
        raise channel.fail(ProgramGone("the program's reply broke the call protocol"))


def _proxy_name(value: Any) -> str | None:
    return value.__name__ if type(value) is _Proxy else None


def _program_exception(name: str, text: str) -> BaseException:
    """The program's Exception as the test sees it: the builtin Exception of that name, else
    ProgramError (so a test expecting a ValueError gets one)."""
    kind = getattr(builtins, name, None)
    exc: BaseException
    try:
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            raise TypeError
        exc = kind(text.strip().splitlines()[-1] if text.strip() else name)
    except Exception:
        exc = ProgramError(f"{name}: {text.strip().splitlines()[-1] if text.strip() else ''}")
    exc.assay_program_traceback = text  # type: ignore[attr-defined]
    return exc


def _names_used(code: Any) -> set[str]:
    """Every global name the test code (and the functions it defines) may look up."""
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names_used(const)
    return found


def _importable(name: str) -> bool:
    """A module the evaluator may import for a test that uses the program's import: stdlib or prefix."""
    top = name.partition(".")[0]
    return top in sys.stdlib_module_names or os.path.isdir(os.path.join(PACKAGES, top))


def _evaluate(spec: dict[str, Any]) -> int:
    """The evaluator process: run the test against proxies, write one verdict, exit 0."""
    verdict: dict[str, Any]
    try:
        size = os.fstat(EVAL_TEST).st_size
        source = os.pread(EVAL_TEST, size, 0).decode("utf-8")
        os.close(EVAL_TEST)
        verdict = _run_test_code(spec, source)
    except BaseException as exc:  # any failure here is a failed test
        verdict = {"verdict": "runtime_error", "error": f"{type(exc).__name__}: {exc}"}
    data = _dumps(verdict).encode()
    os.pwrite(EVAL_VERDICT, data, 0)
    return 0


def _run_test_code(spec: dict[str, Any], source: str) -> dict[str, Any]:
    code = _compile(source, "test.py")
    channel = _Channel(int(spec["reply_cap"]))
    entry = spec.get("entry")
    want = sorted(n for n in _names_used(code) if n == entry or n not in builtins.__dict__)
    module = types.ModuleType("__main__")
    namespace = module.__dict__
    namespace.update(__file__="test.py", __builtins__=builtins)
    sys.modules["__main__"] = module
    try:
        described = channel.ask({"op": "names", "want": want}).get("names")
        if type(described) is not dict:
            raise ProgramGone("the program's reply broke the call protocol")
        for name, what in described.items():
            if name in want and type(what) is dict:
                _bind(namespace, name, what, channel)
        exec(code, namespace)
    except SystemExit as exc:  # the test's own exit: unittest.main() ends with one
        if channel.broken is None and exc.code in (None, 0):
            return {"verdict": "passed"}
        if channel.broken is None:
            return {"verdict": "wrong_answer", "error": f"the test exited with status {exc.code}"}
    except BaseException as exc:  # the verdict says what happened
        return _failure(channel.broken or exc)
    return {"verdict": "passed"} if channel.broken is None else _failure(channel.broken)


def _bind(namespace: dict[str, Any], name: str, what: dict[str, Any], channel: _Channel) -> None:
    if "c" in what:
        namespace[name] = _Proxy(channel, name)
    elif "m" in what and type(what["m"]) is str and _importable(what["m"]):
        with contextlib.suppress(Exception):
            namespace[name] = importlib.import_module(what["m"])
    elif "v" in what:
        with contextlib.suppress(ValueError, TypeError, RecursionError):
            namespace[name] = from_wire(what["v"])


def _failure(exc: BaseException) -> dict[str, Any]:
    shown = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    shown.stack = traceback.StackSummary.from_list([f for f in shown.stack if f.filename != __file__])
    error = "".join(shown.format())  # the test's own frames only, not the harness's
    program_tb = getattr(exc, "assay_program_traceback", None)
    if program_tb:
        error = f"{program_tb}\nraised in the program, seen by the test as:\n{error}"
    failure: dict[str, Any] = {"verdict": "runtime_error", "error": error[-8000:]}
    if isinstance(exc, AssertionError):
        failure["verdict"] = "wrong_answer"
    elif isinstance(exc, NotPlainResult):
        failure.update(verdict="wrong_answer", why=str(exc))
    elif isinstance(exc, ProgramGone):
        failure.update(why=str(exc), gone=True)
    elif isinstance(exc, ProgramAborted):
        failure["why"] = str(exc)
    elif isinstance(exc, MemoryError) and program_tb:
        failure["verdict"] = "memory_limit"
    return failure


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
            {EVAL_REQUESTS: req_w, EVAL_REPLIES: rep_r, EVAL_VERDICT: verdict_fd, EVAL_TEST: test_fd},
            "/",
            _evaluate,
        )
    os.close(test_fd)
    program = os.fork()
    if program == 0:
        fds = {0: stdin_fd, 1: out_w, 2: err_w, REQUESTS: req_r, REPLIES: rep_w}
        _harness_child(request, fds, request.get("cwd", "/tmp"), _serve_program)
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


if __name__ == "__main__":
    serve()
