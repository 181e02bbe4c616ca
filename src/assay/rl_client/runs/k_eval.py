"""Pass@K and Maj@K on the held-out set, before and after a run (issue 42).

DeepSeekMath (Shao et al. 2024, section 5.2.2) found that RL raised Maj@K but not Pass@K: a policy that
became more consistent, not more capable. Telling the two apart needs both, measured the same way before
and after training: `samples` responses per held-out prompt at the training temperature, scored as one
group each through POST /v1/groups, so the majority vote counts answers by the task's own equivalence
(answer clusters), not strings. Per prompt, Pass@K is the unbiased estimator of Chen et al. (2021) and
Maj@K the exact mean over K-subsets (`assay.groups.estimators`); the run reports their means over the
prompts for K = 1, 4, 16 (those up to `samples`). A prompt whose group has fewer than K scored samples, or
no clusters (a task with no notion of equivalence), is left out of that K's mean, never counted as 0.

With `keep`, the scored candidates (group id, prompt, response, verdict) are written there as JSON Lines,
for V-STaR's best-of-K (`runs/vstar.py`).

The backend's sampling state is put back afterwards, so evaluating does not change what training samples
(a resumed run still ends as an uninterrupted one).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.client import AssayClient
from assay.groups import GroupOutcome
from assay.rl_client.filter import reward_item
from assay.rl_client.generate import Backend, Problem, SamplingParams, sample_groups
from assay.types import Result

KS = (1, 4, 16)


def k_evaluation(
    backend: Backend,
    client: AssayClient,
    problems: Sequence[Problem],
    samples: int,
    params: SamplingParams,
    keep: Path | None = None,
) -> dict[str, dict[str, float | None]]:
    """`{"pass_at_k": {"1": ..., "4": ..., "16": ...}, "maj_at_k": {...}}` over `problems`."""
    if not problems or samples < 1:
        return {"pass_at_k": {}, "maj_at_k": {}}
    state = backend.state_dict()
    try:
        groups = sample_groups(backend, problems, [samples] * len(problems), params, version=-1)
    finally:
        backend.load_state_dict(state)
    wire = [
        {"id": g.problem.id, "items": [reward_item(g, i, s) for i, s in enumerate(g.samples)]} for g in groups
    ]
    outcomes = client.score_groups(wire)
    if keep is not None:
        write_candidates(keep, wire, outcomes)
    return summarise(outcomes, samples)


def write_candidates(path: Path, wire: Sequence[dict[str, Any]], outcomes: Sequence[GroupOutcome]) -> None:
    """One line per scored candidate: `{"id", "prompt", "response", "correct"}` (unscored ones left out)."""
    lines = []
    for group, outcome in zip(wire, outcomes, strict=True):
        for item, result in zip(group["items"], outcome.results, strict=True):
            label = correct_of(result)
            if label is not None:
                row = {"id": group["id"], "prompt": item["prompt"], "response": item["response"]}
                lines.append(json.dumps({**row, "correct": label}) + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")


def summarise(outcomes: Sequence[GroupOutcome], samples: int) -> dict[str, dict[str, float | None]]:
    """Means over the groups of each K's Pass@K and Maj@K, for K in KS up to `samples`."""
    out: dict[str, dict[str, float | None]] = {"pass_at_k": {}, "maj_at_k": {}}
    for k in (k for k in KS if k <= samples):
        for name in out:
            values = [v for o in outcomes if (v := _value(o, name, k)) is not None]
            out[name][str(k)] = round(statistics.fmean(values), 4) if values else None
    return out


def correct_of(result: Result) -> bool | None:
    """A verdict as a label: `correct` where given, else a reward of 1; None when not scored."""
    if result.reward is None:
        return None
    return bool(result.correct) if result.correct is not None else float(result.reward) >= 1.0


def _value(outcome: GroupOutcome, name: str, k: int) -> float | None:
    table: dict[str, Any] = getattr(outcome.stats, name)
    value = table.get(str(k))
    return float(value) if value is not None else None


def curve_points(evaluated: dict[str, dict[str, float | None]]) -> dict[str, float]:
    """The record keys a run's plot draws (`observe.CURVES`): `pass_at_4`, `maj_at_16`, `best_of_4`, ..."""
    points = {}
    for name, table in evaluated.items():
        for k, value in table.items():
            if value is not None:
                points[f"{name.removesuffix('_k')}_{k}"] = value  # pass_at_4, maj_at_16, best_of_4
    return points
