"""One summary schema and one plot for every run kind (issue 43): the same keys for accuracy before and
after, improvement, steps and how the run stopped, the old names kept as aliases; an accuracy panel in
every plot, the tools demo's too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.rl_client.runs import summary as run_summary
from assay.rl_client.runs.summary import ALIASES, KEYS, common, curve_records, stopped_by


@pytest.mark.parametrize("kind", ["demo", "demo_tools", "config"])
def test_every_kind_has_the_common_keys_and_keeps_its_old_names(kind: Any) -> None:
    summary = common(kind, 0.4, 0.65, 180, 180, 480.0)
    assert list(summary)[: len(KEYS)] == list(KEYS)
    assert (summary["accuracy_before"], summary["accuracy_after"], summary["improvement"]) == (
        0.4,
        0.65,
        0.25,
    )
    assert (summary["steps"], summary["stopped_by"], summary["time_budget_s"]) == (180, "steps", 480.0)
    assert ALIASES[kind] and all(summary[old] == summary[new] for old, new in ALIASES[kind].items())


def test_the_old_names_are_the_ones_each_kind_wrote() -> None:
    assert {"greedy_accuracy_before", "greedy_accuracy_after"} <= set(common("demo", 0.1, 0.2, 1, 1, None))
    assert {"eval_start", "eval_end", "rl_steps"} <= set(common("demo_tools", 0.1, 0.2, 1, 1, None))
    assert {"eval_accuracy_before", "eval_accuracy_after"} <= set(common("config", 0.1, 0.2, 1, 1, None))


def test_stopped_by_says_when_the_time_budget_ended_the_run() -> None:
    assert stopped_by(180, 180) == "steps"
    assert stopped_by(72, 180) == "time_budget"
    assert common("demo", 0.44, 0.59, 72, 180, 165.0)["stopped_by"] == "time_budget"


def test_a_run_without_an_eval_set_has_no_improvement_rather_than_a_number() -> None:
    summary = common("config", None, None, 5, 5, None)
    assert summary["improvement"] is None and summary["accuracy_after"] is None


def test_the_curves_end_with_the_final_evaluation_the_summary_prints() -> None:
    # RL stopped at step 13 (time budget): the last evaluation in the step log was at step 10.
    steps = [{"step": s, "reward": 0.5, **({"dev_accuracy": 0.4} if s == 10 else {})} for s in range(1, 14)]
    records = curve_records(0.3, steps, 13, 0.55)
    assert records[0] == {"step": 0, "dev_accuracy": 0.3}
    assert records[-1] == {"step": 13, "dev_accuracy": 0.55}
    # Stopped on an evaluation step: that evaluation is the final one, not drawn twice.
    assert curve_records(0.3, steps[:10], 10, 0.4)[-1] == steps[9]


def test_a_step_log_without_accuracy_still_gets_the_accuracy_panel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tools demo logs no dev_accuracy per step; its plot had no accuracy panel at all.
    drawn: list[list[dict[str, Any]]] = []
    monkeypatch.setattr(
        run_summary, "plot_curves", lambda records, path, title: drawn.append(records) or path
    )
    history = [{"step": s, "reward": 0.5, "tool_calls": 8} for s in (1, 2, 3)]
    run_summary.plot_run(tmp_path, 0.62, history, 3, 0.8, "tools")
    accuracy = [(r["step"], r["dev_accuracy"]) for r in drawn[0] if "dev_accuracy" in r]
    assert accuracy == [(0, 0.62), (3, 0.8)]
    run_summary.plot_run(tmp_path, None, history, 3, None, "no eval set")  # nothing to draw, no empty point
    assert not any("dev_accuracy" in r for r in drawn[1])
