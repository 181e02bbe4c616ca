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

Tasks without a verdict of their own (judge, prm) get no probes here; their prompts are still checked.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from assay.types import Item, Result, Status
from assay.validate.report import TaskReport

Expect = Literal["accepted", "rejected"]


@dataclass(frozen=True)
class Probe:
    """One item to score for one task, and what a well-posed task makes of it."""

    task: int  # index of the task in the input
    item: dict[str, Any]
    expect: Expect  # accepted: the verdict must be correct; rejected: the reward must be 0
    label: str  # what the response is, in words, for the report
    run: int = 0  # which repeat of a determinism probe


def _with(item: Item, response: str) -> dict[str, Any]:
    raw = item.model_dump(exclude_none=True)
    raw["response"] = response
    raw.pop("id", None)
    return raw


_PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _math(index: int, item: Item) -> list[Probe]:
    probes = []
    if item.reference is not None:
        ref = item.reference.strip()
        forms = [("the reference boxed", f"The answer is $\\boxed{{{ref}}}$.")]
        # In prose too, unless the gold is a plain number: its one rendering is the boxed one's, and a
        # probe costs as much as scoring a sample (validating must stay within 2x of scoring once).
        if not _PLAIN_NUMBER.fullmatch(ref):
            forms.append(("the reference in prose", f"So the final answer is {ref}"))
        probes += [Probe(index, _with(item, response), "accepted", label) for label, response in forms]
    # No empty response: the contract fixes its verdict (no extractable answer: reward 0).
    trivial = [("an empty \\boxed{}", "The answer is \\boxed{}.")]
    if item.prompt:
        trivial.append(("the question restated", item.prompt))
    probes += [Probe(index, _with(item, r), "rejected", label) for label, r in trivial]
    return probes


def _fenced(source: str, language: str) -> str:
    return source if "```" in source else f"```{language}\n{source}\n```"


def _code(index: int, item: Item, repeats: int) -> list[Probe]:
    language = item.language or "python"
    probes = []
    if item.reference:
        program = _fenced(item.reference, language)
        probes += [
            Probe(index, _with(item, program), "accepted", "the reference program", run)
            for run in range(max(1, repeats))
        ]
    if language == "python":
        names = sorted(
            {str(t["fn_name"]) for t in item.tests or [] if isinstance(t, dict) and "fn_name" in t}
        )
        body = "\n".join(f"def {name}(*args, **kwargs):\n    return None" for name in names) or "pass"
        label = "functions that return None" if names else "a program that prints nothing"
        probes.append(Probe(index, _with(item, _fenced(body, language)), "rejected", label))
    return probes


def _sql(index: int, item: Item) -> list[Probe]:
    probes = []
    if item.reference:
        gold = f"```sql\n{item.reference.strip()}\n```"
        probes.append(Probe(index, _with(item, gold), "accepted", "the gold query"))
    probes += [
        Probe(index, _with(item, r), "rejected", label)
        for label, r in (("an empty response", ""), ("SELECT 1", "```sql\nSELECT 1\n```"))
    ]
    return probes


def _repo(index: int, item: Item, repeats: int) -> list[Probe]:
    """The repository task's preflight as probes: the gold change (`patch`) run at least twice, whose
    verdicts must agree test by test, and the empty change, which must not be rewarded (a task that
    rewards doing nothing, as R2E-Gym found)."""
    probes = []
    if item.patch:
        probes += [
            Probe(index, _with(item, item.patch), "accepted", "the gold patch", run)
            for run in range(max(2, repeats))
        ]
    return [*probes, Probe(index, _with(item, ""), "rejected", "the empty change")]


def most_probes(repeats: int) -> int:
    """The most probes one task can need (math: 5; code: the reference's runs plus a stub)."""
    return max(5, repeats + 1, 3)


def probes_for(index: int, item: Item, repeats: int) -> list[Probe]:
    """The probes of one task; none for tasks this module does not know (their verdict is graded)."""
    if item.task == "math":
        return _math(index, item)
    if item.task == "code":
        return _code(index, item, repeats)
    if item.task == "sql":
        return _sql(index, item)
    if item.task == "repo":
        return _repo(index, item, repeats)
    return []


def read_probes(report: TaskReport, probes: Sequence[Probe], results: Sequence[Result]) -> None:
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
            _read_reference(report, probe, result)
        if probe.expect == "rejected" and (result.reward or 0.0) > 0.0:
            report.add("trivial_rewarded", f"{probe.label} earns reward {result.reward:g}: {result.reason}")
    _read_repeats(report, probes, results)


def _read_reference(report: TaskReport, probe: Probe, result: Result) -> None:
    if result.correct is not True:
        report.add(
            "reference_rejected", f"{probe.label} is not accepted by its own verifier: {result.reason}"
        )
    elif probe.item.get("task") == "math" and result.details.get("gold_kind") == "text":
        if not any(p.check == "text_reference" for p in report.problems):
            report.add(
                "text_reference",
                "the verifier reads the reference as words and compares answers to it as text: "
                "a mathematical answer in any other wording scores 0",
                "warning",
            )
    elif probe.item.get("task") == "sql":
        rows = [i.get("reference_rows") for i in result.details.get("instances", [])]
        if rows and all(n == 0 for n in rows):
            report.add(
                "empty_result",
                "the gold query returns no rows, so any query that returns nothing is rewarded",
            )


def _read_repeats(report: TaskReport, probes: Sequence[Probe], results: Sequence[Result]) -> None:
    """A test whose verdict changes between runs of the same program is not deterministic."""
    runs = [
        r for p, r in zip(probes, results, strict=True) if p.expect == "accepted" and r.status is Status.OK
    ]
    if len(runs) < 2 or probes[0].item.get("task") not in ("code", "repo"):
        return
    if probes[0].item.get("task") == "repo":
        _read_repo_repeats(report, runs)
        return
    outcomes = [[t.get("verdict") for t in r.details.get("tests", [])] for r in runs]
    width = max(len(o) for o in outcomes)
    changing = []
    for test in range(width):
        seen = Counter(o[test] if test < len(o) else None for o in outcomes)
        if len(seen) > 1:
            changing.append(
                f"test {test + 1} (" + ", ".join(f"{v} {n}x" for v, n in seen.most_common()) + ")"
            )
    if changing:
        shown = "; ".join(changing[:5]) + ("; ..." if len(changing) > 5 else "")
        report.add("nondeterministic", f"the reference ends differently across {len(runs)} runs: {shown}")


def _read_repo_repeats(report: TaskReport, runs: Sequence[Result]) -> None:
    """Named tests that fail in some runs of the gold change and pass in others are flaky."""
    failing = [set(r.details.get("not_passed") or {}) for r in runs]
    flaky = sorted(set().union(*failing) - set.intersection(*failing))
    if flaky:
        shown = ", ".join(flaky[:5]) + (", ..." if len(flaky) > 5 else "")
        report.add("nondeterministic", f"tests end differently across {len(runs)} runs of the gold: {shown}")
