"""A TRL environment over an Assay session, for `GRPOTrainer(environment_factory=...)`.

TRL 1.16 builds one environment per rollout from `environment_factory`, calls `reset(**row)` with the
dataset row before generation, and offers every other public method *of the environment's class* as a
tool (`inspect.getmembers(type(env))`; the schema from the method's signature and docstring, through
transformers' `get_json_schema`). An `AssayEnv` therefore is an instance of a class made for its tools:
one method per session tool named in the constructor (`tools`, or the tools its `task` brings; default:
`python`), whose signature and docstring are written from the tool's schema as the server lists it (`GET
/v1/tasks`), so the model is offered the arguments the server validates, for any tool a task brings
(`sql`, `run_tests`, `repo`, a plugin's).

One rollout, one session, at the scale of a generation batch (issue 38). TRL keeps a pool of
environments, one per rollout of the batch, and reuses them every step: it resets *all* of them, one
after another in one thread, then generates, then calls the tools of each rollout in turn (sync tools,
in the same thread), then computes the rewards. So:

- `reset` ends the previous rollout's session and never waits for a new one: it asks for it in the
  background (a few opens at once, while the model generates its first turn), and the first tool call
  takes it. A full server does not block `reset` (waiting there would hold TRL's only thread while the
  sessions that must free are its own);
- a tool call without a session (the background open found the server full) opens one, waiting while
  the server is full (honouring `Retry-After`, up to `open_wait_s`): sessions held by other processes
  (other ranks) free meanwhile. When this process alone holds as many sessions as the server allows,
  nothing can free while it waits: it takes back a session opened ahead for a rollout that has not
  called a tool yet (that rollout opens its own at its first call), and when there is none it fails at
  once, saying how to size the server;
- any failure of Assay's own (unreachable, 5xx, a refused item, a session the server ended) raises
  `RolloutAborted`, a `BaseException`: TRL's tool loop shows an `Exception`'s text to the policy as the
  tool's output, and this passes it and fails the step. What the policy's program did (a traceback, a
  refused call, its step limit) stays an observation;
- `AssayReward`, given TRL's `environments`, ends their sessions once the batch is scored (TRL has no
  other end-of-rollout hook; `end_sessions` does it for your own reward function), so no session is
  open between steps. The next `reset`, dropping the environment and the session's TTL are backstops.

There is no `get_reward`: TRL calls it without the completion, and a verdict needs the final response;
score with Assay's TRL reward function (`assay.integrations.trl`), the same verdict path as `verify`. TRL
ships no HTTP client for OpenEnv servers in 1.16, so this speaks Assay's own session routes (with OpenEnv
installed, its client drives the same sessions through `/openenv`: docs/sessions.md).

    from functools import partial
    GRPOTrainer(..., environment_factory=partial(AssayEnv, url="http://127.0.0.1:8000", task="sql"))
"""

from __future__ import annotations

import contextlib
import inspect
import keyword
import random
import re
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, NamedTuple, Union

import httpx

from assay.integrations.clients import (
    RolloutAborted,
    ended_by_server,
    listed_tasks,
    session_tools,
    shared_http,
)
from assay.integrations.signatures import JSON_TYPES, parameters
from assay.suggest import did_you_mean
from assay.types import Item

__all__ = [
    "AssayEnv",
    "AssayPythonEnv",
    "end_sessions",
]

_NOT_FROM_ROWS = {"response", "id"}  # the rollout writes the response; a session item needs no id
_RESERVED = {"reset", "get_reward"}  # what TRL does not offer as a tool
# Sessions opened at once in the background: a sandbox start is mostly the server's CPU, so a few at a
# time overlap its latency (128 opens: 17.7 s one at a time, 5.9 s sixteen at a time, on 2 cores).
OPENERS = 16
_REFUSED = (413, 422)  # a step the server would not take (too large, malformed): the policy's doing
_opener: ThreadPoolExecutor | None = None
_held: Counter[str] = Counter()  # sessions this process's environments hold, per server URL
# Environments holding a session opened in the background that no tool call has taken yet, per URL.
_unused: dict[str, weakref.WeakSet[AssayEnv]] = {}
_lock = threading.Lock()
_sleep = time.sleep  # the wait between opens on a full server (tests replace it)


