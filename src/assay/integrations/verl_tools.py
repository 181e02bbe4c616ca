"""verl tools backed by Assay sessions: a `BaseTool` subclass loadable from a verl tool-config YAML.

    tools:
      - class_name: assay.integrations.verl_tools.AssaySessionTool
        config: {type: native, url: "http://127.0.0.1:8000", tool: python, limits: {max_steps: 8}}
      - class_name: assay.integrations.verl_tools.AssaySessionTool
        config: {type: native, url: "http://127.0.0.1:8000", tool: sql}

Any session tool the server offers (`GET /v1/tasks` lists them) is one entry: `config.tool` names it (else
the name of a `tool_schema` in the YAML, else the one tool of `config.item`'s task), and its schema is the
server's, the one the session validates the arguments against (a hand-written `tool_schema` only names
the tool). The arguments verl parses from the model's call are the step's arguments, whatever the tool.

One trajectory, one session (issue 38). verl 0.9.1's `ToolAgentLoop` calls `create` -> `execute` ->
`release` around every single call, so an instance is not a trajectory; nor is `agent_data.request_id`,
which repeats every step (`det-<priority>`) under `rollout.full_determinism`. The trajectory is verl's
`AgentData` object itself, passed to every `execute`: the session is keyed by that object (weakly), opened
once under a per-trajectory lock (two parallel calls of one turn share it, and run in call order), and
closed when verl drops the object at the end of the rollout (`weakref.finalize`), which verl does
whether or not it ever calls `calc_reward`. The TTL is only a backstop (a process killed mid-rollout).
Without agent data (verl's older SGLang rollout) the instance is the trajectory and `release` closes it.

Backpressure, never an observation. verl shows the text of any `Exception` raised by `execute` to the
policy as the tool's output (`Error executing tool ...`) and trains on it. So: a full server (429) is
waited for, honouring `Retry-After`, up to `config.open_wait_s` (default 1 hour); every failure of ours
(unreachable server, a 5xx, a session gone for a reason of the server's, the wait running out) raises
`clients.RolloutAborted`, a `BaseException` verl does not catch: the rollout fails loudly with the
reason.
What the policy's program did (a traceback, a bad call, its step limit) stays an observation.

Each tool response is also recorded in `agent_data.extra_fields["assay_tool_responses"]` (verl hands
`extra_fields` to the reward function as `extra_info`), so `assay.integrations.verl.compute_score` can
score only the model's own text. All calls go through one pooled client per process (per event loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import weakref
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from assay.client import AssayClient
from assay.errors import ClientError, RewardUnavailable, ServiceError, SessionGoneError
from assay.integrations.clients import (
    RolloutAborted,
    ended_by_server,
    listed_tasks,
    session_tools,
    shared_session_client,
)
from assay.integrations.transcripts import TOOL_RESPONSES

__all__ = [
    "AssaySessionTool",
]

RESPONSES_KEY = TOOL_RESPONSES  # extra_fields: the texts this tool returned, in order
SESSION_KEY = "assay_session_id"  # extra_fields: the trajectory's Assay session
_REOPEN_S = 1.0  # seconds between rounds of opening a session on a full server (Assay's Retry-After)


@dataclass(eq=False)
class _Trajectory:
    """One trajectory's session: opened once (under `lock`), closed when the trajectory is dropped."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    session_id: str | None = None
    loop: asyncio.AbstractEventLoop | None = None


def _one_tool(listed: dict[str, Any], task: str | None) -> str:
    """The tool of a config that names none: the one its default item's task brings (python for a task
    that brings none); a task with several must be told which this entry is."""
    tools = session_tools(listed, None, task)
    if len(tools) != 1:
        raise ValueError(f"task {task!r} brings the tools {tools}: name this entry's with config.tool")
    return tools[0]


