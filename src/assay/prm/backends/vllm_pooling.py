"""The vLLM backend: `POST /pooling` on a `vllm serve --runner pooling` server of a Qwen2.5-Math-PRM.

Wire format (vLLM 0.32, measured on a real server): the request is
`{"model", "messages": [...], "task": "token_classify", "use_activation": true}` (the server applies the
model's chat template, as the transformers backend does); the answer is
`{"data": [{"index": 0, "data": ROWS}], ...}` where ROWS is one `[p_wrong, p_right]` row per step tag when
the server pools at step tags (the default for `Qwen2ForProcessRewardModel`), or one row per prompt token
when it pools at every token (`tok_pooling_type: ALL`, token-classification models). For the per-token
layout the token ids come from `POST /tokenize` with the same messages, and the rows at the tag are kept.

The trap this module exists to catch: vLLM assumes Qwen's tag id 151651 unless the server was started with
`--pooler-config '{"step_tag_id": N}'`; with any other tokenizer it answers HTTP 200 with no rows. That is
reported as an `error` that names the flag (with the right id when /tokenize can tell it), never as a
score.

No micro-batching here: vLLM batches concurrent requests itself (continuous batching), so each item is one
request, with at most `settings.prm.concurrency` in flight per event loop. An httpx client is bound to the
event loop it was made on, so there is one client per loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from dataclasses import dataclass
from typing import Any

import httpx

from assay.per_loop import PerLoop
from assay.prm.backends.base import PrmBadInput, PrmTimeout, PrmUnavailable, StepRequest, StepScores
from assay.prm.formats import PrmFormat
from assay.settings import PrmSettings

POSITIVE = 1  # Qwen PRMs: class 1 is "this step is correct"
_SNIPPET = 300


@dataclass
class _LoopClient:
    http: httpx.AsyncClient
    slots: asyncio.Semaphore


async def _close_client(client: _LoopClient) -> None:
    await client.http.aclose()


class VllmPoolingBackend:
    """Scores items with HTTP calls to a vLLM pooling server; safe to use from several event loops."""

    def __init__(self, settings: PrmSettings, fmt: PrmFormat) -> None:
        if not settings.base_url:
            raise PrmUnavailable("the vllm backend needs settings.prm.base_url (ASSAY_PRM__BASE_URL)")
        if fmt.name != "qwen":
            raise PrmUnavailable(
                f"the vllm backend serves format qwen only, not {fmt.name} (settings.prm.format)"
            )
        self.settings = settings
        self.format = fmt
        self.base_url = settings.base_url.rstrip("/")
        self._clients: PerLoop[_LoopClient] = PerLoop(self._make_client, _close_client)
        self._marker_id: int | None = None

    # -- scoring ---------------------------------------------------------------------------------
    async def score(self, request: StepRequest) -> StepScores:
        client = self._client()
        async with client.slots:
            chat = self.format.messages(request.prompt, request.steps)
            body: dict[str, Any] = {"messages": chat, "task": "token_classify", "use_activation": True}
            if self.settings.model:
                body["model"] = self.settings.model
            answer = await self._post(client, "/pooling", body)
            rows = _rows_of(answer)
            steps = len(request.steps)
            if not rows:
                raise PrmUnavailable(await self._empty_reason(client))
            layout = "per-tag"
            if len(rows) != steps:
                rows = await self._rows_at_tags(client, chat, rows, steps)
                layout = "per-token"
        scores = tuple(_positive(row, number) for number, row in enumerate(rows))
        return StepScores(scores, {"vllm_layout": layout})

    async def _rows_at_tags(
        self, client: _LoopClient, chat: list[dict[str, str]], rows: list[Any], steps: int
    ) -> list[Any]:
        """Per-token answer: keep the rows at the step tag's positions (token ids from /tokenize)."""
        body: dict[str, Any] = {"messages": chat, "add_generation_prompt": False}
        if self.settings.model:
            body["model"] = self.settings.model
        tokens = (await self._post(client, "/tokenize", body)).get("tokens")
        if not isinstance(tokens, list) or len(tokens) != len(rows):
            count = len(tokens) if isinstance(tokens, list) else "no"
            raise PrmUnavailable(
                f"vLLM returned {len(rows)} rows for {steps} steps and {count} prompt tokens; "
                "neither one row per step tag nor one per token"
            )
        marker = await self._marker(client)
        picked = [row for row, token in zip(rows, tokens, strict=True) if token == marker]
        if len(picked) != steps:
            raise PrmBadInput(f"{len(picked)} step tags after tokenisation for {steps} steps")
        return picked

    async def _marker(self, client: _LoopClient) -> int:
        """The step tag's token id, asked of the server once."""
        if self._marker_id is None:
            body: dict[str, Any] = {"prompt": self.format.marker, "add_special_tokens": False}
            if self.settings.model:
                body["model"] = self.settings.model
            tokens = (await self._post(client, "/tokenize", body)).get("tokens")
            if not (isinstance(tokens, list) and len(tokens) == 1 and isinstance(tokens[0], int)):
                raise PrmUnavailable(
                    f"the step tag {self.format.marker!r} is not one token on the server: {tokens}"
                )
            self._marker_id = tokens[0]
        return self._marker_id

    async def _empty_reason(self, client: _LoopClient) -> str:
        reason = (
            "vLLM returned no step scores (HTTP 200, empty data): the server does not know the step tag's "
            "token id (it assumes Qwen's 151651); restart it with --pooler-config '{\"step_tag_id\": N}'"
        )
        with contextlib.suppress(Exception):  # best effort: name the id if the server can tell it
            marker = await self._marker(client)
            reason = reason.replace('"step_tag_id": N', f'"step_tag_id": {marker}')
            reason += f" ({self.format.marker} is token {marker})"
        return reason

    # -- HTTP --------------------------------------------------------------------------------------
    async def _post(self, client: _LoopClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
        url = self.base_url + path
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                response = await client.http.post(url, json=body)
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise PrmTimeout(
                f"the vLLM server at {self.base_url} did not answer within {self.settings.timeout_s:g}s"
            ) from exc
        except httpx.TransportError as exc:
            raise PrmUnavailable(
                f"the vLLM server at {self.base_url} is unreachable (settings.prm.base_url): "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        text = response.text[:_SNIPPET]
        if response.status_code == 400 and "maximum context length" in text:  # vLLM's wording
            raise PrmBadInput(f"vLLM refused the input: {text}")
        if response.status_code >= 400:
            raise PrmUnavailable(f"vLLM answered HTTP {response.status_code} to {path}: {text}")
        try:
            answer = response.json()
        except ValueError as exc:
            raise PrmUnavailable(f"vLLM answered {path} with something that is not JSON: {text!r}") from exc
        if not isinstance(answer, dict):
            raise PrmUnavailable(f"vLLM answered {path} with {type(answer).__name__}, not an object")
        return answer

    def _make_client(self) -> _LoopClient:
        headers = {}
        if self.settings.api_key is not None:
            headers["Authorization"] = f"Bearer {self.settings.api_key.get_secret_value()}"
        http = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(self.settings.timeout_s, connect=5.0))
        return _LoopClient(http, asyncio.Semaphore(self.settings.concurrency))

    def _client(self) -> _LoopClient:
        return self._clients.get()

    async def aclose(self) -> None:
        """Close the running loop's client (use from async code that owns the loop, before it ends)."""
        await self._clients.aclose()

    def close(self) -> None:
        """Close each loop's client on its own loop (`PerLoop.close`)."""
        self._clients.close()


def _rows_of(answer: dict[str, Any]) -> list[Any]:
    """The score rows of a one-prompt /pooling answer ([] for both empty shapes vLLM produces)."""
    data = answer.get("data")
    if not isinstance(data, list):
        raise PrmUnavailable(f"vLLM's /pooling answer has no data list: {str(answer)[:_SNIPPET]}")
    if not data:
        return []
    entry = data[0]
    rows = entry.get("data") if isinstance(entry, dict) else None
    if not isinstance(rows, list):
        raise PrmUnavailable(f"vLLM's /pooling answer is not a list of rows: {str(entry)[:_SNIPPET]}")
    return rows


def _positive(row: Any, number: int) -> float:
    """p(correct) from one row; a row that is not a probability pair is the server's fault."""
    if not (isinstance(row, list) and len(row) > POSITIVE and all(isinstance(v, int | float) for v in row)):
        raise PrmUnavailable(f"vLLM row {number} is not a list of class probabilities: {str(row)[:_SNIPPET]}")
    value = float(row[POSITIVE])
    if not (math.isfinite(value) and -1e-6 <= value <= 1 + 1e-6):
        raise PrmUnavailable(f"vLLM row {number} holds {row}, not probabilities (use_activation off?)")
    return min(1.0, max(0.0, value))
