"""OpenRLHF's multi-turn agent executor over Assay sessions: the `--agent_func_path` file's two classes.

    # agent.py, given to openrlhf.cli.train_ppo_ray as --agent_func_path agent.py
    from assay.integrations.openrlhf_agent import AgentExecutor, AgentInstance  # noqa: F401

OpenRLHF 0.11.2's `MultiTurnAgentExecutor` makes one `AgentInstance` per prompt (one trajectory), calls
`step` after each generation and appends its `environment_feedback` to the context. It never tells the
instance that a trajectory ran out of tokens, and it does not catch what `step` raises. So:

- One trajectory, one session, opened on its first tool call and held by the instance, with `tools` (default:
  the tools the item's task brings, as the server lists them; python when it brings none): a turn with a
  call (its last `<tool_call>{"name", "arguments"}</tool_call>`, else its last `<tool>...</tool>` for a
  tool of the session, else its last fenced code block, run by the session's one tool) runs it and answers
  the output between `<tool_response>` tags (a traceback is an output, as in any session). A call that
  cannot be run (malformed, or code that names no tool in a session of several) answers why, not done.
- A turn without a call is the answer: the model's own turns, joined, are scored (`POST /v1/rewards`,
  task `ASSAY_OPENRLHF_TASK`, the label as reference); what the tools printed is never scored. The session
  is closed then, or when OpenRLHF drops an instance that never answered (out of tokens).
- A full server is waited for (the client honours Retry-After, then this waits `OPEN_WAIT_S` at most);
  anything else of ours (unreachable, a session the server ended, an unscorable answer) raises out of
  `step`, which fails the rollout with Assay's reason: OpenRLHF has no way to mask a sample.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import weakref
from typing import Any, ClassVar

from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from assay.client import AssayClient
from assay.errors import ClientError, ServiceError
from assay.integrations.clients import (
    alisted_tasks,
    assay_url,
    reward_or_raise,
    session_tools,
    shared_session_client,
)
from assay.rl_client.tool_calls import ActionCalls, BadCall

__all__ = ["AgentExecutor", "AgentInstance", "wait_closed"]

OPEN_WAIT_S = 3600.0  # the most a trajectory's first call waits for a free session
_REOPEN_S = 1.0
_closing: set[asyncio.Task[None]] = set()


def _client() -> AssayClient:
    return shared_session_client(assay_url())


class AgentInstance(AgentInstanceBase):
    """One trajectory: its label, the model's turns so far and its session (opened on the first call)."""

    item: ClassVar[dict[str, Any]] = {"task": "math"}  # the session's item; the label is its reference
    tools: ClassVar[list[str] | None] = None  # the session's tools; None: those the item's task brings

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.label: str | None = None
        self.turns: list[str] = []
        self.session_id: str | None = None
        self._tools: list[str] = []
        self._calls: ActionCalls | None = None
        self._dropped: weakref.finalize[Any, Any] | None = None

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        self.label = states.get("label")
        return states

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        import torch

        action = str(states["action_text"])
        self.turns.append(action)
        call = (await self._reader()).parse(action)
        if isinstance(call, BadCall):  # the policy's mistake: shown to it, the trajectory goes on
            feedback = f"\n<tool_response>\n[{call.reason}]\n</tool_response>\n"
            return {"rewards": torch.tensor(0.0), "environment_feedback": feedback, "done": False}
        if call is None:
            reward = await self._score("\n".join(self.turns))
            await self._close()
            return {
                "rewards": torch.tensor(reward),
                "scores": torch.tensor(reward),
                "environment_feedback": "",
                "done": True,
            }
        if self.session_id is None:
            self.session_id = await self._open()
            loop = asyncio.get_running_loop()
            self._dropped = weakref.finalize(self, _close_soon, self.session_id, loop)
        step = await _client().astep(self.session_id, *call)  # a session the server ended raises
        feedback = f"\n<tool_response>\n{step.observation}\n</tool_response>\n"
        return {"rewards": torch.tensor(0.0), "environment_feedback": feedback, "done": False}

    async def _reader(self) -> ActionCalls:
        """How this trajectory's turns are read: over its session's tools (`tools`, else `task_tools`)."""
        if self._calls is None:
            listed = await alisted_tasks(assay_url())
            self._tools = session_tools(listed, self.tools, self.item["task"])
            offered = {schema["function"]["name"]: schema for schema in listed["tools"]}
            self._calls = ActionCalls([offered[name] for name in self._tools if name in offered])
        return self._calls

    def _reference(self) -> dict[str, Any]:
        return {**self.item, "reference": self.label} if self.label is not None else dict(self.item)

    async def _open(self) -> str:
        deadline = time.monotonic() + OPEN_WAIT_S
        while True:
            try:
                return (await _client().aopen_session(self._reference(), self._tools)).session_id
            except ServiceError as exc:
                if exc.status_code != 429 or time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(min(_REOPEN_S, max(0.0, deadline - time.monotonic())))

    async def _score(self, response: str) -> float:
        task = os.environ.get("ASSAY_OPENRLHF_TASK", self.item.get("task", "math"))
        item = {**self._reference(), "task": task, "response": response}
        (result,) = await _client().ascore([item])
        return reward_or_raise(result)

    async def _close(self) -> None:
        session_id, self.session_id = self.session_id, None
        if self._dropped is not None:
            self._dropped.detach()
        if session_id is not None:
            with contextlib.suppress(ClientError):
                await _client().aclose_session(session_id)


def _close_soon(session_id: str, loop: asyncio.AbstractEventLoop) -> None:
    """An instance OpenRLHF dropped: close its session (idempotent after an answer closed it)."""

    def close() -> None:
        task = loop.create_task(_close_session(session_id))
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    with contextlib.suppress(RuntimeError):  # the loop is gone (the process is ending): the TTL ends it
        loop.call_soon_threadsafe(close)


async def _close_session(session_id: str) -> None:
    with contextlib.suppress(ClientError):
        await _client().aclose_session(session_id)


async def wait_closed() -> None:
    """Wait for the sessions of dropped instances to be closed (their DELETEs are in flight)."""
    await asyncio.sleep(0)
    while _closing:
        await asyncio.gather(*list(_closing))


class AgentExecutor(MultiTurnAgentExecutor):
    """OpenRLHF's multi-turn executor with Assay's `AgentInstance`."""

    def __init__(self) -> None:
        super().__init__(AgentInstance)
