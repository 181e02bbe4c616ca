"""reasoning-gym through its own released API: entries by dataset name, size and seed
(`reasoning_gym.create_dataset`), each scored by its dataset's own `score_answer`. Imported lazily (the
`reasoning-gym` extra); a missing package or an unknown name raises with what to do."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any

from assay.errors import ConfigError, ItemError, MissingExtraError
from assay.suggest import did_you_mean

TASK = "reasoning_gym"
MAX_SIZE = 100_000


def names() -> list[str]:
    """Every dataset reasoning-gym registers."""
    try:
        from reasoning_gym.factory import DATASETS
    except ImportError as exc:
        raise MissingExtraError("reasoning-gym", "reasoning-gym") from exc
    return sorted(DATASETS)


def check_name(name: str) -> None:
    known = names()
    if name not in known:
        raise ItemError(f'unknown reasoning-gym dataset "{name}"{did_you_mean(name, known)}')


@lru_cache(maxsize=64)
def dataset(name: str, size: int, seed: int) -> Any:
    """The dataset object (entries are made on demand by index: `dataset[i]`)."""
    check_name(name)
    from reasoning_gym import create_dataset

    try:
        return create_dataset(name, size=size, seed=seed)
    except Exception as exc:  # a dataset that needs a config (composite) or data it lacks
        raise ItemError(f'reasoning-gym cannot make dataset "{name}": {type(exc).__name__}: {exc}') from exc


def as_json(value: Any) -> Any:
    """`value` as JSON gives it back (tuples become lists), so an item scores the same after the wire."""
    return json.loads(json.dumps(value, default=str))


def draw(name: str, size: int, seed: int) -> list[dict[str, Any]]:
    """`size` items of dataset `name` drawn with `seed`: the entry's question, answer and metadata as
    reasoning-gym gives them, so scoring needs no regeneration (and no access to the generator)."""
    if not 1 <= size <= MAX_SIZE:
        raise ConfigError(f"size must be between 1 and {MAX_SIZE}, got {size}")
    data = dataset(name, size, seed)
    rows = []
    for index in range(size):
        entry = data[index]
        answer = entry.get("answer")
        rows.append(
            {
                "id": f"{name}-{seed}-{index}",
                "task": TASK,
                "prompt": entry["question"],
                "reference": None if answer is None else str(answer),
                "dataset": name,
                "metadata": as_json(entry.get("metadata") or {}),
            }
        )
    return rows


def own_score(name: str, answer: str, entry: dict[str, Any]) -> float:
    """The dataset's own `score_answer` on an extracted answer (the caller has passed it through
    guard.refusal: some of these evaluate it). ItemError when the score is no number in [0, 1]."""
    scorer = dataset(name, 1, 0)
    try:
        score = scorer.score_answer(answer, entry)
    except Exception as exc:  # an entry its scorer cannot read (metadata missing or of another shape)
        raise ItemError(
            f'reasoning-gym\'s "{name}" scorer cannot read this entry: {type(exc).__name__}: {exc}'
        ) from exc
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise ItemError(f'reasoning-gym\'s "{name}" scorer returned {score!r}, not a number')
    if not 0.0 <= score <= 1.0:
        raise ItemError(f'reasoning-gym\'s "{name}" scorer returned {score}, outside [0, 1]')
    return float(score)
