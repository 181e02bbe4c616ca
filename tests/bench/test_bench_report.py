"""report.json against a hand-computed example, with a fake task and a fake baseline (bench_fakes)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from assay.bench.command import main

FAKE = ["--task", "fakebench", "--plugin", "bench_fakes:FakeScorer", "--no-progress"]
BASELINE = ["--baseline", "bench_fakes:baseline"]

# id, response (what each side answers), label, category; the expected verdicts are in the comments.
ROWS = [
    ("r1", "A:yes|B:yes", True, "x"),  # both accept a true item
    ("r2", "A:yes|B:no", True, "x"),  # baseline FN
    ("r3", "A:timeout|B:yes", True, "y"),  # Assay FN by timeout (a non-ok on a true item is no pass)
    ("r4", "A:no|B:no", True, "y"),  # both FN
    ("r5", "A:no|B:yes", False, "x"),  # baseline FP
    ("r6", "A:yes|B:boom", False, "y"),  # Assay FP; the baseline crashes: an error, not an FP
    ("r7", "A:error|B:no", False, "x"),  # Assay error on a false item: not an FP
    ("r8", "A:yes|B:yes", None, "x"),  # unlabelled: scored, not counted
]


def _line(row: tuple[str, str, bool | None, str]) -> dict[str, Any]:
    rid, response, label, category = row
    return {"id": rid, "response": response, "label": label, "category": category, "note": "ignored"}


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One bench run over the hand-computed set, shared by the tests that read its outputs."""
    folder = tmp_path_factory.mktemp("hand")
    bad = {"id": "r9", "response": "A:yes|B:yes", "label": "maybe", "category": "x"}
    path = folder / "hand.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [*map(_line, ROWS), bad]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASSAY_WORKERS", "2")
        assert main([str(path), *FAKE, *BASELINE, "--out", str(folder / "out")]) == 0
    return folder / "out"


@pytest.fixture
def report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "report.json").read_text())
    return data


def test_assay_rates_match_the_hand_count(report: dict[str, Any]) -> None:
    assay = report["verifiers"]["assay"]
    assert (assay["positives"], assay["negatives"]) == (4, 3)
    assert assay["false_negatives"] == ["r3", "r4"]
    assert assay["false_positives"] == ["r6"]
    assert assay["fn_rate"] == pytest.approx(2 / 4)
    assert assay["fp_rate"] == pytest.approx(1 / 3)
    assert assay["accuracy"] == pytest.approx(4 / 7)
    assert (assay["timeout"], assay["error"], assay["invalid"]) == (1, 1, 1)
    assert (assay["non_ok_on_true"], assay["non_ok_on_false"]) == (1, 1)


def test_baseline_rates_match_the_hand_count(report: dict[str, Any]) -> None:
    base = report["verifiers"]["bench_fakes:baseline"]
    assert base["false_negatives"] == ["r2", "r4"]
    assert base["false_positives"] == ["r5"]
    assert base["fn_rate"] == pytest.approx(0.5)
    assert base["fp_rate"] == pytest.approx(1 / 3)
    assert base["accuracy"] == pytest.approx(4 / 7)
    assert (base["timeout"], base["error"], base["invalid"]) == (0, 1, 1)


def test_per_category_rates_match_the_hand_count(report: dict[str, Any]) -> None:
    assay = report["verifiers"]["assay"]["by_category"]
    base = report["verifiers"]["bench_fakes:baseline"]["by_category"]
    assert (assay["x"]["fn_rate"], assay["x"]["fp_rate"]) == (0.0, 0.0)
    assert (assay["y"]["fn_rate"], assay["y"]["fp_rate"]) == (1.0, 1.0)
    assert (base["x"]["fn_rate"], base["x"]["fp_rate"]) == (0.5, 0.5)
    assert (base["y"]["fn_rate"], base["y"]["fp_rate"]) == (0.5, 0.0)


def test_a_row_that_cannot_become_an_item_is_reported_and_scored_invalid(report: dict[str, Any]) -> None:
    assert report["items"] == 9
    assert [p["id"] for p in report["problems"]] == ["r9"]
    assert "maybe" in report["problems"][0]["problem"]
    assert report["unlabelled"] == 2


def test_latency_and_throughput_are_reported_for_every_verifier(report: dict[str, Any]) -> None:
    for summary in report["verifiers"].values():
        assert summary["latency_ms"]["p50"] <= summary["latency_ms"]["p99"]
        assert summary["items_per_s"] > 0


def test_report_md_lists_the_table_and_the_error_ids(out: Path) -> None:
    text = (out / "report.md").read_text()
    assert "| assay | 50.0% | 33.3% | 57.1% |" in text
    assert "false negatives r3, r4" in text
    assert "r9" in text


@pytest.mark.parametrize("name", ["fn_fp_by_category.png", "latency.png"])
def test_plots_are_non_empty_pngs(out: Path, name: str) -> None:
    data = (out / name).read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 2000


def test_a_crashing_baseline_is_recorded_as_its_error(
    tmp_path: Path, write_jsonl: Callable[[Sequence[Any], str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl([_line(ROWS[5]), _line(ROWS[0])], "crash.jsonl")
    assert main([str(path), *FAKE, *BASELINE, "--out", str(tmp_path / "c"), "--no-plots"]) == 0
    base = json.loads((tmp_path / "c" / "report.json").read_text())["verifiers"]["bench_fakes:baseline"]
    assert (base["items"], base["error"], base["ok"]) == (2, 1, 1)
    assert "bench_fakes:baseline" in capsys.readouterr().out


def test_a_baseline_answer_that_is_not_a_bool_is_an_error(
    tmp_path: Path, write_jsonl: Callable[[Sequence[Any], str], Path]
) -> None:
    path = write_jsonl([_line(ROWS[0])], "text.jsonl")
    out = tmp_path / "t"
    assert (
        main([str(path), *FAKE, "--baseline", "bench_fakes:returns_text", "--out", str(out), "--no-plots"])
        == 0
    )
    assert (
        json.loads((out / "report.json").read_text())["verifiers"]["bench_fakes:returns_text"]["error"] == 1
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--baseline", "nosuch"], 'unknown baseline "nosuch"'),
        (["--task", "mathh"], "did you mean"),
    ],
)
def test_usage_problems_exit_2_with_a_reason(
    write_jsonl: Callable[[Sequence[Any], str], Path],
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    path = write_jsonl([_line(ROWS[0])], "u.jsonl")
    assert main([str(path), *FAKE, *extra]) == 2
    assert message in capsys.readouterr().err


def test_a_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "none.jsonl"), *FAKE]) == 2
    assert "none.jsonl" in capsys.readouterr().err


def test_percentiles_are_nearest_rank() -> None:
    from assay.bench.metrics import percentile

    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 20)) == (3.0, 5.0, 1.0)
    assert percentile([], 50) is None


def test_an_empty_file_gives_an_empty_report_and_plots(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    assert main([str(path), *FAKE, *BASELINE, "--out", str(tmp_path / "e")]) == 0
    report = json.loads((tmp_path / "e" / "report.json").read_text())
    assert report["items"] == 0
    assert report["verifiers"]["assay"]["fn_rate"] is None
    assert (tmp_path / "e" / "latency.png").stat().st_size > 0
