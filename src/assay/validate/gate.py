"""`assay validate --gate TASK`: keep a self-generated task only when its task can establish its answer
(`Validation.gate`, assay.registry.gate: the math task's solvers agree, the code task's execution
repeats). This module runs the task's gate and writes its findings in `validate`'s report format."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from assay.engine.scoring import Engine
from assay.errors import ConfigError
from assay.registry import Registry
from assay.registry.gate import GateContext
from assay.settings import Settings
from assay.types import Result
from assay.validate.report import TaskReport
from assay.validate.validator import task_id

DEFAULT_THRESHOLD = 0.6


def gated_tasks(registry: Registry) -> list[str]:
    """The tasks that can gate proposals."""
    return [name for name in registry if registry[name].validation.gate is not None]


def gate(
    task: str,
    proposals: Sequence[dict[str, Any]],
    settings: Settings,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    runs: int = 2,
) -> list[tuple[TaskReport, dict[str, Any] | None]]:
    """(report, kept task or None) per proposal, by `task`'s gate; an engine starts only if it scores."""
    cls = Registry.from_settings(settings).lookup(task)
    if cls.validation.gate is None:
        raise ConfigError(f'task "{task}" has no gate for proposed tasks')
    with ExitStack() as stack:
        built: dict[str, Any] = {}  # what the gate used, started on first use

        def score(items: list[dict[str, Any]]) -> list[Result]:
            if "engine" not in built:
                built["engine"] = stack.enter_context(Engine(settings))
            return list(built["engine"].score(items))

        def scorer() -> Any:
            if "scorer" not in built:
                built["scorer"] = cls(settings)
                stack.callback(built["scorer"].close)
            return built["scorer"]

        context = GateContext(settings, score, scorer, threshold, runs)
        outcomes = cls.validation.gate.keep(proposals, context)
    out = []
    for index, (proposal, (findings, kept)) in enumerate(zip(proposals, outcomes, strict=True)):
        report = TaskReport(id=task_id(proposal, index), task=task)
        for finding in findings:
            report.add(finding.check, finding.reason, finding.severity)
        out.append((report, kept))
    return out
