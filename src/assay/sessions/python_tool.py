"""The `python` tool: a persistent interpreter per session, inside that session's own bubblewrap sandbox.

Globals survive between calls; each call's stdout, stderr and traceback are the observation; the value of
a final expression is printed, as in a notebook. Every call is bounded by the session's per-call wall
limit (a cell past it is interrupted and the session carries on), its output cap, its memory and its
total CPU budget. The sandbox is the code sandbox's (see `assay.sandbox`); sessions share nothing.
"""

from __future__ import annotations

import logging
import os
from functools import cached_property
from typing import Any

from pydantic import Field

from assay.sandbox import SandboxError, SandboxLauncher
from assay.sessions import interpreter
from assay.sessions.tools import (
    OK,
    SESSION_ENDED,
    TOOL_ERROR,
    Observation,
    SessionContext,
    Tool,
    ToolArguments,
)

log = logging.getLogger("assay.sessions")


class PythonArguments(ToolArguments):
    code: str = Field(description="Python source to run in the session's interpreter.", max_length=1 << 20)


def cgroup_parent() -> str:
    """The cgroup folder (under assay/) that holds this process's session sandboxes."""
    return f"assay/sessions-{os.getpid()}"


class PythonTool(Tool[PythonArguments]):
    name = "python"
    description = (
        "Run Python code in a persistent interpreter (variables, imports and files in /tmp persist between"
        " calls). Returns what the code printed, its errors, and the value of its last expression."
        " numpy and sympy are available; there is no network."
    )
    Arguments = PythonArguments

    @cached_property
    def launcher(self) -> SandboxLauncher:
        """The code sandbox's configuration, built on the first session (a bad one is that session's
        SandboxError)."""
        return SandboxLauncher(self.settings.code, cgroup_parent(), what="sessions")

    def open(self, session: SessionContext) -> interpreter.Interpreter:
        limits = session.limits
        return interpreter.Interpreter(
            self.launcher, session.session_id, int(limits.memory_mb or 512), limits.cpu_s
        )

    def call(self, session: SessionContext, state: Any, arguments: PythonArguments) -> Observation:
        interp: interpreter.Interpreter = state
        limits = session.limits
        wall = float(limits.call_wall_s or 10.0)
        try:
            cell = interp.execute(arguments.code, wall, int(limits.output_bytes or 8192))
        except SandboxError as exc:
            return Observation(f"the session's sandbox failed: {exc}", SESSION_ENDED, reason=str(exc))
        text = cell.output.decode("utf-8", "replace")
        if cell.truncated:
            text += f"\n[... {cell.truncated} more bytes of output cut]"
        details = {"wall_s": cell.wall_s, "cpu_total_s": cell.cpu_total_s}
        if cell.lost:
            reason = self._why_lost(interp, cell.lost)
            return Observation(
                _joined(text, f"[session ended: {reason}]"), SESSION_ENDED, reason, cell.truncated
            )
        if cell.outcome == "timeout":
            note = f"[the call ran past its {wall:g} s wall limit and was interrupted]"
            return Observation(_joined(text, note), TOOL_ERROR, "timeout", cell.truncated, details)
        status = OK if cell.outcome == "ok" else TOOL_ERROR
        return Observation(text, status, None if status == OK else "exception", cell.truncated, details)

    @staticmethod
    def _why_lost(interp: interpreter.Interpreter, lost: str) -> str:
        if interp.out_of_memory():
            return "the session ran out of memory (its memory_mb limit)"
        return lost

    def alive(self, state: Any) -> str | None:
        interp: interpreter.Interpreter = state
        return None if interp.alive else "the session's sandbox process is gone"

    def close(self, state: Any) -> None:
        interp: interpreter.Interpreter = state
        try:
            interp.close()
        except OSError as exc:  # never raise from close: the session is going anyway
            log.warning("closing a session sandbox: %s", exc)

    def shutdown(self) -> None:
        if "launcher" in self.__dict__:  # started at least once
            self.launcher.close()


def _joined(text: str, note: str) -> str:
    return f"{text}\n{note}" if text and not text.endswith("\n") else f"{text}{note}"
