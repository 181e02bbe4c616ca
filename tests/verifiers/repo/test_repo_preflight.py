"""Preflight of repository tasks: as a function, the `assay repo-preflight` command and the endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from fastapi.testclient import TestClient
from repo_support import FAIL_TO_PASS, PASS_TO_PASS, calc_change, swe_row

from assay.api import create_app
from assay.cli import main
from assay.registry import Registry
from assay.settings import RepoSettings, Settings
from assay.types import Item, Result, TaskFields
from assay.verifiers.repo.preflight import check_task, item_model, plan, preflight
from assay.verifiers.repo.probes import RepoValidation
from assay.verifiers.repo.scorer import RepoOptions, RepoScorer
from assay.verifiers.repo.task import RepoTask


def test_a_good_task_passes_preflight(scorer: RepoScorer) -> None:
    report = check_task(scorer, swe_row())
    assert report["ok"], report
    assert [g["reward"] for g in report["gold"]] == [1.0, 1.0] and report["empty"]["reward"] == 0.0


def test_a_task_rewarded_with_no_change_is_reported(scorer: RepoScorer) -> None:
    report = check_task(scorer, swe_row(FAIL_TO_PASS=json.dumps(PASS_TO_PASS[:1])))
    assert not report["ok"]
    assert any("rewarded with no change" in p for p in report["problems"])


def test_a_gold_patch_that_fails_is_reported(scorer: RepoScorer) -> None:
    report = check_task(scorer, swe_row(patch=""), runs=1)
    assert not report["ok"] and any("no gold change" in p for p in report["problems"])
    report = check_task(scorer, swe_row(patch=calc_change("return a + b", "return b + a")), runs=1)
    assert any("gold change is not rewarded" in p for p in report["problems"])


def test_an_invalid_task_is_reported_not_raised(scorer: RepoScorer) -> None:
    report = check_task(scorer, swe_row(FAIL_TO_PASS="not json"))
    assert not report["ok"] and report["problems"][0].startswith("invalid")


class _Scripted(RepoScorer):
    """Gold verdicts that differ between runs, as a flaky test makes them (the judge is scripted)."""

    def __init__(self, runs: Iterator[Result]) -> None:
        super().__init__(Settings())
        self.runs = runs

    def judge(self, task: RepoTask, diff: str, options: RepoOptions) -> Result:
        if not diff:
            return Result.verdict(False, "empty", details={"not_passed": {FAIL_TO_PASS[0]: "failed"}})
        return next(self.runs)


def test_tests_that_change_outcome_between_gold_runs_are_flaky() -> None:
    flaky_test = PASS_TO_PASS[1]
    runs = iter(
        [
            Result.verdict(True, "all pass", details={"not_passed": {}}),
            Result.verdict(False, "one fails", details={"not_passed": {flaky_test: "failed"}}),
        ]
    )
    report = check_task(_Scripted(runs), swe_row())
    assert report["flaky"] == [flaky_test] and not report["ok"]


def test_the_preflight_function_keeps_the_order(scorer: RepoScorer) -> None:
    settings = scorer.settings
    reports = preflight([swe_row(instance_id="a"), swe_row(instance_id="b", patch="")], settings, runs=1)
    assert [r["id"] for r in reports] == ["a", "b"] and [r["ok"] for r in reports] == [True, False]


def test_the_cli_command_writes_reports_and_fails_on_a_problem(
    tmp_path: Path,
    repos: Path,
    prefix: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ASSAY_REPOS", str(repos))
    monkeypatch.setenv("ASSAY_REPO__PYTHON_PREFIX", str(prefix))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(swe_row()) + "\n")
    assert main(["repo-preflight", str(tasks), "--runs", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    tasks.write_text(json.dumps(swe_row(patch="")) + "\n")
    assert main(["repo-preflight", str(tasks), "--runs", "1"]) == 1
    assert main(["repo-preflight", str(tmp_path / "missing.jsonl")]) == 2


def test_the_endpoint_answers_reports(repos: Path, prefix: Path) -> None:
    settings = Settings(workers=1, repo=RepoSettings(repos=repos, python_prefix=prefix))
    with TestClient(create_app(settings)) as client:
        answer = client.post("/v1/repo/preflight", json={"tasks": [swe_row()], "runs": 1})
        assert answer.status_code == 200, answer.text
        assert answer.json()["reports"][0]["ok"] is True
        too_many = client.post("/v1/repo/preflight", json={"tasks": [swe_row()] * 33})
        assert too_many.status_code == 422 and "error" in too_many.json()


class ReviewFields(TaskFields):
    reviewed_by: str | None = None


class Reviewed(RepoScorer):
    """The repo task extended with an item field of its own (`Scorer.Fields`), as a plugin may extend it:
    a change is rewarded only on an item that kept the field (the judge is scripted)."""

    Fields: ClassVar[type[TaskFields] | None] = ReviewFields

    def score(self, item: Item, options: RepoOptions) -> Result:
        kept = ReviewFields.of(item).reviewed_by == "ada"
        return Result.verdict(kept and bool(item.response), "scripted", details={"not_passed": {}})


def test_preflight_keeps_the_repo_tasks_own_fields() -> None:
    row = swe_row(reviewed_by="ada")
    report = check_task(Reviewed(Settings()), row, runs=1)
    assert report["ok"], report
    # The endpoint's model: the repo task the engine's registry serves (here the plugin's).
    model = item_model(Registry.from_settings(Settings(plugins=[f"{__name__}:Reviewed"])))
    planned = plan(row, model, runs=1)
    assert isinstance(planned, list) and [i["reviewed_by"] for i in planned] == ["ada", "ada"]


def test_a_validation_row_keeps_the_repo_tasks_own_fields() -> None:
    row = RepoValidation().row({**swe_row(), "reviewed_by": "ada"}, Reviewed.item_model())
    assert row["reviewed_by"] == "ada" and row["prompt"] == "mul is off by one"
    assert "problem_statement" not in row and "version" not in row
