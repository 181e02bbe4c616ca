"""One real run: the math task through the engine against math-verify, and the module entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from assay.bench.command import main

CASES = Path(__file__).parents[1] / "cases" / "math.jsonl"

ITEMS = [
    {
        "id": "half",
        "response": "so $\\boxed{\\frac{1}{2}}$",
        "reference": "0.5",
        "label": True,
        "category": "frac",
    },
    {
        "id": "wrong",
        "response": "The answer is \\boxed{5}.",
        "reference": "4",
        "label": False,
        "category": "int",
    },
    {
        "id": "four",
        "response": "The answer is \\boxed{4}.",
        "reference": "4",
        "label": True,
        "category": "int",
    },
    {"id": "none", "response": "I do not know.", "reference": "4", "label": False, "category": "int"},
    # A bare final answer without \boxed: verl's math-verify call also extracts plain expressions.
    {
        "id": "sq",
        "response": "$\\boxed{x^2+2x+1}$",
        "reference": "(x+1)^2",
        "label": True,
        "category": "expr",
    },
]


@pytest.mark.slow
def test_real_math_run_scores_clear_items_right_with_both_verifiers(
    tmp_path: Path, write_jsonl: Callable[[Sequence[Any], str], Path]
) -> None:
    path = write_jsonl([{**item, "task": "math"} for item in ITEMS], "math.jsonl")
    assert (
        main([str(path), "--task", "math", "--out", str(tmp_path / "m"), "--no-progress", "--no-plots"]) == 0
    )
    report = json.loads((tmp_path / "m" / "report.json").read_text())
    assert list(report["verifiers"]) == ["assay", "math-verify"]
    for name, summary in report["verifiers"].items():
        assert (summary["positives"], summary["negatives"]) == (3, 2), name
        assert (summary["fn"], summary["fp"], summary["ok"]) == (0, 0, 5), name


def test_module_entry_point_prints_its_own_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "assay.bench", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0
    assert "--disagreements" in done.stdout
    assert "false negative" in done.stdout


@pytest.mark.slow
def test_module_entry_point_runs_a_bench(
    tmp_path: Path, write_jsonl: Callable[[Sequence[Any], str], Path]
) -> None:
    path = write_jsonl([{"id": "a", "response": "A:yes|B:no", "label": True}], "m.jsonl")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent), "ASSAY_WORKERS": "1"}
    argv = [sys.executable, "-m", "assay.bench", str(path), "--task", "fakebench", "--no-progress"]
    argv += ["--plugin", "bench_fakes:FakeScorer", "--baseline", "bench_fakes:baseline"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    table = done.stdout.splitlines()
    assert table[2].split()[:3] == ["assay", "0.0%", "-"]
    assert table[3].split()[:3] == ["bench_fakes:baseline", "100.0%", "-"]


@pytest.mark.slow
@pytest.mark.skipif(not CASES.is_file(), reason="tests/cases/math.jsonl is not there")
def test_the_projects_math_cases_are_a_bench_input(tmp_path: Path) -> None:
    argv = [str(CASES), "--task", "math", "--no-baselines", "--limit", "40", "--no-progress", "--no-plots"]
    assert main([*argv, "--out", str(tmp_path / "c")]) == 0
    report = json.loads((tmp_path / "c" / "report.json").read_text())
    assert report["problems"] == []
    assert report["labelled_true"] + report["labelled_false"] == 40


@pytest.mark.slow
def test_a_bench_of_integer_references_scores_them(
    tmp_path: Path, write_jsonl: Callable[[Sequence[Any], str], Path]
) -> None:
    items = [{"task": "math", "response": "\\boxed{4}", "reference": 4, "label": True}] * 2
    path = write_jsonl(items, "ints.jsonl")
    assert (
        main([str(path), "--task", "math", "--out", str(tmp_path / "m"), "--no-progress", "--no-plots"]) == 0
    )
    report = json.loads((tmp_path / "m" / "report.json").read_text())
    for name, summary in report["verifiers"].items():
        assert (summary["fn"], summary["ok"]) == (0, 2), name
