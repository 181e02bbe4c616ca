"""What runs on both sides of an assert test's boundary, and the plain data that crosses it (issue 28).

Mounted into each sandbox beside the warm runtime (`_runner`) and loaded by it; stdlib only, never
imports assay. The host imports it for the codec (`to_wire`, `from_wire`, `decode_plain`).

Per assert test the runtime forks two processes from itself. The program process imports the user's code
and answers calls on fds 3 (requests) and 4 (replies) with plain data (`serve_program`); the evaluator
holds the test code and calls the program's names through proxies (`evaluate`), so every comparison runs
on builtin values, with builtins and frames the program never touches. The test code reaches the
evaluator in a memfd spliced from the host pipe: it never enters the runtime's memory, which every
program process is a copy of. The evaluator writes the verdict into a memfd that only it holds and that
the runtime sends on without reading.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import json
import math
import os
import signal
import struct
import sys
import traceback
import types
from typing import Any

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


def _compile(source: str, filename: str) -> Any:
    # dont_inherit: the user's code must not pick up this module's `from __future__` imports.
    return compile(source, filename, "exec", dont_inherit=True)


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=sys.stderr)
    return 1


def _print_user_exception(exc: BaseException) -> None:
    tb = exc.__traceback__.tb_next if exc.__traceback__ else None  # hide the harness frame
    traceback.print_exception(type(exc), exc, tb)


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


# -- assert tests: the program serves calls, the evaluator runs the test --------------------------------
# Two processes per assert test (issue 28). The program process imports the user's code and answers
# calls on fds 3 (requests) and 4 (replies) with plain data; the evaluator holds the test code and calls
# the program's names through proxies, so every comparison runs on builtin values, with builtins and
# frames the program never touches. The test code reaches the evaluator in a memfd spliced from the host
# pipe: it never enters this runtime's memory, which every program process is a copy of. The evaluator
# writes the verdict into a memfd that only it holds and the runtime sends on without reading.
REQUESTS, REPLIES = 3, 4  # the program's ends of its call channel
EVAL_REQUESTS, EVAL_REPLIES, EVAL_VERDICT, EVAL_TEST = 3, 4, 5, 6  # the evaluator's descriptors


def serve_program(spec: dict[str, Any], stdio: list[Any]) -> int:
    """The program process: import the user's code, then answer calls until the evaluator hangs up.

    `stdio`: the test's sys.stdin/stdout/stderr, built once by the runtime."""
    sys.stdin, sys.stdout, sys.stderr = stdio
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


def evaluate(spec: dict[str, Any]) -> int:
    """The evaluator process: run the test against proxies, write one verdict, exit 0."""
    # Every child starts with SIGPIPE's default (a test expects it; _runner.py), but the evaluator writes
    # to a program that may have ended already (`exit(0)` at import): that must be a ProgramGone verdict,
    # not the evaluator killed before it writes one (a race: 6 of 15 runs of a test lost it).
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
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
