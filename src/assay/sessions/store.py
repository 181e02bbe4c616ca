"""The session store: create, step, end, reap. The one stateful service of Assay (DESIGN.md, new wing).

What a session holds here is a handle: its item, its limits, its trace and, per tool, what the tool's
`open` returned (for `python`, the host end of the session's sandbox). The state itself (globals, files,
processes) lives in the sandbox. A bounded number of sessions may be open (`SessionsFull` beyond it,
HTTP 429 with Retry-After); each ends at its TTL after its last call, at its step limit, when a tool's
state is lost (its sandbox died), on DELETE, or when the server stops. An ended session keeps its record
(item, trace) until its TTL so that `verify` still works; a step on it is `SessionGone` with the reason.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from assay.errors import AssayError
from assay.sessions.limits import SessionLimits
from assay.sessions.tools import (
    ERROR,
    INVALID_CALL,
    SESSION_ENDED,
    TOOL_ERROR,
    Observation,
    SessionContext,
    Tool,
    ToolRegistry,
)

if TYPE_CHECKING:
    from assay.metrics import Metrics
    from assay.settings import Settings
    from assay.types import Item

log = logging.getLogger("assay.sessions")
_GONE_KEPT = 100_000  # why recent sessions ended, for 410 answers (older ids answer 404)


class SessionGone(AssayError):
    """The session does not exist, or has `ended` (HTTP 404 or 410, by assay.api.codes); `reason` says
    why. Envelope: session_gone."""

    def __init__(self, session_id: str, reason: str, ended: bool) -> None:
        super().__init__(f"session {session_id} is gone: {reason}")
        self.session_id, self.reason, self.ended = session_id, reason, ended

    def __reduce__(self) -> tuple[Any, ...]:  # it travels back from a Ray session holder (pickled)
        return (SessionGone, (self.session_id, self.reason, self.ended))


class SessionsFull(AssayError):
    """As many sessions are open as the server allows: HTTP 429 with Retry-After."""

    def __init__(self, limit: int, retry_after_s: float) -> None:
        super().__init__(f"{limit} sessions are open, the most this server allows (sessions.max_open)")
        self.limit, self.retry_after_s = limit, retry_after_s

    def __reduce__(self) -> tuple[Any, ...]:
        return (SessionsFull, (self.limit, self.retry_after_s))


@dataclass
class Session:
    context: SessionContext
    tools: dict[str, tuple[Tool[Any], Any]]  # name -> (tool, its per-session state)
    expires: float  # monotonic
    steps: int = 0
    ended: str | None = None  # why, once ended (the record stays for verify until it expires)
    trace: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def id(self) -> str:
        return self.context.session_id

    def expires_at(self) -> float:
        """The expiry as Unix time (what the wire shows)."""
        return round(time.time() + (self.expires - time.monotonic()), 3)

    def summary(self) -> dict[str, Any]:
        """The trace summary `verify` adds to the result's details."""
        counts: dict[str, int] = {}
        for entry in self.trace:
            counts[entry["status"]] = counts.get(entry["status"], 0) + 1
        return {
            "session_id": self.id,
            "steps": self.steps,
            "statuses": counts,
            "tools": sorted({e["tool"] for e in self.trace}),
            "elapsed_ms": round(sum(e["elapsed_ms"] for e in self.trace), 3),
            "ended": self.ended,
            "trace": self.trace[-64:],
        }


@dataclass(frozen=True)
class StepResult:
    session_id: str
    observation: str
    status: str
    step: int
    elapsed_ms: float
    reason: str | None = None
    truncated: int = 0

    def wire(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "observation": self.observation,
            "status": self.status,
            "step": self.step,
            "elapsed_ms": self.elapsed_ms,
            "reason": self.reason,
            "truncated": self.truncated,
        }


