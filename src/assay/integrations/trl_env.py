"""A TRL environment over an Assay python session, for `GRPOTrainer(environment_factory=...)`.

TRL 1.16 builds one environment per rollout from `environment_factory`, calls `reset(**row)` with the
dataset row before generation, and offers every other public method as a tool (its schema from the
method's signature and docstring, through transformers' `get_json_schema`). So this class has exactly
two public methods: `reset`, which opens a fresh Assay session on the row's item fields (and ends the
previous one), and `python`, the session's tool. There is no `get_reward`: TRL calls it without the
completion, and a verdict needs the final response; score with Assay's TRL reward function
(`assay.integrations.trl`), the same verdict path as `verify`. TRL ships no HTTP client for
OpenEnv servers in 1.16, so this speaks Assay's own session routes (with OpenEnv installed, its client
drives the same sessions through `/openenv`: docs/sessions.md).

    from functools import partial
    GRPOTrainer(..., environment_factory=partial(AssayPythonEnv, url="http://127.0.0.1:8000"))
"""

from __future__ import annotations

from typing import Any

import httpx

from assay.types import Item

__all__ = [
    "AssayPythonEnv",
]

_ITEM_FIELDS = set(Item.model_fields) - {"response", "id"}


class AssayPythonEnv:
    def __init__(self, url: str = "http://127.0.0.1:8000", limits: dict[str, Any] | None = None) -> None:
        self._client = httpx.Client(base_url=url.rstrip("/"), timeout=300.0)
        self._limits = dict(limits or {})
        self._session: str | None = None

    def reset(self, **row: Any) -> str | None:
        """Start a new rollout: a fresh session on the row's item fields (task, reference, tests, ...)."""
        self._end()
        item = {k: v for k, v in row.items() if k in _ITEM_FIELDS and v is not None}
        if not isinstance(item.get("prompt"), str):
            item.pop("prompt", None)  # a conversational prompt is a list of messages
        item.setdefault("task", "math")
        response = self._client.post(
            "/v1/sessions", json={"item": item, "tools": ["python"], "limits": self._limits}
        )
        response.raise_for_status()
        self._session = response.json()["session_id"]
        return None

    def python(self, code: str) -> str:
        """Run Python code in a persistent interpreter; variables persist between calls.

        Args:
            code: The Python source to run. What it prints and the value of its last expression are returned.
        """
        if self._session is None:
            return "[no session: reset was not called]"
        response = self._client.post(
            f"/v1/sessions/{self._session}/step", json={"tool": "python", "arguments": {"code": code}}
        )
        if response.status_code in (404, 410):
            return f"[session ended: {response.json()['error'].get('reason', 'gone')}]"
        response.raise_for_status()
        return str(response.json()["observation"])

    def __del__(self) -> None:
        """TRL has no close hook: the last session ends here (or at its TTL), and the connection closes."""
        try:
            self._end()
        except (httpx.HTTPError, RuntimeError):
            pass
        finally:
            self._client.close()

    def _end(self) -> None:
        if self._session is not None:
            self._client.delete(f"/v1/sessions/{self._session}")
            self._session = None
