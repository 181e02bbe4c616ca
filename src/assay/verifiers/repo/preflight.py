"""Preflight of a repository task set: the gold change passes, the empty change fails, no test is flaky.

A task whose empty change is rewarded teaches nothing and rewards doing nothing (R2E-Gym's issue #27
reports such tasks in a published set); a gold change that is not rewarded means the environment or the
test lists are wrong; a test whose outcome differs between two runs of the same change makes the reward
noise. Each task becomes ordinary `repo` items (`plan`): its gold change (`patch`, SWE-bench's field,
else `response`) `runs` times and the empty change once; they are scored like any item, so preflight
adds no verdict path (the endpoint sends them through the engine), and `assess` reads the verdicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import ValidationError

from assay.registry import Registry
from assay.settings import Settings
from assay.types import Item, Result, Status
from assay.verifiers.repo.scorer import RepoOptions, RepoScorer
from assay.verifiers.repo.task import TaskInvalid, parse_task

_DROPPED = ("task", "response", "options", "id", "patch")  # set by `plan` itself


def _name(raw: Mapping[str, Any]) -> Any:
    return raw.get("instance_id") or raw.get("id")


def item_model(registry: Registry) -> type[Item]:
    """The model repository items are read with where `registry` serves: `Item` with the fields of the
    repo task there (`Scorer.Fields`; a plugin may extend the task)."""
    return registry.lookup(RepoScorer.name).item_model()


def _fields(raw: Mapping[str, Any], model: type[Item]) -> dict[str, Any]:
    # Only the item's fields: a SWE-bench row also carries problem_statement, hints_text, version...
    return {k: v for k, v in raw.items() if k in model.model_fields and k not in _DROPPED}


def plan(raw: Mapping[str, Any], model: type[Item], runs: int = 2) -> list[dict[str, Any]] | dict[str, Any]:
    """The items that check one task (the gold change `runs` times, then the empty change), read with
    `model` (`item_model`), or, for a task that cannot be checked, its report."""
    fields = _fields(raw, model)
    try:
        parse_task(model.model_validate({**fields, "task": RepoScorer.name}))
    except (ValidationError, TaskInvalid) as exc:
        return {"id": _name(raw), "ok": False, "problems": [f"invalid: {exc}"], "flaky": []}
    gold = raw.get("patch") or raw.get("response") or ""
    base = {**fields, "task": RepoScorer.name}
    items = [{**base, "response": gold, "id": f"gold-{i}"} for i in range(max(1, runs))] if gold else []
    return [*items, {**base, "response": "", "id": "empty"}]


def _failing(result: Result) -> set[str]:
    return set(result.details.get("not_passed", {}))


def _brief(result: Result) -> dict[str, Any]:
    return {"status": result.status.value, "reward": result.reward, "reason": result.reason}


def assess(raw: Mapping[str, Any], model: type[Item], results: Sequence[Result]) -> dict[str, Any]:
    """One task's report from the verdicts on its `plan` items: `ok` is true when `problems` is empty."""
    *gold_runs, empty = results
    problems = [] if gold_runs else ["no gold change (`patch` or `response`)"]
    problems += [f"{r.status.value}: {r.reason}" for r in results if r.status is not Status.OK]
    failing = [_failing(r) for r in gold_runs]
    flaky = sorted(set[str]().union(*failing) - failing[0].intersection(*failing)) if failing else []
    if flaky:
        problems.append(f"flaky: {len(flaky)} test(s) changed outcome between runs of the gold change")
    unrewarded = [r for r in gold_runs if r.status is Status.OK and r.reward != 1.0]
    if unrewarded:
        problems.append(f"the gold change is not rewarded: {unrewarded[0].reason}")
    if empty.status is Status.OK and empty.reward == 1.0:
        problems.append("rewarded with no change: the FAIL_TO_PASS tests already pass")
    item = model.model_validate({**_fields(raw, model), "task": RepoScorer.name})
    pass_to_pass = parse_task(item).pass_to_pass
    base_failing = sorted(_failing(empty) & set(pass_to_pass)) if empty.status is Status.OK else []
    if base_failing:
        problems.append(f"{len(base_failing)} PASS_TO_PASS test(s) fail without a change: {base_failing[:3]}")
    return {
        "id": _name(raw),
        "ok": not problems,
        "problems": problems,
        "flaky": flaky,
        "gold": [_brief(r) for r in gold_runs],
        "empty": _brief(empty),
    }


def check_task(scorer: RepoScorer, raw: Mapping[str, Any], runs: int = 2) -> dict[str, Any]:
    """One task's preflight with `scorer` (its items read with its own fields), in this thread."""
    model = scorer.item_model()
    planned = plan(raw, model, runs)
    if isinstance(planned, dict):
        return planned
    return assess(raw, model, [scorer.score(model.model_validate(i), RepoOptions()) for i in planned])


def preflight(
    tasks: Iterable[Mapping[str, Any]], settings: Settings, runs: int = 2, parallel: int = 2
) -> list[dict[str, Any]]:
    """The preflight report of each task, in order (see `plan` and `assess`)."""
    scorer = RepoScorer(settings)
    with ThreadPoolExecutor(max(1, parallel)) as pool:
        return list(pool.map(lambda raw: check_task(scorer, raw, runs), tasks))
