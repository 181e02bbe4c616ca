"""slime custom reward function backed by Assay.

    --custom-rm-path assay.integrations.slime.reward

slime loads the function from that dotted path and awaits `reward(args, sample, **kwargs)` per sample, or
`reward(args, samples, **kwargs)` with a list when it scores whole groups (`--group-rm`); both are handled
(a list is scored in one request). Samples carry `.prompt`, `.response`, `.label`. The URL is
`args.assay_url` if present, else `ASSAY_URL`; the task is `args.assay_task` or math. A non-ok result raises
`RewardUnavailable` (slime has no "unscored" reward). slime's built-in `remote_rm` expects a bare number
back from a different request shape, so use this function rather than `--rm-type remote_rm`.
Not tested against slime's own code: THUDM's slime is not on PyPI (the PyPI `slime` is unrelated).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.integrations.clients import assay_url, reward_or_raise, shared_async_client

__all__ = [
    "batched_reward",
    "reward",
]


def _item(args: Any, sample: Any) -> dict[str, Any]:
    label = getattr(sample, "label", None)
    return {
        "task": getattr(args, "assay_task", None) or "math",
        "prompt": sample.prompt if isinstance(sample.prompt, str) else None,
        "response": sample.response,
        "reference": None if label is None else str(label),
    }


async def batched_reward(args: Any, samples: Sequence[Any], **_: Any) -> list[float]:
    # One client per process and event loop; concurrent samples go out together in one request.
    client = shared_async_client(assay_url(getattr(args, "assay_url", None)))
    results = await client.ascore([_item(args, s) for s in samples])
    return [reward_or_raise(r) for r in results]


async def reward(args: Any, sample: Any, **kwargs: Any) -> float | list[float]:
    if isinstance(sample, list | tuple):
        return await batched_reward(args, sample, **kwargs)
    [value] = await batched_reward(args, [sample])
    return value
