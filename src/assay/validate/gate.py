"""A quality gate for self-generated tasks (proposer-solver loops: Agent0, Absolute Zero, LANCE).

A proposer's task has no trusted answer. It is kept only when the answer can be established:
- math: k solver samples; their final answers are grouped by equivalence *as Assay's math verifier judges
  it* (sample j agrees with answer a when scoring j against reference a is correct), and the largest
  group must hold at least `threshold` of the samples. Its answer becomes the reference.
- code (a program plus inputs): the program runs twice per input in the sandbox; both runs must exit
  cleanly with the same output. Those outputs become the tests and the program the reference.

A kept task carries `provenance`: what the proposal said of itself (model, step, ...) plus the gate's own
evidence (agreement, samples, runs). A rejected one says why, in the same report format as `validate`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from assay.engine.scoring import Engine
from assay.types import Status
from assay.validate.report import TaskReport
from assay.validate.validator import task_id

DEFAULT_THRESHOLD = 0.6


@dataclass(frozen=True)
class Run:
    """One sandboxed run of a proposed program: how it exited and what it printed."""

    exit_code: int | None
    stdout: str
    failure: str | None = None  # killed for time/memory/output, or the sandbox failed


def _provenance(proposal: dict[str, Any], evidence: dict[str, Any]) -> dict[str, Any]:
    given = proposal.get("provenance")
    return {**(given if isinstance(given, dict) else {}), "gate": evidence}


def _task_fields(proposal: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in proposal.items() if k not in ("solutions", "provenance", "program", "inputs")}


def gate_math(
    proposals: Sequence[dict[str, Any]], engine: Engine, *, threshold: float = DEFAULT_THRESHOLD
) -> list[tuple[TaskReport, dict[str, Any] | None]]:
    """(report, kept task or None) per proposal. Each proposal has a prompt and `solutions` (k texts)."""
    out: list[tuple[TaskReport, dict[str, Any] | None]] = []
    for index, proposal in enumerate(proposals):
        report = TaskReport(id=task_id(proposal, index), task="math")
        solutions = [str(s) for s in proposal.get("solutions") or []]
        if not solutions:
            report.add("no_solutions", "a proposed math task needs `solutions`: k solver responses")
            out.append((report, None))
            continue
        answer, agreeing = _majority(proposal, solutions, engine)
        share = agreeing / len(solutions)
        if answer is None or share < threshold:
            found = (
                "no final answer the verifier can read in any sample"
                if answer is None
                else f"{answer!r} in {agreeing}"
            )
            report.add(
                "no_consensus",
                f"{found} of {len(solutions)} samples agree; at least {threshold:.0%} must",
            )
            out.append((report, None))
            continue
        evidence = {"agreement": round(share, 4), "samples": len(solutions), "answer": answer}
        kept = {**_task_fields(proposal), "task": "math", "reference": answer}
        kept["provenance"] = _provenance(proposal, evidence)
        out.append((report, kept))
    return out


def _majority(proposal: dict[str, Any], solutions: list[str], engine: Engine) -> tuple[str | None, int]:
    """The final answer most samples agree with under the math verifier, and how many agree."""
    base = {"task": "math", "prompt": proposal.get("prompt")}
    # What each sample answers: extraction does not depend on the reference; "0" only fills the field.
    read = engine.score([{**base, "response": s, "reference": "0"} for s in solutions])
    answers = list(dict.fromkeys(r.extracted for r in read if r.status is Status.OK and r.extracted))
    if not answers:
        return None, 0
    items = [{**base, "response": s, "reference": a} for a in answers for s in solutions]
    verdicts = engine.score(items)
    k = len(solutions)
    counts = [sum(r.correct is True for r in verdicts[i * k : (i + 1) * k]) for i in range(len(answers))]
    best = max(range(len(answers)), key=lambda i: counts[i])
    # An "answer" no sample matches, not even its own (an empty box), is no answer.
    return (answers[best], counts[best]) if counts[best] else (None, 0)


Runner = Callable[[str, str, str], Run]  # (language, program, stdin) -> Run


def gate_code(
    proposals: Sequence[dict[str, Any]], run: Runner, *, runs: int = 2
) -> list[tuple[TaskReport, dict[str, Any] | None]]:
    """(report, kept task or None) per proposal: `program` (source), `inputs` (stdin strings)."""
    out: list[tuple[TaskReport, dict[str, Any] | None]] = []
    for index, proposal in enumerate(proposals):
        report = TaskReport(id=task_id(proposal, index), task="code")
        program, inputs = proposal.get("program"), proposal.get("inputs")
        language = str(proposal.get("language") or "python")
        if not isinstance(program, str) or not program.strip() or not isinstance(inputs, list) or not inputs:
            report.add("malformed", "a proposed code task needs `program` (source) and `inputs` (stdin list)")
            out.append((report, None))
            continue
        tests = []
        for number, stdin in enumerate(map(str, inputs), start=1):
            seen = [run(language, program, stdin) for _ in range(max(2, runs))]
            failed = next((r for r in seen if r.failure or r.exit_code != 0), None)
            if failed is not None:
                why = failed.failure or f"exit status {failed.exit_code}"
                report.add("execution_failed", f"input {number}: the program did not run cleanly ({why})")
            elif len({r.stdout for r in seen}) > 1:
                outputs = len({r.stdout for r in seen})
                report.add(
                    "nondeterministic",
                    f"input {number}: {len(seen)} runs printed {outputs} different outputs",
                )
            else:
                tests.append({"stdin": stdin, "stdout": seen[0].stdout})
        if not report.valid:
            out.append((report, None))
            continue
        kept = {**_task_fields(proposal), "task": "code", "language": language, "reference": program}
        kept["tests"] = tests
        kept["provenance"] = _provenance(proposal, {"runs_per_input": max(2, runs), "inputs": len(tests)})
        out.append((report, kept))
    return out


@contextmanager
def sandbox_runner(settings: Any, wall_s: float = 10.0) -> Iterator[Runner]:
    """Runs through the code task's sandbox (the one `/run_code` uses), in this process; the sandbox
    slots close when the block ends."""
    from assay.sandbox import Program, SandboxError
    from assay.verifiers.code import CodeScorer

    scorer = CodeScorer(settings)

    def run(language: str, program: str, stdin: str) -> Run:
        try:
            execution = scorer.run_program(Program(language, program, stdin.encode(), wall_s=wall_s))
        except SandboxError as exc:
            return Run(None, "", str(exc))
        if execution.compile_error is not None:
            return Run(None, "", f"compile error: {execution.compile_error[-200:]}")
        if not execution.runs:
            return Run(None, "", "the sandbox returned no run")
        outcome = execution.runs[0]
        failure = (
            f"killed ({outcome.killed})" if outcome.killed else ("out of memory" if outcome.oom else None)
        )
        return Run(outcome.exit_code, outcome.stdout.decode("utf-8", "replace"), failure)

    try:
        yield run
    finally:
        scorer.close()
