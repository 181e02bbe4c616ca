"""One summary schema and one plot for every run kind: `--demo`, `--demo tools` and `--config` (issue 43:
they had three spellings of the same numbers, `greedy_accuracy_*`, `eval_start`/`eval_end` and
`eval_accuracy_*`, and the tools demo's plot had no accuracy panel).

Every `summary.json` starts with `KEYS`:

    accuracy_before, accuracy_after   held-out greedy accuracy when RL starts and ends (None: no eval set)
    improvement                       accuracy_after - accuracy_before, 4 decimals
    steps                             RL steps done (STaR: iterations)
    stopped_by                        "steps": the step count was reached; "time_budget": the time budget,
                                      a safety stop, ended the run first (the result then depends on the
                                      machine's speed and load)
    time_budget_s                     that budget (None: none)

and then what a kind adds. The old names stay as aliases with the same values (`ALIASES`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from assay.rl_client.observe import plot_curves

KEYS = ("accuracy_before", "accuracy_after", "improvement", "steps", "stopped_by", "time_budget_s")

# kind -> {old key: the common key it repeats}; kept so that readers of older summaries keep working.
ALIASES: dict[str, dict[str, str]] = {
    "demo": {"greedy_accuracy_before": "accuracy_before", "greedy_accuracy_after": "accuracy_after"},
    "demo_tools": {"eval_start": "accuracy_before", "eval_end": "accuracy_after", "rl_steps": "steps"},
    "config": {"eval_accuracy_before": "accuracy_before", "eval_accuracy_after": "accuracy_after"},
}

Kind = Literal["demo", "demo_tools", "config"]


def stopped_by(steps: int, total: int) -> str:
    """Why a loop `while step < total and within the time budget` ended."""
    return "steps" if steps >= total else "time_budget"


def common(
    kind: Kind, before: float | None, after: float | None, steps: int, total: int, budget: float | None
) -> dict[str, Any]:
    """The keys every summary starts with, then `kind`'s old names for them."""
    summary: dict[str, Any] = {
        "accuracy_before": before,
        "accuracy_after": after,
        "improvement": None if before is None or after is None else round(after - before, 4),
        "steps": steps,
        "stopped_by": stopped_by(steps, total),
        "time_budget_s": budget,
    }
    summary.update({old: summary[new] for old, new in ALIASES[kind].items()})
    return summary


def curve_records(
    before: float | None, history: Sequence[dict[str, Any]], steps: int, after: float | None
) -> list[dict[str, Any]]:
    """The records a run plots: its step log with the accuracy before RL at step 0 and the final
    evaluation the summary prints at the last step (it was left out whenever RL stopped between two
    `eval_every` steps, issue 31; the tools demo drew no accuracy at all, issue 43)."""
    records = [*([{"step": 0, "dev_accuracy": before}] if before is not None else []), *history]
    last = next((r for r in reversed(records) if r.get("dev_accuracy") is not None), None)
    if after is not None and (last is None or last["step"] != steps):
        records.append({"step": steps, "dev_accuracy": after})
    return records


def plot_run(
    out: Path,
    before: float | None,
    history: Sequence[dict[str, Any]],
    steps: int,
    after: float | None,
    title: str,
) -> Path:
    """`curves.png` of a run: every logged metric, the accuracy panel included."""
    return plot_curves(curve_records(before, history, steps, after), out / "curves.png", title=title)


def write(out: Path, summary: dict[str, Any]) -> None:
    """`summary.json`, written last: its presence marks a finished run (`rundir.py`)."""
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
