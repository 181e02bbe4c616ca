"""`assay doctor` on a real `assay train --demo` run (the run directory the demo's own test checks)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from assay.cli import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_doctor_reports_on_a_real_demo_run(
    demo_run: tuple[Path, subprocess.CompletedProcess[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    out, done = demo_run
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    for key in (
        "frac_zero_advantage",
        "distinct_answers_mean",
        "truncation_rate",
        "error_rate",
        "hedge_rate",
    ):
        assert all(key in r for r in records), key
    assert main(["doctor", str(out)]) == 0
    printed = capsys.readouterr().out
    report = (out / "doctor" / "doctor.md").read_text()
    assert f"{len(records)} steps read" in report
    # the demo logs what five of the checks read; replay and self-evolution are off in the demo
    for title in ("Vanishing advantage", "Exploration collapse", "Length explosion", "Reward hacking"):
        assert f"## {title}: no data" not in report, title
        assert title in printed
    assert "## Stale replay: no data" in report and "## Runaway self-evolution: no data" in report
    assert (out / "doctor" / "vanishing_advantage.png").read_bytes().startswith(PNG_MAGIC)
