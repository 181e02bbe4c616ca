"""A Prime Intellect `verifiers` (0.4, the v1 API) environment over Assay: items in, rewards from Assay's
verdicts, tools from an Assay session, run by verifiers' own rollout and scoring code.

verifiers 0.4 splits an environment into a `Taskset` (the tasks and their `@vf.reward` methods), a
`Toolset` (tools served over MCP to the harness that runs the model) and an `Env` (how a task becomes an
episode). Here:

- `AssayTaskset` reads Assay items (JSON Lines, without responses) and yields one `AssayTask` per item.
- `AssayTask.setup` opens one Assay session per rollout on the item and keeps its id in the rollout's
  `vf.State` (never in the prompt: the policy cannot name another session). Its one reward, `assay`,
  verifies the final reply through the session (`POST /v1/sessions/{id}/verify`, the `/v1/rewards`
  path) and closes it; a result that is not `ok` raises, so verifiers leaves the reward `None` (its
  "scoring did not run") and records the reason on the trace, never a 0.
- `AssayToolset` is a taskset-wide MCP server (one process for the run) offering the session's tools
  (`assay_python`, `assay_sql`, ...: the schemas the server lists in `GET /v1/tasks`); each call steps
  the calling rollout's own session, found through verifiers' signed per-rollout state channel.
- `AssayEnv` is verifiers' single-agent episode with the session closed when the rollout ends whatever
  happened (a failed setup, harness or reward included); its default agent is verifiers' `null` harness
  (a chat loop with MCP tools and no host execution) on the local subprocess runtime.

verifiers loads a taskset by the id of a top-level module that exports one `Taskset` (and here one `Env`)
in `__all__`, so a run names a two-line module of its own (docs/verifiers.md). Needs `verifiers` (its own
environment: it pins mcp==2.0.0 and openai>=2.54); `import assay` never imports this module.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from assay.client.sessions import SessionStep
from assay.errors import ClientError, ServiceError, SessionGoneError
from assay.integrations.clients import (
    aclose_loop_clients,
    alisted_tasks,
    reward_or_raise,
    session_tools,
    shared_session_client,
    task_tools,
)
from assay.integrations.signatures import JSON_TYPES, parameters

__all__ = ["AssayEnv", "AssayTaskset"]

DEFAULT_URL = "http://127.0.0.1:8000"


class AssayState(vf.State):
    """The rollout's Assay session, shared between the rollout (host) and the tool server."""

    session_id: str = ""


class AssayData(vf.TaskData):
    """One Assay item (without `response`): `prompt` is what the model sees, `item` what Assay scores."""

    item: dict[str, Any]


class AssayTaskConfig(vf.TaskConfig):
    url: str = DEFAULT_URL
    tools: list[str] | None = None
    """The session's tools; None: the tools the item's task brings (`GET /v1/tasks`; python when none)."""
    limits: dict[str, Any] = Field(default_factory=dict)


class AssayToolsetConfig(vf.SharedToolsetConfig):
    assay_url: str = DEFAULT_URL
    tools: list[str] | None = None
    """The tools offered; None: those of `tasks` (the taskset's items' tasks), each task's own."""
    tasks: list[str] = Field(default_factory=list)


class AssayTasksetConfig(vf.TasksetConfig):
    items: str = ""
    """JSON Lines of Assay items without responses (each needs a `prompt`)."""
    task: AssayTaskConfig = AssayTaskConfig()


class AssayTask(vf.Task[AssayData, AssayState, AssayTaskConfig]):
    """An Assay item as a verifiers task: a session per rollout, Assay's verdict as the reward."""

    async def setup(self, trace: vf.Trace) -> None:
        listed = await alisted_tasks(self.config.url)
        tools = session_tools(listed, self.config.tools, self.data.item.get("task"))
        client = shared_session_client(self.config.url)
        opened = await client.aopen_session(self.data.item, tools, self.config.limits)
        trace.state.session_id = opened.session_id

    @vf.reward
    async def assay(self, trace: vf.Trace) -> float:
        """Assay's reward for the final reply (tool output is never scored); raises when unscored."""
        client = shared_session_client(self.config.url)
        session_id = trace.state.session_id
        try:
            result = await client.averify_session(session_id, trace.last_reply)
        finally:
            await client.aclose_session(session_id)
        if result.correct is not None:  # graded tasks (judge, prm) have no right or wrong
            trace.record_metric("assay_correct", float(result.correct))
        return reward_or_raise(result)


