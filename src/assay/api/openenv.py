"""OpenEnv's environment server protocol over Assay sessions, under `/openenv` (issue 25).

What OpenEnv 0.10's own server (`openenv.core.env_server.http_server`) serves, and so what its client
speaks:

- `WS /openenv/ws`: the stateful form, and the only one OpenEnv's `EnvClient` / `GenericEnvClient` use
  (`base_url=".../openenv"`; it appends `/ws`). Frames `{"type": "reset", "data": {...}}`,
  `{"type": "step", "data": <action>}`, `{"type": "state"}`, `{"type": "close"}`; answers
  `{"type": "observation", "data": {"observation", "reward", "done", "metadata"?}}`,
  `{"type": "state", "data": {...}}`, `{"type": "error", "data": {"message", "code"}}`. One connection is
  one episode (its own session); the session is closed on `close`, on the next `reset` and when the
  connection drops.
- `POST /openenv/reset`, `POST /openenv/step`, `GET /openenv/state`: OpenEnv's HTTP form. OpenEnv's own
  server builds a fresh environment for every HTTP request, so there a step cannot continue what a
  reset began. Here `reset` answers an `episode_id` (in `metadata`), and `step` (`{"action", "episode_id"}`)
  and `state` (`?episode_id=`) continue that episode; episodes are kept in a bounded table on the app.
- `GET /openenv/health`, `/openenv/schema` (the action, observation and state JSON schemas),
  `/openenv/metadata`.

OpenEnv's MCP routes (`/mcp`), its task API (`/{env}/tasks`) and its web UI are not served.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import OrderedDict
from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException, Query, Request, WebSocket
from fastapi.websockets import WebSocketDisconnect, WebSocketState
from pydantic import BaseModel, ConfigDict, Field

from assay import __version__
from assay.api.body import BoundedRoute
from assay.api.codes import Refusal, refuse
from assay.api.openenv_episode import (
    AssayAction,
    AssayObservation,
    AssayState,
    Episode,
    EpisodeError,
    ResetData,
    TaskFile,
    parse,
)
from assay.api.protocol import error_responses
from assay.engine.service import Service

log = logging.getLogger("assay.openenv")
router = APIRouter(prefix="/openenv", tags=["trainers"], route_class=BoundedRoute)
_KEPT = 100_000  # HTTP episodes remembered; the oldest is closed past it
ERRORS: dict[int | str, dict[str, Any]] = {
    **error_responses(
        Refusal.BAD_REQUEST,
        Refusal.NOT_FOUND,
        Refusal.EPISODE_DONE,
        Refusal.TOO_LARGE,
        Refusal.INVALID,
        Refusal.SESSIONS_FULL,
        Refusal.UNAVAILABLE,
        NOT_FOUND="No such episode: start one with POST /openenv/reset.",
    ),
}
_ResetBody = Annotated[dict[str, Any] | None, Body()]  # optional: OpenEnv clients may post none


class StepBody(BaseModel):
    """OpenEnv's StepRequest, plus the episode it continues."""

    model_config = ConfigDict(extra="forbid")

    action: dict[str, Any]
    episode_id: str = Field(min_length=1, description="The episode_id reset answered.")
    timeout_s: float | None = Field(None, description="Accepted, unused: the session's call_wall_s applies.")
    request_id: str | None = None


def _engine(app: Any) -> Service:
    engine: Service = app.state.engine
    return engine


def _tasks(app: Any) -> TaskFile:
    tasks: TaskFile | None = getattr(app.state, "openenv_tasks", None)
    if tasks is None:
        path = app.state.settings.sessions.openenv_items
        tasks = app.state.openenv_tasks = TaskFile(path, _engine(app).registry)
    return tasks


def _episodes(app: Any) -> OrderedDict[str, Episode]:
    table: OrderedDict[str, Episode] | None = getattr(app.state, "openenv_episodes", None)
    if table is None:
        table = app.state.openenv_episodes = OrderedDict()
    return table


def _http(exc: EpisodeError) -> HTTPException:
    return refuse(exc.refusal, str(exc))


