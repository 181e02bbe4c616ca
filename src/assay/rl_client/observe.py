"""Observability: one record per step, as JSON Lines, a tqdm progress bar, and PNG curves at the end.

Step records hold reward, accuracy, mean response length, entropy, the fractions of all-correct and
all-wrong groups, generation rounds, reward latency and loss statistics, and the signals `assay doctor`
reads (`group_signals`: zero-advantage fraction, answer diversity, truncation, replay lag, failure and
hedge rates). The log runs the doctor's checks after every step and warns when a failure mode trips.
Fields that measure time end in `_s`; everything else is a deterministic function of the run (the resume
test compares those). matplotlib is imported only when curves are drawn (Agg backend, no display needed).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from assay.doctor.monitor import Monitor
from assay.rl_client.generate import Group
from assay.types import Status

CURVES = (
    ("accuracy", "sample accuracy"),
    ("reward", "mean reward"),
    ("dev_accuracy", "dev greedy accuracy"),
    ("response_length", "mean response length (tokens)"),
    ("entropy", "entropy (nats/token)"),
    ("frac_all_correct", "all-correct groups"),
    ("frac_all_wrong", "all-wrong groups"),
    ("frac_zero_advantage", "zero-advantage groups"),
    ("distinct_answers_mean", "distinct answers per group"),
    ("truncation_rate", "truncated responses"),
    ("rounds", "generation rounds"),
    ("reward_latency_s", "reward latency (s)"),
    # sampled held-out evaluation before and after a run (runs/k_eval.py, issue 42)
    ("pass_at_1", "Pass@1 (held-out, sampled)"),
    ("pass_at_4", "Pass@4"),
    ("pass_at_16", "Pass@16"),
    ("maj_at_4", "Maj@4 (answers by equivalence)"),
    ("maj_at_16", "Maj@16"),
    ("best_of_4", "best-of-4 (V-STaR verifier)"),
    ("best_of_16", "best-of-16 (V-STaR verifier)"),
    # multi-turn tool use (issue 26); logged only by runs with tools
    ("turns", "turns per rollout"),
    ("tool_calls", "tool calls per step"),
    ("tool_errors", "tool errors per step"),
    ("session_failures", "rollouts masked: session failed"),
)


def _mean(values: Sequence[float]) -> float | None:
    return float(statistics.fmean(values)) if values else None


def group_signals(seen: Sequence[Group], kept: Sequence[Group], version: int) -> dict[str, Any]:
    """The step's signals for `assay doctor`, over the policy's own samples (before replay injection),
    except the replay lag, which is over the replayed samples that reached the update."""
    own = [s for g in seen for s in g.samples if not s.off_policy]
    results = [s.result for s in own if s.result is not None]
    # Assay's statistics where it scored the group as it stands; counted here where replay changed it
    zero = [g.stats.all_equal if g.stats is not None else len(set(g.raw_scores())) <= 1 for g in seen]
    distinct = [
        g.stats.distinct_answers
        if g.stats is not None
        else len({s.result.extracted for s in g.samples if s.scored and s.result and s.result.extracted})
        for g in seen
    ]
    answers = [r.extracted for r in results if r.status is Status.OK and r.extracted is not None]
    prompts = {g.problem.id for g in seen}
    lags = [version - s.version for g in kept for s in g.samples if s.off_policy]
    count = max(1, len(results))
    return {
        "frac_zero_advantage": _mean([float(z) for z in zero]),
        "distinct_answers_mean": _mean([float(d) for d in distinct]),
        "truncation_rate": _mean([float(s.completion.truncated) for s in own]),
        "response_length_max": max((len(s.completion.token_ids) for s in own), default=0),
        "replay_lag_mean": _mean([float(x) for x in lags]),
        "replay_lag_max": max(lags, default=None),
        "invalid_rate": sum(r.status is Status.INVALID for r in results) / count,
        "timeout_rate": sum(r.status is Status.TIMEOUT for r in results) / count,
        "error_rate": sum(r.status is Status.ERROR for r in results) / count,
        "hedge_rate": sum("hedge" in f"{r.reason} {r.details.get('rule', '')}" for r in results) / count,
        # one answer for many different prompts: a constant-answer hack (needs several prompts to mean it)
        "constant_answer_share": (
            Counter(answers).most_common(1)[0][1] / len(answers) if answers and len(prompts) >= 4 else None
        ),
    }


def timing_free(record: dict[str, Any]) -> dict[str, Any]:
    """The record without wall-clock fields."""
    return {k: v for k, v in record.items() if not k.endswith("_s")}


class StepLog:
    """Appends step records to a JSON Lines file and drives an optional progress bar."""

    def __init__(self, path: Path | None, total: int, progress: bool = False, initial: int = 0) -> None:
        self.path = path
        self.bar = tqdm(total=total, initial=initial, unit="step", disable=not progress, leave=False)
        self.monitor = Monitor()  # the doctor's checks, warning as a failure mode trips

    def rewrite(self, records: Sequence[dict[str, Any]]) -> None:
        """Make the file hold exactly `records` (after a resume, steps past the checkpoint are dropped)."""
        self.monitor.reset(records)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
        self.monitor.update(record)
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
