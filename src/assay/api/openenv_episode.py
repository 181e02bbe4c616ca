"""One OpenEnv episode over one Assay session: what `reset`, `step` and `state` do, whatever the transport.

OpenEnv (meta-pytorch/OpenEnv; PyPI `openenv` 0.10) models an environment as `reset(**kwargs) ->
observation`, `step(action) -> observation` (with `reward` and `done` on it) and `state -> {episode_id,
step_count}`. Here an episode is one Assay session:

- `reset` ends the episode's previous session and opens a new one on an item: the client's (`item`), or
  one of the server's task file (`sessions.openenv_items`), picked by `index`, drawn by `seed`, or the
  next in turn. `tools` (default: the tools the item's task brings, python when it brings none) and
  `limits` are those of `POST /v1/sessions`.
- `step` takes `{"tool", "arguments"}` (one tool call, as `POST /v1/sessions/{id}/step`: a traceback is an
  observation, not an error; a session that ended answers `session_gone`) or `{"answer"}`: the final
  response, verified exactly as `/v1/rewards` would score it; its `reward` (null unless the verdict's
  status is `ok`) and `done: true` end the episode, and its session is closed. An answer after the
  session's record expired is `done` with no reward. The answer's text is all that is scored: what the
  episode's tools printed is never added to it, and a reset item carrying a `response` or `messages` is
  refused (issue 38: a verifier reads the model's own text only).
- `state` is the episode id (the session id, unless the client named the episode), the count of steps
  taken and whether the episode is done.

Failures the client must see as errors (a malformed action, no episode, sessions full) raise
`EpisodeError` with OpenEnv's WebSocket error code and the HTTP status; the transports map it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from assay.api.codes import Refusal
from assay.engine.service import Service
from assay.errors import ItemError, QueueFullError
from assay.items import parse_item
from assay.registry import Registry
from assay.sandbox import SandboxError
from assay.sessions import SessionGone, SessionLimits, SessionsFull
from assay.sessions.tools import task_tools
from assay.types import Item


class EpisodeError(Exception):
    """A request the episode refuses: `code` is OpenEnv's WSErrorCode, `refusal` what HTTP answers."""

    def __init__(
        self, message: str, code: str = "VALIDATION_ERROR", refusal: Refusal = Refusal.INVALID
    ) -> None:
        super().__init__(message)
        self.code, self.refusal = code, refusal


class ResetData(BaseModel):
    """What `reset` takes (OpenEnv's ResetRequest fields `seed` and `episode_id`, plus Assay's)."""

    model_config = ConfigDict(extra="forbid")

    item: dict[str, Any] | None = Field(None, description="An item as in /v1/rewards, without the response.")
    index: int | None = Field(None, ge=0, description="The task file's item at this index (no `item`).")
    seed: int | None = Field(None, ge=0, description="Draw the task file's item with this seed (no `item`).")
    episode_id: str | None = Field(
        None, max_length=255, description="Name the episode (default: its session id)."
    )
    tools: list[str] | None = Field(
        None, min_length=1, description="The session's tools (default: those the item's task brings)."
    )
    limits: SessionLimits = Field(default_factory=SessionLimits)


class AssayAction(BaseModel):
    """One step: a tool call, or the final answer."""

    model_config = ConfigDict(extra="forbid")

    tool: str | None = Field(None, description="A tool of the episode's session: python, sql, run_tests, ...")
    arguments: Any = Field(None, description="The tool's arguments (an object, or its JSON text).")
    answer: str | None = Field(None, description="The final response: verified, rewarded, ends the episode.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="OpenEnv's action metadata (unused).")

    @model_validator(mode="after")
    def _one_kind(self) -> AssayAction:
        if (self.tool is None) == (self.answer is None):
            raise ValueError('an action is either {"tool", "arguments"} or {"answer"}')
        return self


class AssayObservation(BaseModel):
    """What reset and step answer; `done`, `reward` and `metadata` are OpenEnv's Observation fields."""

    output: str = Field("", description="The tool's output; for an answer, the verdict's reason.")
    status: str = Field(
        description="reset: ready; a tool call: the step status (ok, tool_error, invalid_call,"
        " session_ended, error) or session_gone; an answer: the Result's status (ok, invalid, timeout,"
        " error)."
    )
    step: int = Field(0, description="Tool calls the session has run.")
    reason: str | None = None
    prompt: str | None = Field(None, description="reset: the item's prompt.")
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="reset: OpenAI function-tool schemas."
    )
    done: bool = False
    reward: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        """OpenEnv's serialised form (`serialize_observation`): reward and done beside the observation,
        metadata in it and, when not empty, beside it too."""
        body: dict[str, Any] = {
            "observation": self.model_dump(exclude={"reward", "done"}),
            "reward": self.reward,
            "done": self.done,
        }
        if self.metadata:
            body["metadata"] = self.metadata
        return body


class AssayState(BaseModel):
    episode_id: str | None = None
    step_count: int = 0
    done: bool = False
    item_id: str | None = None
    tools: list[str] = Field(default_factory=list)