class SessionManager:
    """Every session of one server (or one Ray replica). Thread-safe; calls of one session serialise."""

    def __init__(self, settings: Settings, metrics: Metrics | None = None, id_prefix: str = "s-") -> None:
        self.settings = settings
        self.id_prefix = id_prefix  # a Ray session holder puts its name in the ids it issues
        self.config = settings.sessions
        self.metrics = metrics
        self.registry = ToolRegistry.from_settings(settings)
        self._tools: dict[str, Tool[Any]] = {}
        self._sessions: dict[str, Session] = {}
        self._gone: OrderedDict[str, str] = OrderedDict()
        self._open = 0  # sessions holding tool state (or starting)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None
        self.closed = False

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the reaper thread (idempotent; the first session starts it)."""
        if self._reaper is None and not self.closed:
            self._reaper = threading.Thread(target=self._reap_loop, name="assay-session-reaper", daemon=True)
            self._reaper.start()

    def close(self) -> None:
        """End every session (their sandboxes are killed) and stop the reaper."""
        self._stop.set()
        with self._lock:
            self.closed = True
            sessions = list(self._sessions.values())
        for session in sessions:
            self._end(session, "the server is shutting down", "shutdown", forget=True)
        if self._reaper is not None:
            self._reaper.join(timeout=10)
        for tool in self._tools.values():
            tool.shutdown()

    @property
    def open_count(self) -> int:
        return self._open

    def tool(self, name: str) -> Tool[Any]:
        with self._lock:
            if name not in self._tools:
                self._tools[name] = self.registry.lookup(name)(self.settings)
            return self._tools[name]

    # -- create -----------------------------------------------------------------------------------
    def create(self, item: Item, tool_names: list[str], limits: SessionLimits) -> Session:
        """Open a session: tools checked against the item, then each tool's state started."""
        self.start()
        resolved = limits.resolved(self.config)
        tools = [self.tool(name) for name in dict.fromkeys(tool_names)]
        for tool in tools:
            tool.check(item)
        self._reserve()
        session_id = self.id_prefix + secrets.token_hex(12)
        context = SessionContext(session_id=session_id, item=item, limits=resolved)
        states: dict[str, tuple[Tool[Any], Any]] = {}
        try:
            for tool in tools:
                states[tool.name] = (tool, tool.open(context))
        except BaseException:
            for tool, state in states.values():
                tool.close(state)
            self._release()
            raise
        session = Session(context, states, expires=time.monotonic() + resolved.ttl)
        with self._lock:
            self._sessions[session.id] = session
        return session

    def _reserve(self) -> None:
        with self._lock:
            if self.closed:
                raise SessionsFull(0, float(self.settings.retry_after_s))
            if self._open >= self.config.max_open:
                raise SessionsFull(self.config.max_open, float(self.settings.retry_after_s))
            self._open += 1
            if self.metrics is not None:
                self.metrics.sessions_open.set(self._open)

    def _release(self) -> None:
        with self._lock:
            self._open -= 1
            if self.metrics is not None:
                self.metrics.sessions_open.set(self._open)

    # -- lookup -----------------------------------------------------------------------------------
    def get(self, session_id: str) -> Session:
        """The session's record (ended ones too, until they expire); SessionGone otherwise."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                return session
            reason = self._gone.get(session_id)
        if reason is not None:
            raise SessionGone(session_id, reason, ended=True)
        raise SessionGone(
            session_id, "no session with this id (never created, or ended long ago)", ended=False
        )

    # -- step -------------------------------------------------------------------------------------
    def step(self, session_id: str, tool_name: str, arguments: Any) -> StepResult:
        """One tool call. The policy's mistakes (unknown tool, bad arguments, a failing cell) are
        observations; only a session that is gone raises."""
        session = self.get(session_id)
        with session.lock:
            if session.ended is not None:
                raise SessionGone(session_id, session.ended, ended=True)
            started = time.perf_counter()
            observation = self._call(session, tool_name, arguments)
            elapsed = round((time.perf_counter() - started) * 1000, 3)
            if observation.reason != "max_steps":  # the refused call is not a step
                session.steps += 1
            session.trace.append({"tool": tool_name, "status": observation.status, "elapsed_ms": elapsed})
            session.expires = time.monotonic() + session.context.limits.ttl
            self._count(tool_name, observation)
            result = StepResult(
                session_id,
                observation.text,
                observation.status,
                session.steps,
                elapsed,
                observation.reason,
                observation.truncated,
            )
        if observation.status == SESSION_ENDED:
            self._end(session, observation.reason or "a tool call ended the session", _cause(observation))
        return result

    def _call(self, session: Session, tool_name: str, arguments: Any) -> Observation:
        limit = int(session.context.limits.max_steps or 0)
        if session.steps >= limit:
            text = f"[the session's limit of {limit} tool calls is reached; no more calls run]"
            return Observation(text, SESSION_ENDED, reason="max_steps")
        entry = session.tools.get(tool_name)
        if entry is None:
            known = ", ".join(sorted(session.tools))
            return Observation(
                f'unknown tool "{tool_name}"; this session has: {known}', INVALID_CALL, "unknown_tool"
            )
        tool, state = entry
        lost = tool.alive(state)
        if lost is not None:
            return Observation(f"[session ended: {lost}]", SESSION_ENDED, reason=lost)
        try:
            if isinstance(arguments, str):  # a model's tool call carries its arguments as JSON text
                args = tool.Arguments.model_validate_json(arguments or "{}")
            else:
                args = tool.Arguments.model_validate(arguments if arguments is not None else {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()[:5]
            )
            return Observation(
                f"invalid arguments for {tool_name}: {problems}", INVALID_CALL, "bad_arguments"
            )
        try:
            return tool.call(session.context, state, args)
        except Exception as exc:  # our side failed (a database went away): say so, never a 500
            log.exception("session tool %s failed", tool_name)
            return Observation(
                f"[the {tool_name} tool failed on the server: {type(exc).__name__}]", ERROR, str(exc)
            )

    def _count(self, tool_name: str, observation: Observation) -> None:
        if self.metrics is not None:
            count_step(self.metrics, tool_name, observation.status, observation.reason)

    # -- end --------------------------------------------------------------------------------------
    def delete(self, session_id: str) -> None:
        """End and forget a session; idempotent (an unknown id is fine too)."""
        with self._lock:
            session = self._sessions.get(session_id)
        if session is not None:
            self._end(session, "deleted", "deleted", forget=True)

    def _end(self, session: Session, reason: str, cause: str, forget: bool = False) -> None:
        """Free the session's tool state (once) and, with `forget`, drop its record too."""
        with session.lock if not forget else contextlib.nullcontext():
            states, session.tools = list(session.tools.values()), {}
            first = session.ended is None
            if first:
                session.ended = reason
        for tool, state in states:
            tool.close(state)
        if first:
            self._release()
            if self.metrics is not None:
                self.metrics.sessions_ended.labels(cause).inc()
        if forget:
            with self._lock:
                self._sessions.pop(session.id, None)
                self._gone[session.id] = session.ended or reason
                while len(self._gone) > _GONE_KEPT:
                    self._gone.popitem(last=False)

    def kill(self, session_id: str) -> None:
        """End a session from outside (its holder is being taken away): the reason is recorded."""
        with contextlib.suppress(SessionGone):
            session = self.get(session_id)
            self._end(session, "the session's holder was stopped", "lost")

    # -- reaping ----------------------------------------------------------------------------------
    def reap(self) -> int:
        """End sessions whose TTL passed (and whose sandboxes died); returns how many were reaped."""
        now = time.monotonic()
        with self._lock:
            expired = [s for s in self._sessions.values() if s.expires <= now]
            live = [s for s in self._sessions.values() if s.expires > now and s.ended is None]
        for session in expired:
            if session.lock.acquire(blocking=False):  # a call in progress renews it instead
                session.lock.release()
                self._end(
                    session,
                    f"expired ({session.context.limits.ttl:g} s after its last call)",
                    "expired",
                    True,
                )
        for session in live:
            for tool, state in list(session.tools.values()):
                lost = tool.alive(state)
                if lost is not None and session.lock.acquire(blocking=False):
                    session.lock.release()
                    self._end(session, lost, "lost")
                    break
        return len(expired)

    def _reap_loop(self) -> None:
        while not self._stop.wait(self.config.reap_interval_s):
            try:
                self.reap()
            except Exception:  # the reaper must outlive one bad session
                log.exception("session reaper failed")


def count_step(metrics: Metrics, tool_name: str, status: str, reason: str | None) -> None:
    """A step in `/metrics`: by tool and status, and a tool error by its reason."""
    metrics.session_steps.labels(tool_name, status).inc()
    if status == TOOL_ERROR:
        metrics.session_tool_errors.labels(tool_name, reason or "error").inc()


def _cause(observation: Observation) -> str:
    return "max_steps" if observation.reason == "max_steps" else "lost"
