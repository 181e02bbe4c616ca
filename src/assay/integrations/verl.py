"""verl custom reward functions backed by Assay (tested with verl 0.9.1).

    reward:
      reward_manager: {name: naive}          # verl 0.9's default; see "which manager" below
      custom_reward_function:
        path: <site-packages>/assay/integrations/verl.py
        name: compute_score
        reward_kwargs: {url: "http://assay:8000", task: math}

The URL also comes from `ASSAY_URL`: verl calls reward functions inside Ray workers, so set it in the
job's runtime env (`ray job submit --runtime-env-json '{"env_vars": {"ASSAY_URL":
"http://assay:8000"}}'`) or pass `url` in `reward_kwargs`. `reward_kwargs: {ray: true}` scores through
`assay.distributed.shared_reward_handle()` instead: the Assay deployments on verl's own Ray cluster, no
HTTP (needs `assay[ray]`; settings from `ASSAY_RAY__*`). The task is `task`, else
`extra_info["assay_task"]`, else math. The answer is a dict (`score` plus `acc` and Assay's status),
which verl logs as extra reward info.

verl has no "unscored" value (no manager masks a None or NaN reward), so a non-ok result raises
`RewardUnavailable` instead of becoming 0.0. Which manager:
- `naive` (default): one `compute_score` call per sample, run concurrently in the reward loop's threads;
  a raised `RewardUnavailable` stops the step with Assay's reason. Use this one, with
  `name: compute_score_async`: the loop then awaits it instead of a thread per sample, and the samples
  that finish together reach Assay in one request (see docs/sizing.md).
- `rate_limited`: made for paid judge APIs; it catches every exception and scores the sample 0.0 (with
  `reward_extra_info["error"]`), which is exactly the silent bias Assay exists to avoid. Do not use it
  with Assay: Assay bounds its own concurrency and answers overload with a retry hint the client follows.
- verl 0.9 has no `batch` manager in its reward loop; `compute_score_batch` serves the legacy
  `verl.workers.reward_manager.BatchRewardManager` (verl <= 0.8), which passes numpy arrays.

What is scored is the model's own text. verl's reward loop hands over the whole response, tool
responses included (it decodes every response token and does not pass `response_mask`); when the
trajectory's tools were `AssaySessionTool`s, they recorded what they returned in `extra_info`
("assay_tool_responses") and those responses are taken out before scoring (see
`assay.integrations.transcripts`), so an answer only a tool printed earns nothing. Output of other tools
is not known to Assay and stays in.

Code tasks through verl's own SandboxFusion reward (`reward.sandbox_fusion.url: http://assay:8000/run_code`)
need no adapter. Keep `sandbox_fusion.max_concurrent` at or below Assay's `ASSAY_CODE__SLOTS` times its
replicas: above it requests queue for a slot, and one that cannot get one within a few seconds is answered
504, which verl retries only three times before scoring the program as failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from assay.integrations.clients import (
    assay_url,
    reward_or_raise,
    shared_async_client,
    shared_client,
)
from assay.integrations.transcripts import TOOL_RESPONSES, model_text
from assay.types import Result

__all__ = [
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
]


def _item(solution_str: str, ground_truth: Any, extra_info: Any, task: str | None) -> dict[str, Any]:
    # verl hands `extra_info` over as a dict, None, or an element of a numpy object array: never test an
    # array's truth value, only whether this one is a mapping.
    extra = extra_info if isinstance(extra_info, Mapping) else {}
    responses = extra.get(TOOL_RESPONSES)
    text = str(solution_str)
    if responses is not None and not isinstance(responses, str):
        text = model_text(text, [str(r) for r in responses])
    return {
        "task": task or extra.get("assay_task") or "math",
        "response": text,
        "reference": None if ground_truth is None else str(ground_truth),
    }


def _scored(items: list[dict[str, Any]], url: str | None, ray: bool) -> list[Result]:
    if ray:
        from assay.distributed import shared_reward_handle

        return shared_reward_handle()(items)
    return shared_client(assay_url(url)).score(items)


def _score(result: Result) -> dict[str, Any]:
    return {
        "score": reward_or_raise(result),
        "acc": bool(result.correct),
        "assay_status": result.status.value,
    }


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    url: str | None = None,
    task: str | None = None,
    ray: bool = False,
    **_: Any,
) -> dict[str, Any]:
    """verl's per-sample signature (the `naive` reward manager)."""
    [result] = _scored([_item(solution_str, ground_truth, extra_info, task)], url, ray)
    return _score(result)


async def compute_score_async(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    url: str | None = None,
    task: str | None = None,
    **_: Any,
) -> dict[str, Any]:
    """`compute_score` as a coroutine: verl's reward loop awaits it on its event loop instead of a
    thread per sample, and concurrent samples reach Assay together in one request (coalesced)."""
    client = shared_async_client(assay_url(url))
    [result] = await client.ascore([_item(solution_str, ground_truth, extra_info, task)])
    return _score(result)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict[str, Any] | None] | None = None,
    *,
    url: str | None = None,
    task: str | None = None,
    ray: bool = False,
    **_: Any,
) -> list[dict[str, Any]]:
    """The legacy batch signature: one HTTP request per batch. Arguments may be lists or numpy arrays."""
    extras: list[Any] = [None] * len(solution_strs) if extra_infos is None else list(extra_infos)
    items = [_item(s, g, e, task) for s, g, e in zip(solution_strs, ground_truths, extras, strict=True)]
    return [_score(r) for r in _scored(items, url, ray)]