def parse(model: type[BaseModel], raw: Any, what: str) -> Any:
    """`raw` as `model`, or an EpisodeError naming the first problem."""
    try:
        return model.model_validate(raw if raw is not None else {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        raise EpisodeError(f"{what}{'.' + where if where else ''}: {message}") from None


def session_item(raw: Any, registry: Registry | None = None) -> Item:
    for field in ("response", "messages"):  # the answer action is the model's text, and all that is scored
        if isinstance(raw, dict) and field in raw:
            raise EpisodeError(f"item.{field}: an episode's response comes with the answer action")
    try:
        return parse_item(raw, registry)
    except ItemError as exc:
        raise EpisodeError(f"item: {exc}") from None


class TaskFile:
    """The items `reset` draws from when the client sends none (JSON Lines, read once, no responses),
    each read with its task's own fields (`registry`)."""

    def __init__(self, path: Path | None, registry: Registry) -> None:
        self.path = path
        self.registry = registry
        self._items: list[Item] | None = None
        self._turn = itertools.count()

    def _load(self) -> list[Item]:
        if self.path is None:
            raise EpisodeError("reset needs an `item`: this server has no task file (sessions.openenv_items)")
        if self._items is None:
            try:
                lines = [line for line in self.path.read_text().splitlines() if line.strip()]
                items = [session_item(json.loads(line), self.registry) for line in lines]
            except (OSError, ValueError, EpisodeError) as exc:
                message = f"the task file {self.path} cannot be used: {exc}"
                raise EpisodeError(message, "EXECUTION_ERROR", Refusal.UNAVAILABLE) from None
            if not items:
                raise EpisodeError(
                    f"the task file {self.path} holds no items", "EXECUTION_ERROR", Refusal.UNAVAILABLE
                )
            self._items = items
        return self._items

    def pick(self, index: int | None, seed: int | None) -> Item:
        items = self._load()
        if index is not None:
            if index >= len(items):
                raise EpisodeError(f"index {index} is past the task file's {len(items)} items")
            return items[index]
        if seed is not None:
            return items[random.Random(seed).randrange(len(items))]
        return items[next(self._turn) % len(items)]


class Episode:
    """At most one open session at a time; calls are serialised (one client drives one episode)."""

    def __init__(self, engine: Service, episode_id: str | None = None) -> None:
        self.engine = engine
        self.episode_id = episode_id
        self.session_id: str | None = None
        self.item: Item | None = None
        self.tools: list[str] = []
        self.steps = 0
        self.done = False
        self._lock = asyncio.Lock()

    async def reset(self, data: ResetData, tasks: TaskFile) -> AssayObservation:
        async with self._lock:
            item = (
                session_item(data.item, self.engine.registry)
                if data.item is not None
                else tasks.pick(data.index, data.seed)
            )
            await self._end()
            try:
                tools = data.tools or task_tools(self.engine.registry.lookup(item.task))
                info = await self.engine.open_session(item, tools, data.limits)
            except ItemError as exc:  # an unknown task or tool, a tool that cannot serve it, limits too big
                raise EpisodeError(str(exc)) from None
            except SessionsFull as exc:
                raise EpisodeError(str(exc), "CAPACITY_REACHED", Refusal.SESSIONS_FULL) from None
            except SandboxError as exc:
                raise EpisodeError(
                    f"cannot start the session's sandbox: {exc}", "EXECUTION_ERROR", Refusal.UNAVAILABLE
                ) from None
            self.session_id, self.item, self.tools = info.session_id, item, list(tools)
            self.episode_id = data.episode_id or self.episode_id or info.session_id
            self.steps, self.done = 0, False
            return AssayObservation(
                status="ready",
                prompt=item.prompt,
                tools=info.tools,
                metadata={"episode_id": self.episode_id, "expires_at": info.expires_at},
            )

    async def step(self, action: AssayAction) -> AssayObservation:
        async with self._lock:
            if self.session_id is None:
                done = "the episode is done" if self.done else "no episode"
                raise EpisodeError(f"{done}: send reset first", "SESSION_ERROR", Refusal.EPISODE_DONE)
            self.steps += 1
            if action.answer is not None:
                return await self._answer(self.session_id, action.answer)
            try:
                result = await self.engine.session_step(self.session_id, str(action.tool), action.arguments)
            except SessionGone as exc:  # its tools are gone; its answer is verified while its record lasts
                return AssayObservation(
                    output=f"[session ended: {exc.reason}]", status="session_gone", reason=exc.reason
                )
            return AssayObservation(
                output=result.observation,
                status=result.status,
                step=result.step,
                reason=result.reason,
                metadata={"elapsed_ms": result.elapsed_ms, "truncated": result.truncated},
            )

    async def _answer(self, session_id: str, answer: str) -> AssayObservation:
        try:
            self.engine.admit(1)
        except QueueFullError as exc:
            self.steps -= 1
            raise EpisodeError(str(exc), "CAPACITY_REACHED", Refusal.SESSIONS_FULL) from None
        try:
            result = await self.engine.verify_session(session_id, answer)
        except SessionGone as exc:
            return await self._gone(exc)
        finally:
            self.engine.release(1)
        await self._end()
        self.done = True
        return AssayObservation(
            output=result.reason or "",
            status=result.status.value,
            step=int(result.details.get("session", {}).get("steps", 0)),
            reason=None if result.status.value == "ok" else result.reason,
            done=True,
            reward=result.reward,
            metadata={"result": result.model_dump(mode="json")},
        )

    async def _gone(self, exc: SessionGone) -> AssayObservation:
        """The answer came after the session's record expired: the episode is over, unscored."""
        await self._end()
        self.done = True
        return AssayObservation(
            output=f"[session ended: {exc.reason}]", status="session_gone", reason=exc.reason, done=True
        )

    def state(self) -> AssayState:
        return AssayState(
            episode_id=self.episode_id,
            step_count=self.steps,
            done=self.done,
            item_id=self.item.id if self.item is not None else None,
            tools=self.tools,
        )

    async def close(self) -> None:
        async with self._lock:
            await self._end()

    async def _end(self) -> None:
        if self.session_id is not None:
            session_id, self.session_id = self.session_id, None
            await self.engine.close_session(session_id)
