"""The `repo` task (issue 27): a change to a repository, judged by the repository's own pytest tests.

Modules: task (the item's fields), patch (find, check and apply the diff on the host), workcopy (a
private copy per item, the hygiene scan), run (pytest in the sandbox, the signed report), _reporter (the
pytest plugin inside the sandbox), scorer (the task), preflight (gold passes, empty fails, flaky tests),
command (`assay repo-preflight`), tools (the `repo` session tool).
How the verdict is protected, and what it does not cover: docs/repo.md.
"""

from assay.verifiers.repo.scorer import RepoOptions, RepoScorer

TASK = "assay.verifiers.repo:RepoScorer"  # this folder is the `repo` task (assay.registry)

__all__ = ["RepoOptions", "RepoScorer"]
