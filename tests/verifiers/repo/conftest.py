"""Fixtures of the repo task tests: a repository root with the tiny project, and a scorer over it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from assay_testing import bwrap_works
from repo_support import make_repo, runtime_prefix

from assay.registry import Registry
from assay.settings import RepoSettings, Settings
from assay.types import Item, Result
from assay.verifiers.repo import RepoScorer


@pytest.fixture(scope="session")
def prefix() -> Path:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    return runtime_prefix()


@pytest.fixture
def repos(tmp_path: Path) -> Path:
    root = tmp_path / "repos"
    make_repo(root)
    return root


@pytest.fixture
def scorer(repos: Path, prefix: Path) -> RepoScorer:
    return RepoScorer(Settings(repo=RepoSettings(repos=repos, python_prefix=prefix, wall_s=120)))


@pytest.fixture
def score(scorer: RepoScorer) -> Callable[..., Result]:
    """Score one item (a dict) as the pipeline would: options validated, then `score`."""

    def run(raw: dict[str, Any]) -> Result:
        item = Item.model_validate(raw)
        options = Registry({"repo": RepoScorer}).lookup("repo").parse_options(item.options)
        return scorer.score(item, options)  # type: ignore[arg-type]

    return run
