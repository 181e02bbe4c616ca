"""The one checkpoint writer, for every algorithm: a checkpoint is a directory holding `state.pt`
(tensors: the policy, its optimizer, the backend's and torch's RNGs, anything else an algorithm adds) and
`trainer.json` (the rest: step, sampler, replay, the step log), which is all an exact resume needs.

`write` keeps a run's checkpoints as `checkpoints/step-000010`, written whole or not at all: first into
a temporary sibling, then renamed, so a run killed while saving leaves the previous checkpoint as the
newest complete one; resume picks the newest. Older ones beyond `keep` are removed. torch is imported
only to write or read tensors.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

PREFIX = "step-"
TENSORS = "state.pt"
STATE = "trainer.json"


def save(directory: Path, tensors: dict[str, Any], state: dict[str, Any]) -> Path:
    """Write one checkpoint: `tensors` with `torch.save`, `state` (plain data) as JSON."""
    import torch

    directory.mkdir(parents=True, exist_ok=True)
    torch.save(tensors, directory / TENSORS)
    (directory / STATE).write_text(json.dumps(state), encoding="utf-8")
    return directory


def load(directory: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tensors and the state `save` wrote (tensors only, no pickled code: `weights_only`)."""
    import torch

    tensors = torch.load(directory / TENSORS, weights_only=True)
    state = json.loads((directory / STATE).read_text(encoding="utf-8"))
    return tensors, state


def policy_tensors(model: Any, optimizer: torch.optim.Optimizer, backend: Any) -> dict[str, Any]:
    """What every algorithm saves: the policy, its optimizer, the backend's RNG state and torch's."""
    import torch

    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "backend": backend.state_dict(),
        "torch_rng": torch.get_rng_state(),
    }


def restore_policy(
    tensors: dict[str, Any], model: Any, optimizer: torch.optim.Optimizer, backend: Any
) -> None:
    """Put back what `policy_tensors` saved."""
    import torch

    model.load_state_dict(tensors["model"])
    optimizer.load_state_dict(tensors["optimizer"])
    backend.load_state_dict(tensors["backend"])
    torch.set_rng_state(tensors["torch_rng"])


def random_state(rng: random.Random) -> list[Any]:
    """A `random.Random`'s state as JSON-ready data."""
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def set_random_state(rng: random.Random, state: list[Any]) -> None:
    version, internal, gauss = state
    rng.setstate((version, tuple(internal), gauss))


def newest(root: Path) -> Path | None:
    done = sorted(p for p in root.glob(f"{PREFIX}*") if p.is_dir() and p.name[len(PREFIX) :].isdigit())
    return done[-1] if done else None


def step_of(directory: Path) -> int:
    """The step a directory `write` made holds (`step-000010` -> 10)."""
    return int(directory.name[len(PREFIX) :])


def write(root: Path, step: int, save_to: Callable[[Path], object], keep: int) -> Path:
    """Checkpoint `step` under `root` by `save_to(directory)`, keeping the newest `keep`."""
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{PREFIX}{step:06d}"
    partial = root / f".partial-{final.name}"
    shutil.rmtree(partial, ignore_errors=True)
    save_to(partial)
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    done = sorted(p for p in root.glob(f"{PREFIX}*") if p.is_dir())
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final
