"""verl custom reward functions backed by Assay.

    custom_reward_function:
      path: <site-packages>/assay/rl_client/integrations/verl.py
      name: compute_score            # NaiveRewardManager: one call per sample
      # name: compute_score_batch    # BatchRewardManager: one call per batch (much faster)
      reward_kwargs: {url: "http://assay:8000", task: math}

The URL also comes from `ASSAY_URL` (set it in the Ray workers' runtime_env). `reward_kwargs: {ray: true}`
scores through `assay.distributed.shared_reward_handle()` instead: the Assay deployments on verl's own
Ray cluster, no HTTP (needs `assay[ray]`; settings from `ASSAY_RAY__*`). The task is `task`, else
`extra_info["assay_task"]`, else math. The answer is a dict (`score` plus `acc` and Assay's status), which
verl logs as extra reward info. verl has no "unscored" value, so a non-ok result raises
`RewardUnavailable` instead of becoming 0.0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.rl_client.integrations import assay_url, reward_or_raise, shared_client
from assay.types import Result


def _item(
    solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None, task: str | None
) -> dict[str, Any]:
    extra = extra_info or {}
    return {
        "task": task or extra.get("assay_task") or "math",
        "response": solution_str,
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
    """verl's per-sample signature."""
    [result] = _scored([_item(solution_str, ground_truth, extra_info, task)], url, ray)
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
    """verl's batch signature (BatchRewardManager): one HTTP request per batch chunk."""
    extras: Sequence[dict[str, Any] | None] = extra_infos or [None] * len(solution_strs)
    items = [_item(s, g, e, task) for s, g, e in zip(solution_strs, ground_truths, extras, strict=True)]
    return [_score(r) for r in _scored(items, url, ray)]
