"""Checkpoint directories of a configured run: `checkpoints/step-000010`, written whole or not at all.

A checkpoint is first written to a temporary sibling and then renamed, so a run killed while saving
leaves the previous checkpoint as the newest complete one; resume picks the newest. Older ones beyond
`keep` are removed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

PREFIX = "step-"


def newest(root: Path) -> Path | None:
    done = sorted(p for p in root.glob(f"{PREFIX}*") if p.is_dir() and p.name[len(PREFIX) :].isdigit())
    return done[-1] if done else None


def write(root: Path, step: int, save: Callable[[Path], object], keep: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{PREFIX}{step:06d}"
    partial = root / f".partial-{final.name}"
    shutil.rmtree(partial, ignore_errors=True)
    save(partial)
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    done = sorted(p for p in root.glob(f"{PREFIX}*") if p.is_dir())
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final