class _Full(NamedTuple):
    """A 429 `sessions_full`: the server's limit and its Retry-After."""

    limit: int
    retry_after_s: float


class AssayEnv:
    """One rollout's Assay session with session tools as TRL tools: `tools` (names), else the tools
    `task` brings (python when it brings none; rows that name no task are `task`'s), else python.
    `open_wait_s` bounds the wait for a free session at a tool call."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        limits: dict[str, Any] | None = None,
        tools: Sequence[str] | None = None,
        task: str | None = None,
        open_wait_s: float = 600.0,
    ) -> None:
        self._url = url.rstrip("/")
        listed = listed_tasks(self._url)
        schemas = _schemas(self._url, listed, session_tools(listed, tools, task))
        # TRL lists the tools on the class: this instance's class is one made for its tools.
        methods = {schema["function"]["name"]: _method(schema["function"]) for schema in schemas}
        name = f"{type(self).__name__}[{','.join(methods)}]"
        self.__class__ = type(name, (type(self),), {**methods, "__module__": __name__})
        self._client = shared_http(self._url)  # one pool per process, not one per environment
        self._limits = dict(limits or {})
        self._tools = list(methods)
        self._task = task or "math"
        # The fields a row of each task may give: Item's and the task's own (`item_fields` lists them).
        self._fields = {info["name"]: set(info["item_fields"]) for info in listed["tasks"]}
        self._open_wait_s = float(open_wait_s)
        self._item: dict[str, Any] | None = None  # the rollout's item, between reset and its end
        self._session: str | None = None
        self._opening: Future[str | _Full] | None = None  # the background open reset asked for

    def reset(self, **row: Any) -> str | None:
        """Start a new rollout on the row's item fields (task, reference, tests, ...): the previous
        rollout's session ends, and a fresh one is asked for in the background."""
        self._end()
        task = row.get("task") or self._task
        fields = (Item.FIELDS | self._fields.get(task, set())) - _NOT_FROM_ROWS
        item = {k: v for k, v in row.items() if k in fields and v is not None}
        if not isinstance(item.get("prompt"), str):
            item.pop("prompt", None)  # a conversational prompt is a list of messages
        item.setdefault("task", self._task)
        self._item = item
        self._opening = _background().submit(self._open_ahead, item)
        return None

    def _step(self, tool: str, arguments: dict[str, Any]) -> str:
        """One call of `tool`: its observation (a traceback or a refused query too)."""
        session = self._session_id()
        try:
            response = self._client.post(
                f"/v1/sessions/{session}/step", json={"tool": tool, "arguments": arguments}
            )
        except httpx.HTTPError as exc:  # a step is not retried: it may have run
            raise RolloutAborted(f"a step of Assay session {session} failed: {exc}") from exc
        error = _error(response)
        if response.status_code == 200:
            answer = response.json()
            if answer.get("status") == "error":  # the tool failed on the server's side
                reason = answer.get("reason")
                raise RolloutAborted(f"Assay's {tool} tool failed on session {session}: {reason}")
            return str(answer["observation"])
        if response.status_code in (404, 410):
            reason = str(error.get("reason") or error.get("message") or "gone")
            if ended_by_server(reason):
                raise RolloutAborted(f"Assay session {session} ended: {reason}")
            return f"[session ended: {reason}]"
        if response.status_code in _REFUSED:
            return f"[tool call refused: {error.get('message') or response.text[:500]}]"
        raise RolloutAborted(
            f"Assay answered {response.status_code} to a step of session {session}: {error.get('message')}"
        )

    # -- the session -------------------------------------------------------------------------------
    def _session_id(self) -> str:
        """The rollout's session: the one opened in the background, else one opened now."""
        if self._session is not None:
            return self._session
        if self._item is None:
            raise RuntimeError("no rollout: reset(**row) starts one (a computed reward ended the last)")
        opening, self._opening = self._opening, None
        opened = opening.result() if opening is not None else None
        _forget(self)
        self._session = opened if isinstance(opened, str) else self._open_waiting(self._item)
        return self._session

    def _open_ahead(self, item: dict[str, Any]) -> str | _Full:
        """The background open `reset` asks for; its session stays unused until the first tool call."""
        opened = self._open_once(item)
        if isinstance(opened, str):
            with _lock:
                _unused.setdefault(self._url, weakref.WeakSet()).add(self)
        return opened

    def _open_once(self, item: dict[str, Any]) -> str | _Full:
        """POST /v1/sessions once: the session id, or `_Full`; any other failure aborts the rollout."""
        body = {"item": item, "tools": self._tools, "limits": self._limits}
        try:
            response = self._client.post("/v1/sessions", json=body)
        except httpx.HTTPError as exc:
            raise RolloutAborted(f"cannot open an Assay session at {self._url}: {exc}") from exc
        if response.status_code == 201:
            session = str(response.json()["session_id"])
            with _lock:
                _held[self._url] += 1
            return session
        error = _error(response)
        if response.status_code == 429 and error.get("type") == "sessions_full":
            retry = float(response.headers.get("retry-after") or 1.0)
            return _Full(int(error.get("limit", -1)), retry)
        raise RolloutAborted(
            f"cannot open an Assay session at {self._url}: {response.status_code} {error.get('message')}"
        )

    def _open_waiting(self, item: dict[str, Any]) -> str:
        """Open a session, waiting while the server is full of other processes' sessions."""
        deadline = time.monotonic() + self._open_wait_s
        while True:
            opened = self._open_once(item)
            if isinstance(opened, str):
                return opened
            with _lock:
                held = _held[self._url]
            if opened.limit == 0:
                raise RolloutAborted(f"the Assay server at {self._url} is shutting down")
            if held >= opened.limit:
                unused = _take_unused(self)
                if unused is not None:  # a rollout that has not called a tool yet opens its own later
                    unused._drop_opening()
                    continue
                raise RolloutAborted(
                    f"the Assay server at {self._url} allows {opened.limit} open sessions and this process"
                    f" holds {held}: TRL calls every rollout's tools in one thread, so none of them can end"
                    " while this one waits. Allow at least one session per rollout of a generation batch"
                    " (ASSAY_SESSIONS__MAX_OPEN >= per-device generation batch x processes), or generate"
                    " fewer rollouts at once"
                )
            left = deadline - time.monotonic()
            if left <= 0:
                raise RolloutAborted(
                    f"the Assay server at {self._url} stayed full ({opened.limit} sessions) for"
                    f" {self._open_wait_s:g} s: size its sessions.max_open for the rollouts in flight"
                )
            # other processes' rollouts end meanwhile; jittered so waiting processes do not return in step
            _sleep(min(left, max(opened.retry_after_s, 0.1) * random.uniform(1.0, 1.5)))

    def _end(self) -> None:
        """End the rollout: its session (and one still being opened) is closed, its item forgotten."""
        self._item = None
        self._drop_opening()
        session, self._session = self._session, None
        if session is not None:
            self._close(session)

    def _drop_opening(self) -> None:
        """Forget the background open: cancelled, or its session closed (a first call opens anew)."""
        _forget(self)
        opening, self._opening = self._opening, None
        if opening is not None and not opening.cancel():
            with contextlib.suppress(Exception, RolloutAborted):  # a failed open left nothing to close
                opened = opening.result()
                if isinstance(opened, str):
                    self._close(opened)

    def _close(self, session: str) -> None:
        with _lock:
            _held[self._url] -= 1
        with contextlib.suppress(httpx.HTTPError):  # unreachable: the session's TTL ends it
            self._client.delete(f"/v1/sessions/{session}")

    def __del__(self) -> None:
        """Dropped with a session still open (no reward ended it): it ends here, else at its TTL."""
        if getattr(self, "_client", None) is None:  # __init__ never ran
            return
        # not contextlib.suppress: at interpreter exit module globals (contextlib, httpx) may be None
        try:  # noqa: SIM105
            self._end()
        except Exception:  # the client may be gone: the session's TTL ends it
            pass


