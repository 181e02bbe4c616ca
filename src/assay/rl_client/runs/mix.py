"""A mix of tasks in one run: per-task reward weights, and several rewards combined per item.

`TaskMix` wraps any reward source. An item that carries `mix: [[task, weight], ...]` (a data row scored by
several tasks, e.g. math correctness plus a judge's grade of the explanation) is sent once per task and
its rewards are summed with the weights; every other item goes through as it is. Then each reward is
multiplied by its task's weight in `task_weights` (default 1). A combined item is `ok` only when every
part is: one part that could not be scored masks the sample rather than counting as 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.errors import ConfigError
from assay.rl_client.filter import RewardSource, WrappedRewards
from assay.types import Result


class TaskMix(WrappedRewards):
    def __init__(self, inner: RewardSource, task_weights: Mapping[str, float] | None = None) -> None:
        super().__init__(inner)
        self.task_weights = dict(task_weights or {})

    async def ascore_trees(self, trees: list[dict[str, Any]]) -> list[Any]:
        """Tree rollouts go to the inner source as they are (a tree's leaves are not mixed)."""
        inner = getattr(self.inner, "ascore_trees", None)
        if inner is None or self.task_weights:
            raise ConfigError("tree rollouts need the Assay service as reward source and no task_weights")
        return list(await inner(trees))

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        flat: list[dict[str, Any]] = []
        spans: list[tuple[int, list[tuple[str, float]] | None]] = []  # (first index, mix or None)
        for item in items:
            parts = item.get("mix")
            base = {k: v for k, v in item.items() if k != "mix"}
            spans.append((len(flat), [(str(t), float(w)) for t, w in parts] if parts else None))
            if parts:
                flat.extend({**base, "task": str(t), "id": f"{base.get('id')}/{t}"} for t, _ in parts)
            else:
                flat.append(base)
        results = await self.inner.ascore(flat) if flat else []
        out = []
        for item, (start, parts) in zip(items, spans, strict=True):
            if parts is None:
                out.append(self._weighted(results[start]))
            else:
                out.append(combine(item.get("id"), parts, results[start : start + len(parts)]))
        return out

    def _weighted(self, result: Result) -> Result:
        weight = self.task_weights.get(result.task or "", 1.0)
        if result.reward is None or weight == 1.0:
            return result
        return result.model_copy(update={"reward": result.reward * weight})


def combine(item_id: Any, parts: list[tuple[str, float]], results: list[Result]) -> Result:
    """The weighted sum of the parts' rewards; `correct` only when every part is a verdict."""
    reasons = "; ".join(f"{task}: {r.reason}" for (task, _), r in zip(parts, results, strict=True))
    details = {"parts": [r.model_dump(mode="json") for r in results]}
    failed = [(task, r) for (task, _), r in zip(parts, results, strict=True) if r.reward is None]
    ident = None if item_id is None else str(item_id)
    if failed:
        task, first = failed[0]
        return Result(
            id=ident, task="mix", status=first.status, reason=f"{task} not scored: {first.reason}",
            details=details,
        )  # fmt: skip
    reward = sum(w * float(r.reward or 0.0) for (_, w), r in zip(parts, results, strict=True))
    verdicts = [r.correct for r in results]
    correct = all(verdicts) if all(v is not None for v in verdicts) else None
    return Result(
        id=ident, task="mix", status=results[0].status, correct=correct, reward=reward, reason=reasons,
        details=details,
    )  # fmt: skip
