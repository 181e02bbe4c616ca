"""The repo task on a project someone else wrote: inflection's sdist and its own pytest suite, with a
bug injected by the benchmark's generator (downloaded from the package index at test time)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from assay.settings import RepoSettings, Settings
from assay.types import Item
from assay.verifiers.repo import RepoOptions, RepoScorer

ROOT = Path(__file__).resolve().parents[3]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("repo_tasks", ROOT / "benchmarks" / "repo_tasks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_injected_bugs_in_a_real_project(tmp_path: Path, prefix: Path) -> None:
    bench = _generator()
    project = next(p for p in bench.PROJECTS if p.name == "inflection")
    repos = tmp_path / "repos"
    repo = bench.download(project, tmp_path / "sdists", repos)
    tasks = bench.make_tasks(project, repo, prefix, count=1, seed=1)
    assert len(tasks) == 1 and all(t["FAIL_TO_PASS"] and t["PASS_TO_PASS"] for t in tasks)
    scorer = RepoScorer(Settings(repo=RepoSettings(repos=repos, python_prefix=prefix)))

    def reward(task: dict[str, object], change: str) -> float | None:
        fields = {k: v for k, v in task.items() if k in Item.model_for("repo").model_fields}
        return scorer.score(Item.model_validate({**fields, "response": change}), RepoOptions()).reward

    for task in tasks:
        assert reward(task, str(task["patch"])) == 1.0, task["_bug"]
        assert reward(task, "") == 0.0
        assert reward(task, bench.test_edit(repo, task)) == 0.0
        other = bench.other_function(repo, task)
        assert other is not None and reward(task, other) == 0.0
