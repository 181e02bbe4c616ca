"""Well-posedness probes: answers whose verdict a sound task fixes in advance, scored by the engine.

A task is well posed when its own verifier accepts its reference and rejects trivial answers. Each probe
is an ordinary item (the task with a chosen response) scored through `Engine.score`, the one verdict path
that training uses, so validation can never disagree with the reward a trainer would get:

- `reference_rejected` when the reference in the forms a policy writes it (math: boxed and in prose; code:
  the reference program; SQL: the gold query) is not judged correct (`reference_unusable` when the
  verifier cannot use it at all; `empty_result` when a SQL gold returns no rows);
- `text_reference` (a warning): a math reference the verifier reads as words, compared as text;
- `trivial_rewarded` when an empty response, the question restated, an empty `\\boxed{}`, a program that
  prints nothing or returns None, or `SELECT 1` earns anything;
- `nondeterministic` when the reference program, run `repeats` times, ends a test differently;
- repository tasks: the gold change (`patch`) is the reference, run at least twice (a named test that
  passes in one run and fails in another is flaky), and the empty change is the trivial answer.

Each task owns its probes and how to read them (`Scorer.validation`: `probes`, `read_reference`,
`read_repeats`; the built-in tasks' are in their folders' `probes` modules): this module only scores what
they give and reads the verdicts every task shares. Tasks without a verdict of their own (judge, prm)
give none; their prompts are still checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from assay.registry import Finding, Scorer, ValidationProbe
from assay.types import Item, Result, Status
from assay.validate.report import TaskReport

Scorers = Mapping[str, type[Scorer]]


def most_probes(registry: Scorers, repeats: int) -> int:
    """The most probes one task can need under `registry` (sizes a request's budget)."""
    return max((cls.validation.most(repeats) for cls in registry.values()), default=0)


def probes_for(registry: Scorers, index: int, item: Item, repeats: int) -> list[ValidationProbe]:
    """The task's own probes; none for a task that gives none (its verdict is graded)."""
    scorer = registry.get(item.task)
    return scorer.validation.probes(index, item, repeats) if scorer is not None else []


def read_probes(
    report: TaskReport, scorer: type[Scorer], probes: Sequence[ValidationProbe], results: Sequence[Result]
) -> None:
    """Turn one task's probe results into problems on its report."""
    unusable: set[str] = set()
    for probe, result in zip(probes, results, strict=True):
        if result.status is Status.INVALID:
            # The task itself cannot be scored: say so once, whatever the probe.
            if result.reason not in unusable:
                unusable.add(result.reason)
                report.add("reference_unusable" if probe.expect == "accepted" else "malformed", result.reason)
            continue
        if result.status is not Status.OK:
            report.add(
                "check_incomplete", f"{probe.label}: {result.status.value}: {result.reason}", "warning"
            )
            continue
        if probe.expect == "accepted" and probe.run == 0:
            if result.correct is not True:
                reason = f"{probe.label} is not accepted by its own verifier: {result.reason}"
                report.add("reference_rejected", reason)
            else:
                _add(report, scorer.validation.read_reference(result))
        if probe.expect == "rejected" and (result.reward or 0.0) > 0.0:
            report.add("trivial_rewarded", f"{probe.label} earns reward {result.reward:g}: {result.reason}")
    runs = [
        r for p, r in zip(probes, results, strict=True) if p.expect == "accepted" and r.status is Status.OK
    ]
    if len(runs) >= 2:
        _add(report, scorer.validation.read_repeats(runs))


def _add(report: TaskReport, findings: Sequence[Finding]) -> None:
    for finding in findings:
        if not any(p.check == finding.check for p in report.problems):  # once per task
            report.add(finding.check, finding.reason, finding.severity)