def end_sessions(environments: Iterable[Any]) -> None:
    """End the sessions of the `AssayEnv`s among `environments` (TRL's reward kwarg), a few at a time:
    the rollouts are over once the batch is scored. `AssayReward` calls it; call it from your own reward
    function (after anything that reads the environments) when you score without `AssayReward`."""
    ours = [env for env in environments if isinstance(env, AssayEnv)]
    if ours:
        with ThreadPoolExecutor(OPENERS, thread_name_prefix="assay-trl-end") as pool:
            list(pool.map(AssayEnv._end, ours))


# The name existing users know: an `AssayEnv` with its default tool, python.
AssayPythonEnv = AssayEnv


def _forget(env: AssayEnv) -> None:
    with _lock:
        _unused.get(env._url, weakref.WeakSet()).discard(env)


def _take_unused(asking: AssayEnv) -> AssayEnv | None:
    """Another environment of this process whose background session no tool call has taken yet."""
    with _lock:
        unused = _unused.get(asking._url, weakref.WeakSet())
        other = next((env for env in unused if env is not asking), None)
        if other is not None:
            unused.discard(other)
        return other


def _background() -> ThreadPoolExecutor:
    """The process's pool of background session opens (`OPENERS` threads, started on first use)."""
    global _opener
    with _lock:
        if _opener is None:
            _opener = ThreadPoolExecutor(OPENERS, thread_name_prefix="assay-trl-open")
        return _opener


