"""`validate(tasks)`: one report per task, from probes scored by the engine plus checks on the prompts.

A task is what a trainer would send without the policy's answer: an item with no `response` (one that has
a response is validated as if it had none). Every verdict comes from `Engine.score`, the same path that
rewards training, so a task reported valid is one whose reward behaves as the report says.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.errors import ItemError, MissingExtraError
from assay.scoring import Engine, parse_item
from assay.types import Item
from assay.validate.probes import Probe, probes_for, read_probes
from assay.validate.prompts import check_answer_in_prompt, check_duplicates, check_near_duplicates
from assay.validate.report import META_FIELDS, BadRow, TaskReport
from assay.validate.sql_order import OrderCheck

DEFAULT_REPEATS = 3
CHUNK = 2048  # probes handed to the engine at once: bounded memory, steady progress


def task_id(raw: Any, index: int) -> str:
    if isinstance(raw, BadRow):
        return raw.id
    value = raw.get("id") if isinstance(raw, dict) else None
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else f"task-{index}"


def _parse(raw: Any, report: TaskReport, engine: Engine) -> Item | None:
    if isinstance(raw, BadRow):
        report.add("malformed", raw.reason)
        return None
    if isinstance(raw, dict):
        raw = {k: v for k, v in raw.items() if k != "response" and k not in META_FIELDS}
        report.task = raw.get("task") if isinstance(raw.get("task"), str) else None
    try:
        item = parse_item(raw)
        engine.registry.lookup(item.task)
    except ItemError as exc:
        report.add("malformed", str(exc))
        return None
    return item


def validate(
    tasks: Sequence[Any],
    engine: Engine,
    *,
    repeats: int = DEFAULT_REPEATS,
    near_duplicates: bool = True,
    progress: Any = None,
) -> list[TaskReport]:
    """Reports in input order. `repeats`: runs of a code reference for the determinism check.
    `progress`, when given, is called with the number of probes just scored."""
    reports = [TaskReport(id=task_id(raw, i)) for i, raw in enumerate(tasks)]
    items = [_parse(raw, report, engine) for raw, report in zip(tasks, reports, strict=True)]
    check_duplicates(reports, items)
    if near_duplicates and not check_near_duplicates(reports, items):
        raise MissingExtraError("datasketch (near-duplicate prompts)", "validate")
    probes: list[Probe] = []
    order = OrderCheck(engine.settings)
    try:
        for index, item in enumerate(items):
            if item is None:
                continue
            check_answer_in_prompt(reports[index], item)
            probes += probes_for(index, item, repeats)
        results = []
        for start in range(0, len(probes), CHUNK):
            chunk = probes[start : start + CHUNK]
            results += engine.score([p.item for p in chunk])
            if progress is not None:
                progress(len(chunk))
        by_task: dict[int, tuple[list[Probe], list[Any]]] = {}
        for probe, result in zip(probes, results, strict=True):
            mine = by_task.setdefault(probe.task, ([], []))
            mine[0].append(probe)
            mine[1].append(result)
        for index, (task_probes, scored) in by_task.items():
            read_probes(reports[index], task_probes, scored)
            item = items[index]
            if item is not None and reports[index].valid:
                why = order.why(item)
                if why is not None:
                    reports[index].add("order_dependent", why)
    finally:
        order.close()
    return reports