class AssaySessionTool(BaseTool):
    """One Assay session tool (`config.tool`, else the tool schema's name, else the one tool of the
    default item's task) as a verl native tool."""

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None) -> None:
        self.url = str(config.get("url", "http://127.0.0.1:8000")).rstrip("/")
        self.limits = dict(config.get("limits") or {})
        self.default_item = dict(config.get("item") or {"task": "math"})
        listed = listed_tasks(self.url)
        named = config.get("tool") or (tool_schema.function.name if tool_schema is not None else None)
        self.tool = str(named or _one_tool(listed, self.default_item.get("task")))
        self.timeout_s = float(config.get("timeout_s", 300.0))
        self.open_wait_s = float(config.get("open_wait_s", 3600.0))
        self._items: dict[str, dict[str, Any]] = {}  # instance id -> item (from create_kwargs)
        self._trajectories: weakref.WeakKeyDictionary[Any, _Trajectory] = weakref.WeakKeyDictionary()
        self._by_instance: dict[str, _Trajectory] = {}  # calls without agent data: instance = trajectory
        self._closing: set[asyncio.Task[None]] = set()
        super().__init__(config, OpenAIFunctionToolSchema.model_validate(self._schema(listed)))

    def _schema(self, listed: dict[str, Any]) -> dict[str, Any]:
        """The tool's schema as the server describes it (GET /v1/tasks)."""
        for schema in listed["tools"]:
            if schema["function"]["name"] == self.tool:
                return dict(schema)
        raise ValueError(f"the Assay server at {self.url} has no tool {self.tool!r}")

    def _client(self) -> AssayClient:
        return shared_session_client(self.url)

    # -- the trajectory ----------------------------------------------------------------------------
    def _trajectory(self, instance_id: str, agent_data: Any) -> _Trajectory:
        if agent_data is None:
            return self._by_instance.setdefault(instance_id, _Trajectory())
        try:
            trajectory = self._trajectories.get(agent_data)
        except TypeError as exc:  # the session must end with the trajectory: it needs a weak reference
            raise TypeError(f"agent_data must be weak-referenceable, as verl's AgentData is: {exc}") from exc
        if trajectory is None:
            trajectory = self._trajectories[agent_data] = _Trajectory()
            weakref.finalize(agent_data, self._ended, trajectory)
        return trajectory

    async def _session(self, trajectory: _Trajectory, instance_id: str) -> str:
        """The trajectory's session id, opened on its first call (the caller holds its lock)."""
        if trajectory.session_id is None:
            item = self._items.get(instance_id, self.default_item)
            trajectory.session_id = await self._open(item)
            trajectory.loop = asyncio.get_running_loop()
        return trajectory.session_id

    async def _open(self, item: dict[str, Any]) -> str:
        """Open a session, waiting while the server is full (429: the client honours Retry-After)."""
        deadline = time.monotonic() + self.open_wait_s
        while True:
            try:
                opened = await self._client().aopen_session(item, [self.tool], self.limits)
                return opened.session_id
            except ServiceError as exc:
                if exc.status_code != 429 or time.monotonic() >= deadline:
                    raise _aborted("cannot open an Assay session", exc) from exc
                # the client gave up its own retries on the last 429 (each after its Retry-After): wait
                # as long again before the next round, jittered so waiting trajectories do not return
                # in lock-step
                await asyncio.sleep(min(deadline - time.monotonic(), _REOPEN_S * random.uniform(1.0, 1.5)))
            except ClientError as exc:
                raise _aborted("cannot open an Assay session", exc) from exc

    def _ended(self, trajectory: _Trajectory) -> None:
        """verl dropped the trajectory (its AgentData): close its session on the loop that opened it."""
        session_id, loop = trajectory.session_id, trajectory.loop
        if session_id is None or loop is None or not loop.is_running():
            return  # no loop to close it on (the process is ending): the TTL ends the session
        trajectory.session_id = None
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # the usual case: the rollout ended on the loop it ran on
            self._close_soon(session_id)
            return
        with contextlib.suppress(RuntimeError):  # a closed loop (the process is ending): the TTL ends it
            loop.call_soon_threadsafe(self._close_soon, session_id)

    def _close_soon(self, session_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self._close(session_id))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close(self, session_id: str) -> None:
        with contextlib.suppress(ClientError):  # unreachable or restarted: the session's TTL ends it
            await self._client().aclose_session(session_id)

    async def wait_closed(self) -> None:
        """Wait for the sessions of ended trajectories to be closed (their DELETEs are in flight)."""
        await asyncio.sleep(0)  # closes scheduled from another thread start on this turn of the loop
        while self._closing:
            await asyncio.gather(*list(self._closing))

    # -- verl's BaseTool ---------------------------------------------------------------------------
    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        instance_id = instance_id or str(uuid4())
        create_kwargs = kwargs.get("create_kwargs") or {}
        self._items[instance_id] = dict(create_kwargs.get("item") or self.default_item)
        return instance_id, ToolResponse()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        """One step; the observation is the tool response (a traceback too), the step reward 0."""
        agent_data = kwargs.get("agent_data")
        trajectory = self._trajectory(instance_id, agent_data)
        async with trajectory.lock:  # parallel calls of one turn: one session, steps in call order
            session_id = await self._session(trajectory, instance_id)
            text, metrics = await self._step(session_id, parameters)
            extra = getattr(agent_data, "extra_fields", None)
            if isinstance(extra, dict):
                extra[SESSION_KEY] = session_id
                extra.setdefault(RESPONSES_KEY, []).append(text)
        return ToolResponse(text=text), 0.0, metrics

    async def _step(self, session_id: str, parameters: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        try:
            step = await self._client().astep(session_id, self.tool, parameters)
        except SessionGoneError as exc:
            if ended_by_server(exc.reason):
                raise _aborted(f"session {session_id} ended", exc) from exc
            return f"[session ended: {exc.reason}]", {"status": "session_gone"}
        except ClientError as exc:
            raise _aborted(f"a step of session {session_id} failed", exc) from exc
        if step.status == "error":  # the tool failed on the server's side: not the policy's doing
            raise RolloutAborted(f"Assay's {self.tool} tool failed on session {session_id}: {step.reason}")
        return step.observation, {"status": step.status, "step": step.step, "elapsed_ms": step.elapsed_ms}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The verdict on `kwargs["response"]` (the trajectory's final answer) for its session."""
        trajectory = self._trajectory(instance_id, kwargs.get("agent_data"))
        async with trajectory.lock:
            session_id = await self._session(trajectory, instance_id)
        result = await self._client().averify_session(session_id, str(kwargs.get("response", "")))
        if result.status.value != "ok" or result.reward is None:
            raise RewardUnavailable(
                f"no reward for session {session_id}: {result.status.value}: {result.reason}"
            )
        return float(result.reward)

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the per-call instance. A trajectory's session stays for its next call; an instance that
        was its own trajectory (no agent data) closes its session here."""
        self._items.pop(instance_id, None)
        trajectory = self._by_instance.pop(instance_id, None)
        if trajectory is not None and trajectory.session_id is not None:
            await self._close(trajectory.session_id)

    async def close_trajectory(self, agent_data: Any) -> None:
        """End one trajectory's session now (else it ends when verl drops the trajectory)."""
        trajectory = self._trajectories.pop(agent_data, None)
        if trajectory is not None and trajectory.session_id is not None:
            session_id, trajectory.session_id = trajectory.session_id, None
            await self._close(session_id)


def _aborted(what: str, exc: BaseException) -> RolloutAborted:
    return RolloutAborted(f"{what}: {exc}")
