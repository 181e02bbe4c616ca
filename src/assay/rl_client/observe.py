"""Observability: one record per step, as JSON Lines, a tqdm progress bar, and PNG curves at the end.

Step records hold reward, accuracy, mean response length, entropy, the fractions of all-correct and
all-wrong groups, generation rounds, reward latency and loss statistics. Fields that measure time end in
`_s`; everything else is a deterministic function of the run (the resume test compares those).
matplotlib is imported only when curves are drawn (Agg backend, no display needed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

CURVES = (
    ("accuracy", "sample accuracy"),
    ("reward", "mean reward"),
    ("dev_accuracy", "dev greedy accuracy"),
    ("response_length", "mean response length (tokens)"),
    ("entropy", "entropy (nats/token)"),
    ("frac_all_correct", "all-correct groups"),
    ("frac_all_wrong", "all-wrong groups"),
    ("rounds", "generation rounds"),
    ("reward_latency_s", "reward latency (s)"),
)


def timing_free(record: dict[str, Any]) -> dict[str, Any]:
    """The record without wall-clock fields."""
    return {k: v for k, v in record.items() if not k.endswith("_s")}


class StepLog:
    """Appends step records to a JSON Lines file and drives an optional progress bar."""

    def __init__(self, path: Path | None, total: int, progress: bool = False, initial: int = 0) -> None:
        self.path = path
        self.bar = tqdm(total=total, initial=initial, unit="step", disable=not progress, leave=False)

    def rewrite(self, records: Sequence[dict[str, Any]]) -> None:
        """Make the file hold exactly `records` (after a resume, steps past the checkpoint are dropped)."""
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
        self.bar.update(1)
        self.bar.set_postfix(
            acc=f"{record.get('accuracy', 0):.2f}", rounds=record.get("rounds", 0), refresh=False
        )

    def close(self) -> None:
        self.bar.close()


def plot_curves(records: Sequence[dict[str, Any]], path: Path, title: str = "assay train") -> Path:
    """Draw every known metric against the step into one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    present = [(key, label) for key, label in CURVES if any(key in r for r in records)]
    cols = 3
    rows = max(1, -(-len(present) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.8 * rows), squeeze=False)
    for ax, (key, label) in zip(axes.flat, present, strict=False):
        points = [(r["step"], r[key]) for r in records if r.get(key) is not None]
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, marker="." if len(points) < 30 else None)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(present) :]:
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
