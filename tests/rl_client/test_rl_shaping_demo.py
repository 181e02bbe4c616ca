"""`assay train --demo --set algorithm.shaping...` (issue 40): the command line refuses what the demo
cannot take, and the demo trains on the shaped rewards (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.rl_client.runs.command import main


@pytest.mark.parametrize(
    ("assignment", "needle"),
    [
        ("train.steps=3", "algorithm.shaping.FIELD=VALUE only"),
        ("algorithm.shaping.method=adapt_thinking", "one of"),
        ("algorithm.shaping.beta=-1", "must be >= 0"),
        ("algorithm.shaping.gamma=1", "gamma"),
    ],
)
def test_the_demo_refuses_any_other_set_in_one_line_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], assignment: str, needle: str
) -> None:
    assert main(["--demo", "--out", str(tmp_path / "run"), "-q", "--set", assignment]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert needle in captured.err
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("method", ["shorter_better", "s_grpo"])
def test_the_demo_trains_on_the_shaped_rewards(tmp_path: Path, method: str) -> None:
    out = tmp_path / "run"
    argv = ["--demo", "--out", str(out), "-q", "--steps", "3", "--prompts-per-step", "8"]
    assert main([*argv, "--set", f"algorithm.shaping.method={method}"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["steps"], summary["shaping"]) == (3, method)
    assert summary["response_length"] > 0
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert any(r["raw_reward"] > 0 for r in records), records
    for record in records:
        if method == "shorter_better":  # 2 x correct - 0.001 x |length - SOL|, lengths within 4 tokens
            assert abs(record["reward"] - 2 * record["raw_reward"]) <= 0.001 * 4, record
        else:  # the k-th correct exit earns 1/2^(k-1) <= 1, a wrong one 0: never above the raw reward
            assert record["reward"] <= record["raw_reward"] + 1e-9, record
        assert record["reward"] != record["raw_reward"] or record["raw_reward"] == 0, record
