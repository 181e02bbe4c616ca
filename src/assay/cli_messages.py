"""One-line messages for the command line: what went wrong and what to do, never a traceback.

Shared by `assay score`, `assay serve` and `assay bench` (which lives in its own package).
"""

from __future__ import annotations

import errno
import socket

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
