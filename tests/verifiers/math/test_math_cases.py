"""Every labelled case of tests/cases/math.jsonl through the real pipeline (Engine, 2 workers).

Targets from issue 3: false-negative rate <= 2% and false-positive rate <= 1% overall; a failure lists
the ids so the regression can be read in the case file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.scoring import Engine
from assay.settings import Settings

CASES = Path(__file__).resolve().parents[2] / "cases" / "math.jsonl"
FIELDS = {"id", "task", "response", "reference", "label", "category", "note"}


def load_cases() -> list[dict[str, object]]:
    with CASES.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_case_file_is_well_formed() -> None:
    cases = load_cases()
    assert len(cases) >= 400
    assert all(set(case) == FIELDS for case in cases)
    assert len({case["id"] for case in cases}) == len(cases)
    assert all(isinstance(case["label"], bool) and case["note"] for case in cases)


@pytest.mark.slow
def test_error_rates_through_the_engine() -> None:
    cases = load_cases()
    items = [
        {"id": c["id"], "task": "math", "response": c["response"], "reference": c["reference"]} for c in cases
    ]
    with Engine(Settings(workers=2, plugins=[])) as engine:
        results = engine.score(items)
    by_id = {r.id: r for r in results}
    not_ok = [c["id"] for c in cases if by_id[c["id"]].status.value != "ok"]
    false_negatives = [c["id"] for c in cases if c["label"] and by_id[c["id"]].correct is not True]
    false_positives = [c["id"] for c in cases if not c["label"] and by_id[c["id"]].correct is True]
    positives = sum(1 for c in cases if c["label"])
    negatives = len(cases) - positives
    assert not not_ok, f"not scored ok: {not_ok}"
    assert len(false_negatives) <= 0.02 * positives, f"false negatives: {false_negatives}"
    assert len(false_positives) <= 0.01 * negatives, f"false positives: {false_positives}"