@router.post("/reset", responses=ERRORS)
async def reset(request: Request, body: _ResetBody = None) -> dict[str, Any]:
    """Start an episode (or restart the one named by `episode_id`); `metadata.episode_id` names it."""
    table = _episodes(request.app)
    try:
        data = parse(ResetData, body, "reset")
        episode = table.get(data.episode_id) if data.episode_id else None
        if episode is None:
            episode = Episode(_engine(request.app), data.episode_id or None)
            if data.episode_id:  # named: a concurrent reset of the same name finds this one
                table[data.episode_id] = episode
        observation = await episode.reset(data, _tasks(request.app))
    except EpisodeError as exc:
        raise _http(exc) from None
    assert episode.episode_id is not None
    table[episode.episode_id] = episode
    table.move_to_end(episode.episode_id)
    while len(table) > _KEPT:
        _, oldest = table.popitem(last=False)
        await oldest.close()
    return observation.wire()


def _episode(request: Request, episode_id: str) -> Episode:
    """The HTTP form's episode by its id (the schema requires a non-empty one on step and state)."""
    episode = _episodes(request.app).get(episode_id)
    if episode is None:
        raise refuse(Refusal.NOT_FOUND, f"no episode {episode_id!r}: start one with POST /openenv/reset")
    return episode


@router.post("/step", responses=ERRORS)
async def step(request: Request, body: StepBody) -> dict[str, Any]:
    """One action of the episode: a tool call, or the answer (reward, done)."""
    episode = _episode(request, body.episode_id)
    try:
        observation = await episode.step(parse(AssayAction, body.action, "action"))
    except EpisodeError as exc:
        raise _http(exc) from None
    return observation.wire()


@router.get("/state", response_model=AssayState, responses=ERRORS)
async def state(request: Request, episode_id: Annotated[str, Query(min_length=1)]) -> AssayState:
    return _episode(request, episode_id).state()


@router.get("/health")
async def health() -> dict[str, str]:
    return {"status": "healthy"}


@router.get("/schema")
async def schema() -> dict[str, Any]:
    observation = AssayObservation.model_json_schema()
    return {
        "action": AssayAction.model_json_schema(),
        "observation": observation,
        "state": AssayState.model_json_schema(),
    }


@router.get("/metadata")
async def metadata() -> dict[str, Any]:
    return {
        "name": "assay",
        "description": "Assay sessions: tools (python, sql, run_tests) during the episode, the final"
        " answer verified as /v1/rewards scores it.",
        "version": __version__,
        "documentation_url": None,
    }


def _error(message: str, code: str) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code}}


async def _answer(episode: Episode, message: Any, app: Any) -> dict[str, Any] | None:
    """The answer frame to one client frame; None for `close`."""
    kind = message.get("type") if isinstance(message, dict) else None
    try:
        if kind == "reset":
            data = parse(ResetData, message.get("data"), "reset")
            return {"type": "observation", "data": (await episode.reset(data, _tasks(app))).wire()}
        if kind == "step":
            action = parse(AssayAction, message.get("data"), "action")
            return {"type": "observation", "data": (await episode.step(action)).wire()}
        if kind == "state":
            return {"type": "state", "data": episode.state().model_dump()}
        if kind == "close":
            return None
    except EpisodeError as exc:
        return _error(str(exc), exc.code)
    except Exception as exc:  # our failure: the client gets a frame (as OpenEnv's server sends), we the trace
        log.exception("openenv: a %s frame failed", kind)
        return _error(f"the server failed ({type(exc).__name__}); its log has the details", "EXECUTION_ERROR")
    return _error(f"unknown message type {kind!r}: reset, step, state or close", "UNKNOWN_TYPE")


@router.websocket("/ws")
async def episode_socket(websocket: WebSocket) -> None:
    """One connection, one episode; its session ends with the connection."""
    await websocket.accept()
    app = websocket.app
    episode = Episode(_engine(app))
    limit = app.state.settings.max_body_bytes
    try:
        while True:
            frame = await websocket.receive()
            if frame["type"] == "websocket.disconnect":
                break
            raw: str | bytes = frame.get("text") or frame.get("bytes") or b""
            answer: dict[str, Any] | None
            size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
            if size > limit:
                answer = _error(f"message exceeds {limit} bytes (ASSAY_MAX_BODY_BYTES)", "VALIDATION_ERROR")
            else:
                try:
                    message = json.loads(raw)
                except ValueError as exc:  # also bytes that are not UTF-8
                    answer = _error(f"Invalid JSON: {exc}", "INVALID_JSON")
                else:
                    answer = await _answer(episode, message, app)
            if answer is None:
                break
            await websocket.send_text(json.dumps(answer))
    except WebSocketDisconnect:
        pass
    finally:
        await episode.close()
        if websocket.client_state == WebSocketState.CONNECTED:
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await websocket.close()
