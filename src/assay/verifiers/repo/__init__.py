"""The `repo` task (issue 27): a change to a repository, judged by the repository's own pytest tests.

Modules: task (the item's fields), dependencies (the repository's own environment, built once from its
metadata), patch (find, check and apply the diff on the host; compiled files),
workcopy (a private base tree per item, no history, no bytecode; the hygiene scan), pytest_config (which
configuration pytest reads, asked of pytest), canary (the tests that must fail, planted per item under
the real tests' names), special_cases (changes that answer the visible tests' inputs), run (pytest in the
sandbox, the signed report), _reporter (the pytest plugin inside the sandbox), scorer (the task),
preflight (gold passes, empty fails, flaky tests), command (`assay repo-preflight`), tools (the `repo`
session tool). How the verdict is protected, and what it does not cover: docs/repo.md.
"""

from assay.verifiers.repo.scorer import RepoOptions, RepoScorer

TASK = "assay.verifiers.repo:RepoScorer"  # this folder is the `repo` task (assay.registry)

__all__ = ["RepoOptions", "RepoScorer"]
