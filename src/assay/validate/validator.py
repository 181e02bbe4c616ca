"""`validate(tasks)`: one report per task, from probes scored by the engine plus checks on the prompts.

A task is what a trainer would send without the policy's answer: an item with no `response` (one that has
a response is validated as if it had none). Every verdict comes from the service's `score_groups_async`,
the path that rewards training, so a task reported valid is one whose reward behaves as the report says.
`validate_async` runs against any `Service` (the HTTP route); `validate` against an in-process `Engine`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from assay.engine.scoring import Engine
from assay.engine.service import Service
from assay.errors import ItemError, MissingExtraError
from assay.groups import GroupOutcome
from assay.items import parse_item
from assay.registry import Recheck, Registry, ValidationProbe
from assay.settings import Settings
from assay.types import Item, Result, id_text
from assay.validate.probes import probes_for, read_probes
from assay.validate.prompts import check_duplicates, check_near_duplicates, check_prompt
from assay.validate.report import META_FIELDS, BadRow, TaskReport

DEFAULT_REPEATS = 3
CHUNK = 512  # tasks whose probes go to the engine at once: bounded memory, steady progress
# Probes of consecutive tasks are packed into engine groups of about this many items: one worker round
# trip per pack instead of per task (issue 29: the per-group overhead in the serving process was most of
# the cost of validating; 64 measured about half the CPU of one group per task).
PACK = 64

GroupScorer = Callable[[list[list[dict[str, Any]]]], Awaitable[list[GroupOutcome]]]


def task_id(raw: Any, index: int) -> str:
    if isinstance(raw, BadRow):
        return raw.id
    value = id_text(raw.get("id")) if isinstance(raw, dict) else None
    return value if isinstance(value, str) else f"task-{index}"


def _row(raw: dict[str, Any], registry: Registry, task: str | None) -> dict[str, Any]:
    """The item fields of a task row: no response, the task set when the row names none, then what the
    row's task makes of it (`Validation.row`: a repository task's row may be a SWE-bench instance)."""
    row = {k: v for k, v in raw.items() if k != "response" and k not in META_FIELDS}
    if "task" not in row and task is not None:
        row["task"] = task
    scorer = registry.get(row["task"]) if isinstance(row.get("task"), str) else None
    if scorer is None:
        return row
    if "model" in inspect.signature(scorer.validation.row).parameters:
        return scorer.validation.row(row, model=scorer.item_model())
    return scorer.validation.row(
        row
    )  # a plugin's `row(row)`, written before `model` was passed: still served


def _parse(raw: Any, report: TaskReport, registry: Registry, task: str | None = None) -> Item | None:
    if isinstance(raw, BadRow):
        report.add("malformed", raw.reason)
        return None
    if isinstance(raw, dict):
        raw = _row(raw, registry, task)
        report.task = raw.get("task") if isinstance(raw.get("task"), str) else None
    try:
        item = parse_item(raw, registry)
        registry.lookup(item.task)
    except ItemError as exc:
        report.add("malformed", str(exc))
        return None
    return item


def _packs(tasks: Sequence[int], by_task: dict[int, list[ValidationProbe]]) -> list[list[int]]:
    """Consecutive tasks whose probes together hold at most PACK items (a larger task goes alone)."""
    packs: list[list[int]] = []
    size = PACK
    for task in tasks:
        if size + len(by_task[task]) > PACK:
            packs.append([])
            size = 0
        packs[-1].append(task)
        size += len(by_task[task])
    return packs


async def _score_by_task(
    score_groups: GroupScorer, by_task: dict[int, list[ValidationProbe]], progress: Any
) -> dict[int, list[Result]]:
    """The probes of a pack of tasks as one engine group: its process-run items go to a worker in one
    round trip and share the worker's caches (a math gold is parsed once, also where it is scored as an
    answer). The verdicts are those `/v1/rewards` gives the same items, whatever the grouping (a group
    that misses its deadline is scored item by item); the group statistics are not used."""
    tasks = list(by_task)
    out: dict[int, list[Result]] = {}
    for start in range(0, len(tasks), CHUNK):
        packs = _packs(tasks[start : start + CHUNK], by_task)
        outcomes = await score_groups([[p.item for t in pack for p in by_task[t]] for pack in packs])
        for pack, outcome in zip(packs, outcomes, strict=True):
            results = iter(outcome.results)
            for task in pack:
                out[task] = [next(results) for _ in by_task[task]]
        if progress is not None:
            progress(sum(len(by_task[t]) for pack in packs for t in pack))
    return out


def _prepare(
    tasks: Sequence[Any], registry: Registry, repeats: int, near_duplicates: bool, task: str | None
) -> tuple[list[TaskReport], list[Item | None], dict[int, list[ValidationProbe]]]:
    """Reports with the prompt checks done, the parsed items, and each task's probes (CPU work only)."""
    reports = [TaskReport(id=task_id(raw, i)) for i, raw in enumerate(tasks)]
    items = [_parse(raw, report, registry, task) for raw, report in zip(tasks, reports, strict=True)]
    check_duplicates(reports, items)
    if near_duplicates and not check_near_duplicates(reports, items):
        raise MissingExtraError("datasketch (near-duplicate prompts)", "validate")
    by_task: dict[int, list[ValidationProbe]] = {}
    for index, item in enumerate(items):
        if item is not None:
            check_prompt(reports[index], registry[item.task], item)
            if probes := probes_for(registry, index, item, repeats):
                by_task[index] = probes
    return reports, items, by_task


