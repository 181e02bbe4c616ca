"""One-line messages for the command line: what went wrong and what to do, never a traceback.

Shared by `assay score`, `assay serve` and `assay bench` (which lives in its own package).
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from assay.suggest import did_you_mean

_FIXES = {
    errno.ENOENT: "no such file or directory; check the path",
    errno.EACCES: "permission denied; check the file's permissions",
    errno.EISDIR: "is a directory; give a file",
    errno.ENOTDIR: "a part of the path is not a directory; check the path",
    errno.ENOSPC: "no space left on the device; free some space or write elsewhere",
}


def os_error(exc: OSError) -> str:
    """`PATH: cause; fix` for a file that could not be opened, read or written."""
    where = f"{exc.filename}: " if exc.filename is not None else ""
    cause = _FIXES.get(exc.errno or 0) or (exc.strerror or str(exc))
    return f"{where}{cause}"


def port_in_use(host: str, port: int) -> str | None:
    """A one-line message when `host:port` cannot be bound, else None (checked before the server starts,
    so the user reads the cause and the fix rather than a server log)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"{host}:{port} is already in use; stop what runs there or pick --port (ASSAY_PORT)"
            return f"cannot bind {host}:{port} ({exc.strerror}); check --host (ASSAY_HOST) and --port"
    return None


def _section(loc: Sequence[str]) -> type[BaseModel] | None:
    """The settings model at `loc` (e.g. ("math",) -> MathSettings), None past a plain field."""
    from assay.settings import Settings

    model: type[BaseModel] = Settings
    for part in loc:
        field = model.model_fields.get(part)
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def settings_error(exc: ValidationError, flags: Mapping[str, str] | None = None) -> str:
    """A `Settings` validation error in one line, named as the user set it: the environment variable
    (`ASSAY_MATH__DEADLINE is not a setting (did you mean "ASSAY_MATH__DEADLINE_S"?)`), or the command
    line flag in `flags` (field -> flag) when the variable is not set. Pydantic's own text spans several
    lines and ends with a URL; a misspelled setting showed as a traceback (issue 31)."""
    problems = []
    for err in exc.errors():
        loc = [str(part) for part in err["loc"]]
        env = "ASSAY_" + "__".join(loc).upper()
        if err["type"] == "extra_forbidden":
            section = _section(loc[:-1])
            known = (
                []
                if section is None
                else ["ASSAY_" + "__".join([*loc[:-1], f]).upper() for f in section.model_fields]
            )
            problems.append(f"{env} is not a setting{did_you_mean(env, known)}")
            continue
        flag = (flags or {}).get(".".join(loc))
        name = flag if flag is not None and env not in os.environ else env
        given: Any = err.get("input")
        message = str(err["msg"]).removeprefix("Value error, ")
        problems.append(
            f"{name}={given!r}: {message}" if not isinstance(given, dict) else f"{name}: {message}"
        )
    return "; ".join(problems)
