"""OpenRLHF against Assay (tested with OpenRLHF 0.11.2's own rollout code): no adapter needed, point its
remote reward at `POST /get_reward`.

    openrlhf.cli.train_ppo_ray ... --remote_rm_url http://127.0.0.1:8000/get_reward --label_key answer

OpenRLHF posts `{"query": [prompt + response, decoded with special tokens], "prompts": [...],
"labels": [...]}` and reads `rewards`. Assay strips the prompt from the query and scores the rest with
`ASSAY_OPENRLHF_TASK` (math by default). OpenRLHF turns rewards into tensors, so there is no room for
"unscored": by default a batch with an unscorable item gets no rewards (503 with Retry-After for a timeout
or error, which OpenRLHF retries; for an invalid item 200 with `rewards: null` and the reason in `error`,
which OpenRLHF stores at once rather than retrying 5 times). `ASSAY_OPENRLHF_UNSCORED=zero` sends 0.0 instead,
with `extra_logs["scored"]` marking those items. OpenRLHF only logs a refusal at INFO and fails later
with "'NoneType' object has no attribute 'size'": read the reason in Assay's log (`assay.openrlhf`) and
`assay_openrlhf_unscored_items_total` in /metrics. The README says which mode to pick.

`remote_reward` below does what OpenRLHF's client does, for scripts and tests. `ray_rewards` scores the
same way inside OpenRLHF's own Ray job, without HTTP (opt-in, needs `assay[ray]`): call it from the
`reward_func` of a custom reward file and turn its list into a tensor.
"""

from __future__ import annotations

import atexit
import functools
from collections.abc import Sequence
from typing import Any

import httpx

from assay.integrations.clients import RewardUnavailable, assay_url, reward_or_raise

__all__ = [
    "ray_rewards",
    "remote_reward",
    "request_body",
]


@functools.cache
def _http() -> httpx.Client:
    """One connection pool per process (OpenRLHF posts one sample per request), closed at exit."""
    client = httpx.Client()
    atexit.register(client.close)
    return client


def request_body(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[str]) -> dict[str, Any]:
    """The JSON body OpenRLHF's remote reward client sends."""
    return {"query": list(queries), "prompts": list(prompts), "labels": list(labels)}


def remote_reward(
    queries: Sequence[str],
    prompts: Sequence[str],
    labels: Sequence[str],
    url: str | None = None,
    timeout_s: float = 180.0,
) -> list[float]:
    """POST to `/get_reward` and return `rewards`; a batch without rewards (refused, or answered with an
    invalid sample's `error`) raises `RewardUnavailable`."""
    endpoint = assay_url(url).rstrip("/") + "/get_reward"
    body = request_body(queries, prompts, labels)
    response = _http().post(endpoint, json=body, timeout=timeout_s)
    if response.status_code != 200:
        raise RewardUnavailable(f"Assay answered {response.status_code}: {response.text[:300]}")
    answer = response.json()
    if answer["rewards"] is None:
        raise RewardUnavailable(f"Assay scored no rewards: {answer['error']['message']}")
    return [float(r) for r in answer["rewards"]]


def _response(query: str, prompt: str | None) -> str:
    """The response part of a query, by the rule `/get_reward` uses (after the prompt, wherever it is)."""
    if not prompt:
        return query
    at = 0 if query.startswith(prompt) else query.rfind(prompt)
    return query[at + len(prompt) :] if at >= 0 else query


def ray_rewards(
    queries: Sequence[str], prompts: Sequence[str], labels: Sequence[str], task: str = "math"
) -> list[float]:
    """Rewards from the Assay deployments on this Ray cluster (`assay.distributed`); in input order.

    An item that could not be scored raises `RewardUnavailable`, as a refused `/get_reward` batch does.
    """
    from assay.distributed import shared_reward_handle

    items = [
        {"id": str(i), "task": task, "prompt": p, "response": _response(q, p), "reference": lab}
        for i, (q, p, lab) in enumerate(zip(queries, prompts, labels, strict=True))
    ]
    return [reward_or_raise(r) for r in shared_reward_handle()(items)]