def _finish(
    settings: Settings,
    registry: Registry,
    reports: list[TaskReport],
    items: list[Item | None],
    by_task: dict[int, list[ValidationProbe]],
    scored: dict[int, list[Result]],
) -> list[TaskReport]:
    """Probe results into problems, then each task's recheck of those that passed the rest (the sql
    task's storage-order check), opened once per task for the run."""
    rechecks: dict[str, Recheck | None] = {}
    try:
        for index, task_probes in by_task.items():
            item = items[index]
            assert item is not None, "a task with probes parsed"
            scorer = registry[item.task]
            read_probes(reports[index], scorer, task_probes, scored[index])
            if reports[index].valid:
                if item.task not in rechecks:
                    rechecks[item.task] = scorer.validation.recheck(settings)
                recheck = rechecks[item.task]
                for finding in recheck.findings(item) if recheck is not None else []:
                    reports[index].add(finding.check, finding.reason, finding.severity)
    finally:
        for recheck in rechecks.values():
            if recheck is not None:
                recheck.close()
    return reports


async def _validate(
    tasks: Sequence[Any],
    settings: Settings,
    registry: Registry,
    score_groups: GroupScorer,
    repeats: int,
    near_duplicates: bool,
    progress: Any,
    task: str | None = None,
) -> list[TaskReport]:
    # The prompt checks and the SQL copies are CPU and file work: off the event loop.
    reports, items, by_task = await asyncio.to_thread(
        _prepare, tasks, registry, repeats, near_duplicates, task
    )
    scored = await _score_by_task(score_groups, by_task, progress)
    return await asyncio.to_thread(_finish, settings, registry, reports, items, by_task, scored)


async def validate_async(
    tasks: Sequence[Any],
    service: Service,
    *,
    repeats: int = DEFAULT_REPEATS,
    near_duplicates: bool = True,
    progress: Any = None,
) -> list[TaskReport]:
    """Reports in input order, scored by `service` (admission is the caller's, as for `score_async`)."""
    return await _validate(
        tasks,
        service.settings,
        service.registry,
        service.score_groups_async,
        repeats,
        near_duplicates,
        progress,
    )


def validate(
    tasks: Sequence[Any],
    engine: Engine,
    *,
    repeats: int = DEFAULT_REPEATS,
    near_duplicates: bool = True,
    progress: Any = None,
    task: str | None = None,
) -> list[TaskReport]:
    """Reports in input order. `repeats`: runs of a code reference for the determinism check; `task`:
    the task of rows that name none (a SWE-bench file). `progress`, when given, is called with the number
    of probes just scored."""

    async def score_groups(groups: list[list[dict[str, Any]]]) -> list[GroupOutcome]:
        return await asyncio.to_thread(engine.score_groups, groups)  # the engine's own loop thread

    return asyncio.run(
        _validate(
            tasks, engine.settings, engine.registry, score_groups, repeats, near_duplicates, progress, task
        )
    )