def _error(response: httpx.Response) -> dict[str, Any]:
    """The error envelope's body (`type`, `message`, `reason`, `limit`), or {} for an answer without one."""
    try:
        error = response.json().get("error")
    except ValueError:
        return {}
    return error if isinstance(error, dict) else {}


def _schemas(url: str, listed: dict[str, Any], names: list[str]) -> list[dict[str, Any]]:
    """The OpenAI function schemas of the named tools, as the server lists them."""
    if not names:
        raise ValueError("an AssayEnv needs at least one tool")
    offered = {schema["function"]["name"]: schema for schema in listed["tools"]}
    for name in names:
        if name not in offered:
            raise ValueError(
                f'the Assay server at {url} has no tool "{name}"{did_you_mean(name, offered)};'
                f" its tools: {', '.join(sorted(offered)) or 'none'}"
            )
        if name in _RESERVED or name.startswith("_") or not _usable(name):
            raise ValueError(f'a tool named "{name}" cannot be a TRL environment method')
    return [offered[name] for name in dict.fromkeys(names)]


def _usable(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _method(function: dict[str, Any]) -> Callable[..., str]:
    """A method that steps the session's tool, with the signature and Google-style docstring that
    transformers' `get_json_schema` reads back into the tool's schema."""
    name = function["name"]
    properties, required, ordered = parameters(function)
    for arg in properties:
        if not _usable(arg) or arg == "self":
            raise ValueError(f'tool "{name}": argument "{arg}" cannot be a Python parameter name')
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [
        inspect.Parameter(
            arg,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=_hint(properties[arg]),
            **({} if arg in required else {"default": properties[arg].get("default")}),
        )
        for arg in ordered
    ]
    signature = inspect.Signature(params, return_annotation=str)

    def tool(self: AssayEnv, *args: Any, **kwargs: Any) -> str:
        bound = signature.bind(self, *args, **kwargs)
        return self._step(name, {k: v for k, v in bound.arguments.items() if k != "self"})

    tool.__name__ = tool.__qualname__ = name
    tool.__signature__ = signature  # type: ignore[attr-defined]
    tool.__annotations__ = {arg: _hint(properties[arg]) for arg in ordered} | {"return": str}
    tool.__doc__ = _docstring(str(function.get("description") or name), properties, ordered)
    return tool


def _docstring(description: str, properties: dict[str, Any], ordered: list[str]) -> str:
    lines = [_one_line(description), "", "Args:"]
    lines += [f"    {arg}: {_one_line(str(properties[arg].get('description') or arg))}" for arg in ordered]
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _hint(schema: dict[str, Any]) -> Any:
    """The Python type hint of one JSON-schema property (what `get_json_schema` turns back into it)."""
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    if "anyOf" in schema:
        return Union[tuple(_hint(option) for option in schema["anyOf"])]  # noqa: UP007
    kind = schema.get("type")
    if isinstance(kind, list):
        return Union[tuple(JSON_TYPES.get(k, Any) for k in kind)]  # noqa: UP007
    if kind == "array" and isinstance(schema.get("items"), dict):
        return list[_hint(schema["items"])]  # type: ignore[misc]
    return JSON_TYPES.get(str(kind), Any)
