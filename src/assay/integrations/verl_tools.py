"""verl tools backed by Assay sessions: a `BaseTool` subclass loadable from a verl tool-config YAML.

    tools:
      - class_name: assay.integrations.verl_tools.AssaySessionTool
        config: {type: native, url: "http://127.0.0.1:8000", tool: python, limits: {max_steps: 8}}
      - class_name: assay.integrations.verl_tools.AssaySessionTool
        config: {type: native, url: "http://127.0.0.1:8000", tool: sql}

Any session tool the server offers (`GET /v1/tasks` lists them) is one entry: `config.tool` names it (else
the name of a `tool_schema` in the YAML, else python), and its schema is the server's, the one the
session validates the arguments against (a hand-written `tool_schema` only names the tool). The
arguments verl parses from the model's call are the step's arguments, whatever the tool.

verl calls `create` -> `execute` -> `release` around each tool call. In verl 0.9.1 its `ToolAgentLoop`
creates and releases an instance for every single call, so a tool that kept its state per instance would
forget it between two calls of one trajectory. This adapter therefore keeps one Assay session per
trajectory, keyed by the agent loop's `agent_data.request_id` (falling back to the instance id when verl
passes no agent data, as its older SGLang rollout does); `release` of a per-call instance leaves the
session open, and the session's TTL ends it (or `close_trajectory`). The item comes from the dataset's
`tools_kwargs.<tool>.create_kwargs.item` (else `config.item`). `calc_reward` verifies the trajectory's
final response through `/v1/sessions/{id}/verify`, the same verdict as `/v1/rewards`, and raises
`RewardUnavailable` rather than inventing a 0.0 when there is no verdict.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import httpx
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from assay.errors import RewardUnavailable

__all__ = [
    "AssaySessionTool",
]


class AssaySessionTool(BaseTool):
    """One Assay session tool (`config.tool`, default python) as a verl native tool."""

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None) -> None:
        self.url = str(config.get("url", "http://127.0.0.1:8000")).rstrip("/")
        named = tool_schema.function.name if tool_schema is not None else "python"
        self.tool = str(config.get("tool") or named)
        self.limits = dict(config.get("limits") or {})
        self.default_item = dict(config.get("item") or {"task": "math"})
        self.timeout_s = float(config.get("timeout_s", 300.0))
        self._items: dict[str, dict[str, Any]] = {}  # instance id -> item (from create_kwargs)
        self._sessions: dict[str, str] = {}  # trajectory key -> Assay session id
        super().__init__(config, OpenAIFunctionToolSchema.model_validate(self._schema()))

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=self.timeout_s)

    def _schema(self) -> dict[str, Any]:
        """The tool's schema as the server describes it (GET /v1/tasks)."""
        tools = httpx.get(f"{self.url}/v1/tasks", timeout=self.timeout_s).json()["tools"]
        for schema in tools:
            if schema["function"]["name"] == self.tool:
                return dict(schema)
        raise ValueError(f"the Assay server at {self.url} has no tool {self.tool!r}")

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        instance_id = instance_id or str(uuid4())
        create_kwargs = kwargs.get("create_kwargs") or {}
        self._items[instance_id] = dict(create_kwargs.get("item") or self.default_item)
        return instance_id, ToolResponse()

    async def _session(self, key: str, instance_id: str) -> str:
        if key not in self._sessions:
            item = self._items.get(instance_id, self.default_item)
            body = {"item": item, "tools": [self.tool], "limits": self.limits}
            async with self._client() as client:
                response = await client.post("/v1/sessions", json=body)
            response.raise_for_status()
            self._sessions[key] = response.json()["session_id"]
        return self._sessions[key]

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        """One step; the observation is the tool response (a traceback too), the step reward 0."""
        key = _trajectory(instance_id, kwargs)
        session_id = await self._session(key, instance_id)
        async with self._client() as client:
            response = await client.post(
                f"/v1/sessions/{session_id}/step", json={"tool": self.tool, "arguments": parameters}
            )
        if response.status_code in (404, 410):
            reason = response.json()["error"].get("reason", "gone")
            return ToolResponse(text=f"[session ended: {reason}]"), 0.0, {"status": "session_gone"}
        response.raise_for_status()
        step = response.json()
        metrics = {"status": step["status"], "step": step["step"], "elapsed_ms": step["elapsed_ms"]}
        return ToolResponse(text=step["observation"]), 0.0, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The verdict on `kwargs["response"]` (the trajectory's final answer) for its session."""
        key = _trajectory(instance_id, kwargs)
        session_id = await self._session(key, instance_id)
        async with self._client() as client:
            response = await client.post(
                f"/v1/sessions/{session_id}/verify", json={"response": str(kwargs.get("response", ""))}
            )
        response.raise_for_status()
        result = response.json()
        if result["status"] != "ok" or result["reward"] is None:
            raise RewardUnavailable(
                f"no reward for session {session_id}: {result['status']}: {result['reason']}"
            )
        return float(result["reward"])

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the per-call instance; the trajectory's session stays for its next call (TTL ends it).
        An instance that was its own trajectory (no agent data) closes its session here."""
        self._items.pop(instance_id, None)
        if instance_id in self._sessions:
            await self.close_trajectory(instance_id)

    async def close_trajectory(self, key: str) -> None:
        """End the session of one trajectory now (`agent_data.request_id`, or the instance id)."""
        session_id = self._sessions.pop(key, None)
        if session_id is not None:
            async with self._client() as client:
                await client.delete(f"/v1/sessions/{session_id}")


def _trajectory(instance_id: str, kwargs: dict[str, Any]) -> str:
    agent_data = kwargs.get("agent_data")
    request_id = getattr(agent_data, "request_id", None)
    return str(request_id) if request_id else instance_id
