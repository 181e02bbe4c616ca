"""`assay validate` on repository tasks (issue 37): named tests the base does not collect are reported
with their ids (the gold's verdict is `invalid`, not a silent 0), and items without hidden tests are
warned about."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from repo_support import FAIL_TO_PASS, swe_row

from assay.engine.scoring import Engine
from assay.settings import RepoSettings, Settings
from assay.validate import validate

pytestmark = pytest.mark.slow


@pytest.fixture
def engine(repos: Path, prefix: Path) -> Iterator[Engine]:
    settings = Settings(workers=1, repo=RepoSettings(repos=repos, python_prefix=prefix, wall_s=120))
    with Engine(settings) as running:
        yield running


def test_validate_names_uncollected_ids_and_warns_without_hidden_tests(engine: Engine) -> None:
    cut = "tests/test_calc.py::test_mul_renamed"
    rows = [swe_row(), swe_row(FAIL_TO_PASS=json.dumps([*FAIL_TO_PASS, cut]))]
    sound, broken = validate(rows, engine, task="repo", near_duplicates=False)
    assert sound.valid, sound.problems
    assert [p.check for p in sound.problems] == ["no_hidden_tests"]
    assert not broken.valid
    unusable = [p for p in broken.problems if p.check == "reference_unusable"]
    assert unusable and cut in unusable[0].reason
