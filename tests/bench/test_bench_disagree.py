"""Disagreement mining: which rows are listed, and in what order."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from assay.bench.command import main
from assay.bench.dataset import Row
from assay.bench.disagree import mine
from assay.bench.runner import Outcome, Run

ACCEPT, REJECT = Outcome("ok", True, 1.0), Outcome("ok", False, 1.0)
TIMEOUT = Outcome("timeout", None, 1.0, "deadline")


def _rows(n: int) -> list[Row]:
    return [
        Row(i, f"r{i}", {"id": f"r{i}", "task": "math", "response": "x"}, None, "(none)") for i in range(n)
    ]


def _runs(columns: dict[str, list[Outcome]]) -> list[Run]:
    return [Run(name, outcomes, 1.0) for name, outcomes in columns.items()]


def test_ranking_puts_assay_against_all_baselines_first_and_candidate_false_negatives_before_accepts() -> (
    None
):
    runs = _runs(
        {
            "assay": [ACCEPT, ACCEPT, TIMEOUT, ACCEPT, REJECT, REJECT, ACCEPT],
            "b1": [ACCEPT, ACCEPT, ACCEPT, REJECT, ACCEPT, ACCEPT, REJECT],
            "b2": [ACCEPT, REJECT, ACCEPT, REJECT, ACCEPT, REJECT, TIMEOUT],
        }
    )
    ranked = mine(_rows(7), runs)
    # r0 agrees everywhere: not listed. r4: Assay rejects, both baselines accept (2 opposing, FN side);
    # r3: Assay accepts, both reject (2 opposing); r6: Assay vs the one baseline that answered (1);
    # r1, r5: baselines split; r2: Assay reached no verdict.
    assert [r["id"] for r in ranked] == ["r4", "r3", "r6", "r5", "r1", "r2"]
    assert [r["disagreement"]["tier"] for r in ranked] == [
        "assay-vs-baselines",
        "assay-vs-baselines",
        "assay-vs-baselines",
        "baselines-split",
        "baselines-split",
        "status",
    ]
    assert [r["disagreement"]["rank"] for r in ranked] == [1, 2, 3, 4, 5, 6]


def test_records_can_be_labelled_and_fed_back() -> None:
    [record] = mine(_rows(1), _runs({"assay": [REJECT], "b": [ACCEPT]}))
    assert record["label"] is None
    assert record["response"] == "x"
    assert record["disagreement"]["verdicts"] == {"assay": "reject", "b": "accept"}


def test_cli_writes_ranked_disagreements_without_labels(
    tmp_path: Path, write_jsonl: Callable[[Sequence[Any], str], Path], capsys: Any
) -> None:
    lines = [
        {"id": "same", "response": "A:yes|B:yes"},
        {"id": "fn", "response": "A:no|B:yes"},
        {"id": "fp", "response": "A:yes|B:no"},
    ]
    path = write_jsonl(lines, "unlabelled.jsonl")
    argv = [str(path), "--task", "fakebench", "--plugin", "bench_fakes:FakeScorer", "--no-progress"]
    argv += [
        "--baseline",
        "bench_fakes:baseline",
        "--disagreements",
        "--out",
        str(tmp_path / "d"),
        "--no-plots",
    ]
    assert main(argv) == 0
    written = [json.loads(x) for x in (tmp_path / "d" / "disagreements.jsonl").read_text().splitlines()]
    assert [r["id"] for r in written] == ["fn", "fp"]
    out = capsys.readouterr().out
    assert "2 of 3 rows" in out
    assert out.index("fn  [") < out.index("fp  [")
