"""Preflight of a repository task set: the gold change passes, the empty change fails, no test is flaky.

A task whose empty change is rewarded teaches nothing and rewards doing nothing (R2E-Gym's issue #27
reports such tasks in a published set); a gold change that is not rewarded means the environment or the
test lists are wrong; a test whose outcome differs between two runs of the same change makes the reward
noise. Each task is judged with its gold change (`patch`, SWE-bench's field, else `response`) `runs`
times and with the empty change once, through the same `RepoScorer.judge` as every item.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import ValidationError

from assay.settings import Settings
from assay.types import Item, Result, Status
from assay.verifiers.repo.patch import extract_diff
from assay.verifiers.repo.scorer import RepoOptions, RepoScorer
from assay.verifiers.repo.task import TaskInvalid, parse_task


def _failing(result: Result) -> set[str]:
    return set(result.details.get("not_passed", {}))


def _brief(result: Result) -> dict[str, Any]:
    return {"status": result.status.value, "reward": result.reward, "reason": result.reason}


def check_task(scorer: RepoScorer, raw: Mapping[str, Any], runs: int = 2) -> dict[str, Any]:
    """One task's preflight: `ok` is true when it has no problem; `problems` says what is wrong."""
    name = raw.get("instance_id") or raw.get("id")
    try:
        # Only the item's fields: a SWE-bench row also carries problem_statement, hints_text, version...
        item = Item.model_validate({**{k: v for k, v in raw.items() if k in Item.FIELDS}, "task": "repo"})
        task = parse_task(item)
    except (ValidationError, TaskInvalid) as exc:
        return {"id": name, "ok": False, "problems": [f"invalid: {exc}"], "flaky": []}
    gold = extract_diff(task.gold_patch or item.response or "")
    options = RepoOptions()
    problems: list[str] = []
    gold_runs = [scorer.judge(task, gold, options) for _ in range(max(1, runs))] if gold else []
    empty = scorer.judge(task, "", options)
    if not gold:
        problems.append("no gold change (`patch` or `response`)")
    for result in (*gold_runs, empty):
        if result.status is not Status.OK:
            problems.append(f"{result.status.value}: {result.reason}")
    failing = [_failing(r) for r in gold_runs]
    flaky = sorted(set[str]().union(*failing) - failing[0].intersection(*failing)) if failing else []
    if flaky:
        problems.append(f"flaky: {len(flaky)} test(s) changed outcome between runs of the gold change")
    if any(r.status is Status.OK and r.reward != 1.0 for r in gold_runs):
        problems.append(
            f"the gold change is not rewarded: {next(r.reason for r in gold_runs if r.reward != 1.0)}"
        )
    if empty.status is Status.OK and empty.reward == 1.0:
        problems.append("rewarded with no change: the FAIL_TO_PASS tests already pass")
    base_failing = sorted(_failing(empty) & set(task.pass_to_pass)) if empty.status is Status.OK else []
    if base_failing:
        problems.append(f"{len(base_failing)} PASS_TO_PASS test(s) fail without a change: {base_failing[:3]}")
    return {
        "id": name,
        "ok": not problems,
        "problems": problems,
        "flaky": flaky,
        "gold": [_brief(r) for r in gold_runs],
        "empty": _brief(empty),
    }


def preflight(
    tasks: Iterable[Mapping[str, Any]], settings: Settings, runs: int = 2, parallel: int = 2
) -> list[dict[str, Any]]:
    """The preflight report of each task, in order (see `check_task`)."""
    scorer = RepoScorer(settings)
    with ThreadPoolExecutor(max(1, parallel)) as pool:
        return list(pool.map(lambda raw: check_task(scorer, raw, runs), tasks))
