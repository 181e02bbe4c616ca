"""`assay doctor` on synthetic runs: each failure mode is diagnosed on a run that shows it, and the
healthy run trips nothing. The runs are step logs written the way `assay train` writes them."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assay.doctor import Run, diagnose, load_run
from assay.doctor.command import main
from assay.doctor.monitor import Monitor
from assay.doctor.report import write_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STEPS = 30


def _ramp(start: float, end: float) -> Callable[[int], float]:
    return lambda step: start + (end - start) * (step - 1) / (STEPS - 1)


# A run that learns: reward and held-out accuracy rise together, entropy eases, nothing fails.
HEALTHY: dict[str, Callable[[int], float | None]] = {
    "reward": _ramp(0.40, 0.62),
    "accuracy": _ramp(0.40, 0.62),
    "dev_accuracy": lambda s: _ramp(0.35, 0.55)(s) if s % 5 == 0 else None,
    "entropy": _ramp(1.2, 0.85),
    "distinct_answers_mean": _ramp(3.6, 2.7),
    "frac_zero_advantage": lambda s: 0.40 + 0.05 * (s % 3),
    "truncation_rate": lambda s: 0.01,
    "response_length": _ramp(3.0, 3.2),
    "replay_lag_mean": lambda s: 1.0 if s % 4 == 0 else None,
    "invalid_rate": lambda s: 0.0,
    "timeout_rate": lambda s: 0.0,
    "error_rate": lambda s: 0.002 * (s % 2),
    "hedge_rate": lambda s: 0.0,
    "constant_answer_share": lambda s: 0.06,
    "task_difficulty": lambda s: 0.5 + 0.02 * (s % 3),
    # multi-turn tool use (issue 26): about one call per rollout, few errors, answers after the calls
    "tool_calls_per_rollout": lambda s: 0.9 + 0.02 * (s % 3),
    "tool_error_rate": lambda s: 0.05,
    "never_stop_calling_share": lambda s: 0.1,
    "observation_share": lambda s: 0.3,
}


def write_run(directory: Path, **changes: Callable[[int], float | None]) -> Path:
    signals = {**HEALTHY, **changes}
    lines = []
    for step in range(1, STEPS + 1):
        record: dict[str, Any] = {"step": step}
        record.update({k: v for k, f in signals.items() if (v := f(step)) is not None})
        lines.append(json.dumps(record))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "log.jsonl").write_text("\n".join(lines) + "\n")
    return directory


def tripped(directory: Path) -> set[str]:
    return {f.mode for f in diagnose(load_run(directory)) if f.tripped}


def test_the_healthy_run_trips_nothing(tmp_path: Path) -> None:
    findings = diagnose(load_run(write_run(tmp_path)))
    assert [f.status for f in findings] == ["healthy"] * 11, [(f.mode, f.evidence) for f in findings]


@pytest.mark.parametrize(
    ("signal", "ramp", "mode"),
    [
        ("tool_error_rate", _ramp(0.05, 0.9), "tool_error_storm"),
        ("tool_calls_per_rollout", lambda s: 0.9 if s < STEPS // 2 else 0.0, "tools_never_called"),
        ("never_stop_calling_share", _ramp(0.1, 0.95), "tools_never_stop"),
        ("observation_share", _ramp(0.3, 0.85), "observation_flood"),
    ],
)
def test_multi_turn_failure_modes(
    tmp_path: Path, signal: str, ramp: Callable[[int], float], mode: str
) -> None:
    assert tripped(write_run(tmp_path, **{signal: ramp})) == {mode}


def test_a_single_turn_run_has_no_tool_data_rather_than_a_verdict(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    log = run / "log.jsonl"
    keys = ("tool_calls_per_rollout", "tool_error_rate", "never_stop_calling_share", "observation_share")
    records = [
        {k: v for k, v in json.loads(line).items() if k not in keys} for line in log.read_text().splitlines()
    ]
    log.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    findings = {f.mode: f.status for f in diagnose(load_run(run))}
    assert [
        findings[m]
        for m in ("tool_error_storm", "tools_never_called", "tools_never_stop", "observation_flood")
    ] == ["no data"] * 4


def test_vanishing_advantage(tmp_path: Path) -> None:
    assert tripped(write_run(tmp_path, frac_zero_advantage=_ramp(0.5, 0.97))) == {"vanishing_advantage"}


def test_exploration_collapse(tmp_path: Path) -> None:
    run = write_run(tmp_path, entropy=_ramp(1.2, 0.1), distinct_answers_mean=_ramp(3.5, 1.05))
    assert tripped(run) == {"exploration_collapse"}


def test_length_explosion(tmp_path: Path) -> None:
    run = write_run(tmp_path, truncation_rate=_ramp(0.01, 0.45), response_length=_ramp(120, 480))
    assert tripped(run) == {"length_explosion"}


def test_stale_replay(tmp_path: Path) -> None:
    assert tripped(write_run(tmp_path, replay_lag_mean=lambda s: 5.0 if s % 2 else None)) == {"stale_replay"}


def test_reward_hacking_reward_up_held_out_flat(tmp_path: Path) -> None:
    run = write_run(tmp_path, reward=_ramp(0.3, 0.9), dev_accuracy=lambda s: 0.35 if s % 5 == 0 else None)
    assert tripped(run) == {"reward_hacking"}


@pytest.mark.parametrize(
    "signal",
    ["hedge_rate", "test_literal_rate", "constant_answer_share", "flagged_rate"],
    ids=["hedges", "literals", "sql", "flagged"],
)
def test_reward_hacking_by_exploit_rates(tmp_path: Path, signal: str) -> None:
    assert tripped(write_run(tmp_path, **{signal: _ramp(0.0, 0.8)})) == {"reward_hacking"}


def test_brittle_verifier_rising_failures(tmp_path: Path) -> None:
    assert tripped(write_run(tmp_path, timeout_rate=_ramp(0.0, 0.12))) == {"brittle_verifier"}


def test_brittle_verifier_from_judge_disagreement(tmp_path: Path) -> None:
    assert tripped(write_run(tmp_path, judge_disagreement_rate=lambda s: 0.3)) == {"brittle_verifier"}


def test_brittle_verifier_from_the_servers_counters(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path)
    (run_dir / "server_metrics.prom").write_text(
        "# TYPE assay_items counter\n"
        'assay_items_total{status="ok",task="math"} 900.0\n'
        'assay_items_total{status="timeout",task="math"} 100.0\n'
    )
    assert tripped(run_dir) == {"brittle_verifier"}


def test_reward_hacking_from_the_flags_a_server_counted(tmp_path: Path) -> None:
    """End to end: a verifier's details.flags -> the engine's /metrics -> the doctor's reward-hacking mode."""
    from assay import Engine, Settings

    settings = Settings(workers=1, plugins=["assay_test_plugins:GullibleMathScorer"])
    items = [{"task": "gullible_math", "response": f"3 or 4 or {n}", "reference": "4"} for n in range(20)]
    items += [{"task": "gullible_math", "response": "4", "reference": "4"}] * 20
    with Engine(settings) as engine:
        engine.score(items)
        scrape = engine.metrics.render().decode()
    assert 'assay_flagged_items_total{flag="reference_substring",task="gullible_math"} 20.0' in scrape
    run_dir = write_run(tmp_path)
    (run_dir / "server_metrics.prom").write_text(scrape)
    finding = next(f for f in diagnose(load_run(run_dir)) if f.mode == "reward_hacking")
    assert finding.tripped and "reference_substring on 50.0% of items" in finding.evidence


