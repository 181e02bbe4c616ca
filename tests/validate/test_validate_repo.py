"""Repository tasks in `validate`: the gold patch passes (twice, test by test), the empty change fails;
a SWE-bench row is read as the repo task's item."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from assay_testing import bwrap_works

from assay.engine.scoring import Engine
from assay.settings import RepoSettings, Settings
from assay.validate import validate

# The repo task tests' tiny project and its task (tests/verifiers/repo/repo_support.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verifiers" / "repo"))
from repo_support import PASS_TO_PASS, make_repo, runtime_prefix, swe_row

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repo_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    if not bwrap_works():
        pytest.fail("bubblewrap cannot run here; repository tasks need it")
    root = tmp_path_factory.mktemp("repos")
    make_repo(root)
    settings = Settings(workers=1, repo=RepoSettings(repos=root, python_prefix=runtime_prefix(), wall_s=120))
    with Engine(settings) as engine:
        yield engine


def test_a_sound_swe_bench_row_is_valid(repo_engine: Engine) -> None:
    (report,) = validate([swe_row()], repo_engine, task="repo", near_duplicates=False)
    assert report.valid, report.problems
    assert report.task == "repo"


def test_a_task_rewarded_for_doing_nothing_and_a_gold_that_fails_are_named(repo_engine: Engine) -> None:
    # FAIL_TO_PASS naming a test that already passes: the empty change is rewarded.
    trivial = swe_row(FAIL_TO_PASS=json.dumps(PASS_TO_PASS[:1]), PASS_TO_PASS=json.dumps(PASS_TO_PASS[1:]))
    broken = swe_row(patch="diff --git a/calc/__init__.py b/calc/__init__.py\n--- a/calc/__init__.py\n"
                  "+++ b/calc/__init__.py\n@@ -1 +1 @@\n-nothing here\n+something\n")  # fmt: skip
    reports = validate([trivial, broken], repo_engine, task="repo", near_duplicates=False)
    assert {p.check for p in reports[0].problems} >= {"trivial_rewarded"}
    assert "reference_rejected" in {p.check for p in reports[1].problems}