class AssayToolset(vf.Toolset[AssayToolsetConfig, AssayState]):
    """The Assay session tools as MCP tools; a call steps the calling rollout's session."""

    TOOL_PREFIX = "assay"

    async def setup(self) -> None:
        listed = await alisted_tasks(self.config.assay_url)
        offered = {schema["function"]["name"]: schema["function"] for schema in listed["tools"]}
        names = self.config.tools
        if names is None:  # every tool a session of the taskset's tasks holds, once
            names = list(
                dict.fromkeys(n for task in self.config.tasks or ["math"] for n in task_tools(listed, task))
            )
        missing = [name for name in names if name not in offered]
        if missing:
            raise ValueError(f"the Assay server offers no tool {missing}; it has {sorted(offered)}")
        self._schemas = [offered[name] for name in names]

    def register(self, mcp: Any) -> None:
        for function in self._schemas:
            fn = _tool_function(self, function)
            mcp.add_tool(self._with_state(fn), name=function["name"], description=function.get("description"))

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """One step of this rollout's session; the policy's failures and refusals are observations."""
        session_id = self.state.session_id
        if not session_id:
            return "[no Assay session for this rollout]"
        client = shared_session_client(self.config.assay_url)
        try:
            step: SessionStep = await client.astep(session_id, tool, arguments)
        except SessionGoneError as exc:
            return f"[session ended: {exc.reason}]"
        except ServiceError as exc:
            if exc.status_code is None or exc.status_code >= 500 or exc.status_code == 429:
                raise  # our side, not the policy's: the call fails, it does not read as an observation
            return f"[the call was refused: {exc}]"  # too large, malformed: the policy's doing
        return step.observation


def _tool_function(toolset: AssayToolset, function: dict[str, Any]) -> Any:
    """An async function whose signature is the tool's JSON schema (what MCP advertises)."""
    properties, required, ordered = parameters(function)
    signature = inspect.Signature(
        [
            inspect.Parameter(
                arg,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=JSON_TYPES.get(str(properties[arg].get("type")), Any),
                **({} if arg in required else {"default": None}),
            )
            for arg in ordered
        ],
        return_annotation=str,
    )
    name = function["name"]

    async def tool(**arguments: Any) -> str:
        return await toolset.call(name, {k: v for k, v in arguments.items() if v is not None})

    tool.__name__ = tool.__qualname__ = name
    tool.__signature__ = signature  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()} | {"return": str}
    tool.__doc__ = function.get("description")
    return tool


class AssayTaskset(vf.Taskset[AssayTask, AssayTasksetConfig]):
    """Assay items from `items` (JSON Lines), with the session tools as a taskset-wide tool server."""

    def load(self) -> list[AssayTask]:
        return [
            AssayTask(AssayData(id=item.get("id"), prompt=item["prompt"], item=item), self.config.task)
            for item in _items(self.config.items)
        ]

    @classmethod
    def toolsets(cls, config: AssayTasksetConfig) -> list[vf.Toolset]:
        tasks = [] if config.task.tools is not None else _tasks(config.items)
        tools = AssayToolsetConfig(assay_url=config.task.url, tools=config.task.tools, tasks=tasks)
        return [AssayToolset(tools)]


def _items(path: str) -> list[dict[str, Any]]:
    """The Assay items of a JSON Lines file, each with a `prompt` and no `response`."""
    if not path:
        raise ValueError("AssayTaskset needs items: --env.taskset.items <a JSON Lines file of Assay items>")
    items = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        if not isinstance(item, dict) or "response" in item or not isinstance(item.get("prompt"), str):
            raise ValueError(f"{path}: an Assay item with a `prompt` and no `response`: {line[:200]}")
        items.append(item)
    return items


def _tasks(path: str) -> list[str]:
    """The tasks the items name, in first-seen order (an item naming none is math's)."""
    return list(dict.fromkeys(str(item.get("task") or "math") for item in _items(path)))


class AssayEnvConfig(vf.SingleAgentEnvConfig):
    """The single seat, by default verifiers' `null` harness (model calls and MCP tools only: the
    policy's code runs in Assay's sandbox, never on this host) on the local subprocess runtime."""

    agent: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime=vf.SubprocessConfig())


class AssayEnv(vf.Env[AssayEnvConfig]):
    """verifiers' single-agent episode, with each rollout's Assay session closed when it ends."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        traces: list[vf.Trace] = []
        try:
            await agents.agent.run(task, on_trace=traces.append)
        finally:
            url = task.config.url
            for trace in traces:  # every attempt's (a retried rollout mints a new trace)
                session_id = getattr(trace.state, "session_id", "")
                if session_id:  # closing twice is fine; Assay unreachable: its TTL ends the session
                    with contextlib.suppress(ClientError):
                        await shared_session_client(url).aclose_session(session_id)

    async def stop(self) -> None:
        await aclose_loop_clients()


if __name__ == "__main__":  # verifiers starts a shared tool server as `python -m <its module>`
    AssayToolset.run()