def test_a_server_without_flags_is_healthy_for_reward_hacking(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path)
    (run_dir / "server_metrics.prom").write_text('assay_items_total{status="ok",task="math"} 900.0\n')
    finding = next(f for f in diagnose(load_run(run_dir)) if f.mode == "reward_hacking")
    assert finding.status == "healthy" and "flags on 900 items (none)" in finding.evidence


def test_runaway_self_evolution(tmp_path: Path) -> None:
    assert tripped(write_run(tmp_path, task_difficulty=_ramp(0.5, 0.95))) == {"runaway_self_evolution"}


def test_a_signal_that_was_not_logged_is_no_data_not_healthy(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").write_text('{"step": 1, "reward": 0.5}\nnot json\n')
    run = load_run(tmp_path)
    assert {f.status for f in diagnose(run)} == {"no data"}
    assert run.problems == ["line 2: not valid JSON (Expecting value)"]


def test_the_server_gauge_stands_in_for_a_missing_step_signal(tmp_path: Path) -> None:
    run = Run([{"step": 1}], server={"assay_groups_zero_advantage_fraction": 0.93})
    (finding,) = [f for f in diagnose(run) if f.mode == "vanishing_advantage"]
    assert finding.tripped and "server" in finding.evidence


def test_report_has_every_mode_with_threshold_and_advice_and_plots(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "run", truncation_rate=_ramp(0.0, 0.5)))
    path = write_report(run, diagnose(run), tmp_path / "out")
    text = path.read_text()
    assert "1 failure mode(s) tripped**: Length explosion" in text
    assert text.count("- Threshold: ") == 11 and text.count("- What to try: ") == 11
    assert "![Length explosion](length_explosion.png)" in text
    assert (tmp_path / "out" / "length_explosion.png").read_bytes().startswith(PNG_MAGIC)


def test_without_matplotlib_the_report_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.doctor.report as report

    monkeypatch.setattr(report, "plots_available", lambda: False)
    run = load_run(write_run(tmp_path / "run"))
    text = report.write_report(run, diagnose(run), tmp_path / "out").read_text()
    assert "Plots skipped: matplotlib is not installed" in text
    assert not list((tmp_path / "out").glob("*.png"))


def test_cli_strict_exit_status_and_missing_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    healthy = write_run(tmp_path / "healthy")
    sick = write_run(tmp_path / "sick", frac_zero_advantage=lambda s: 0.95)
    assert main([str(healthy), "--strict", "--no-plots"]) == 0
    assert main([str(sick), "--strict", "--no-plots"]) == 3
    assert main([str(sick), "--no-plots"]) == 0
    assert (sick / "doctor" / "doctor.md").is_file()
    assert main([str(tmp_path / "nowhere")]) == 1
    assert "no step log" in capsys.readouterr().err


def test_cli_reads_the_servers_metrics_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = write_run(tmp_path)
    assert main([str(run_dir), "--metrics-url", "http://127.0.0.1:9", "--no-plots"]) == 1  # nothing listens
    assert "cannot read http://127.0.0.1:9/metrics" in capsys.readouterr().err


def test_the_trainer_monitor_warns_once_when_a_mode_trips(caplog: pytest.LogCaptureFixture) -> None:
    monitor = Monitor()
    caplog.set_level(logging.WARNING, logger="assay.doctor")
    tripped_at = []
    for step in range(1, STEPS + 1):
        record = {"step": step, "frac_zero_advantage": 0.3 if step < 10 else 0.99}
        if monitor.update(record):
            tripped_at.append(step)
    assert len(tripped_at) == 1
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [f"step {tripped_at[0]}"]
    assert "Vanishing advantage" in caplog.records[0].getMessage()
