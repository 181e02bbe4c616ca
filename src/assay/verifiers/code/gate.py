"""The code task's gate for proposed tasks (a program plus inputs): the program runs at least twice per
input in the sandbox; every run must exit cleanly with the same output. Those outputs become the tests
and the program the reference."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.registry import Finding
from assay.registry.gate import Gate, GateContext, Outcome, provenance, task_fields

if TYPE_CHECKING:
    from assay.verifiers.code.scorer import CodeScorer


@dataclass(frozen=True)
class Run:
    """One sandboxed run of a proposed program: how it exited and what it printed."""

    exit_code: int | None
    stdout: str
    failure: str | None = None  # killed for time/memory/output, or the sandbox failed


Runner = Callable[[str, str, str], Run]  # (language, program, stdin) -> Run


class CodeGate(Gate):
    def keep(self, proposals: Sequence[dict[str, Any]], context: GateContext) -> list[Outcome]:
        return gate_code(proposals, sandbox_runner(context.scorer()), runs=context.runs)


def gate_code(proposals: Sequence[dict[str, Any]], run: Runner, *, runs: int = 2) -> list[Outcome]:
    """One outcome per proposal: `program` (source), `inputs` (stdin strings)."""
    return [_one(proposal, run, max(2, runs)) for proposal in proposals]


def _one(proposal: dict[str, Any], run: Runner, runs: int) -> Outcome:
    program, inputs = proposal.get("program"), proposal.get("inputs")
    language = str(proposal.get("language") or "python")
    if not isinstance(program, str) or not program.strip() or not isinstance(inputs, list) or not inputs:
        why = "a proposed code task needs `program` (source) and `inputs` (stdin list)"
        return [Finding("malformed", why)], None
    findings, tests = [], []
    for number, stdin in enumerate(map(str, inputs), start=1):
        seen = [run(language, program, stdin) for _ in range(runs)]
        failed = next((r for r in seen if r.failure or r.exit_code != 0), None)
        if failed is not None:
            why = failed.failure or f"exit status {failed.exit_code}"
            findings.append(
                Finding("execution_failed", f"input {number}: the program did not run cleanly ({why})")
            )
        elif len({r.stdout for r in seen}) > 1:
            outputs = len({r.stdout for r in seen})
            reason = f"input {number}: {len(seen)} runs printed {outputs} different outputs"
            findings.append(Finding("nondeterministic", reason))
        else:
            tests.append({"stdin": stdin, "stdout": seen[0].stdout})
    if findings:
        return findings, None
    kept = {**task_fields(proposal), "task": "code", "language": language, "reference": program}
    kept["tests"] = tests
    kept["provenance"] = provenance(proposal, {"runs_per_input": runs, "inputs": len(tests)})
    return [], kept


def sandbox_runner(scorer: CodeScorer, wall_s: float = 10.0) -> Runner:
    """Runs through the code task's sandbox (the one `/run_code` uses), in this process, on `scorer`'s
    slots (its owner closes them)."""
    from assay.sandbox import Program, SandboxError

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

    return run
