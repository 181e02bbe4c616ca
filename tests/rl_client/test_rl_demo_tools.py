"""`assay train --demo tools` (issue 26): with the python tool a tiny model multiplies 3-digit numbers
it cannot multiply in its head; the summary says so, measured against a live Assay service."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from assay_testing import bwrap_works

from assay.rl_client.runs.command import build_parser


def test_demo_alone_is_still_the_addition_demo_and_tools_is_its_own() -> None:
    parser = build_parser()
    assert parser.parse_args(["--demo", "--out", "x"]).demo == "add"
    assert parser.parse_args(["--demo", "tools", "--out", "x"]).demo == "tools"
    with pytest.raises(SystemExit):
        parser.parse_args(["--demo", "chess", "--out", "x"])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_tools_demo_beats_the_no_tool_baseline(tmp_path: Path) -> None:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    out = tmp_path / "run"
    command = [sys.executable, "-m", "assay.rl_client", "--demo", "tools", "--out", str(out), "-q"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=590)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout)
    summary = json.loads((out / "summary.json").read_text())
    assert printed == summary
    for key in ("eval_start", "eval_end", "eval_no_tools"):
        assert 0.0 <= summary[key] <= 1.0
    # the schema every run kind shares (issue 43), the old names kept
    assert (summary["accuracy_before"], summary["accuracy_after"]) == (
        summary["eval_start"],
        summary["eval_end"],
    )
    assert summary["steps"] == summary["rl_steps"] > 0 and summary["stopped_by"] in ("steps", "time_budget")
    assert summary["eval_end"] >= 0.6
    assert summary["eval_end"] - summary["eval_no_tools"] >= 0.4
    assert summary["seconds"] <= 300
    assert (out / "curves.png").read_bytes().startswith(b"\x89PNG")
    steps = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert (
        steps and all(s["tool_calls"] > 0 for s in steps) and all(s["session_failures"] == 0 for s in steps)
    )


def test_the_tools_demo_takes_steps_and_a_time_budget_and_refuses_flags_it_would_ignore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from assay.rl_client.runs import demo_tools
    from assay.rl_client.runs.command import main

    given: list[Any] = []
    monkeypatch.setattr(demo_tools, "run_tools_demo", lambda out, options: given.append(options) or {})
    assert main(["--demo", "tools", "--out", str(tmp_path), "--steps", "3", "--time-budget", "9", "-q"]) == 0
    assert main(["--demo", "tools", "--out", str(tmp_path), "-q"]) == 0
    assert [(o.rl_steps, o.time_budget_s) for o in given] == [(3, 9.0), (20, 480.0)]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["--demo", "tools", "--out", str(tmp_path), "--lr", "1e-4", "--group-size", "4"])
    assert exit_.value.code == 2
    assert "--demo tools does not take --lr, --group-size" in capsys.readouterr().err
