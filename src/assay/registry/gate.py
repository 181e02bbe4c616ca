"""A quality gate for self-generated tasks (proposer-solver loops: Agent0, Absolute Zero, LANCE).

A proposer's task has no trusted answer. `assay validate --gate TASK` keeps one only when the task can
establish its answer (the math task: solvers agree under its verifier; the code task: execution repeats);
a task that can declares how as `Validation.gate`. A kept task carries `provenance`: what the proposal
said of itself (model, step, ...) plus the gate's own evidence (`provenance`); a dropped one says why, as
findings in the same report format as `validate`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.settings import Settings
from assay.types import Result

if TYPE_CHECKING:
    from assay.registry import Finding

Score = Callable[[list[dict[str, Any]]], list[Result]]  # items -> verdicts, in order (the engine's score)
Outcome = tuple[list["Finding"], dict[str, Any] | None]  # why not (empty when kept), the kept task or None


@dataclass(frozen=True)
class GateContext:
    """What one gating run gives a task's gate: `score` scores items through the engine (started on
    first use); `scorer()`, the task's own scorer (built on first use, closed after the run: the code
    gate runs programs in its sandbox); `threshold`, the share of solvers that must agree; `runs`, runs
    per input where execution must repeat."""

    settings: Settings
    score: Score
    scorer: Callable[[], Any]
    threshold: float = 0.6
    runs: int = 2


class Gate:
    """How a task keeps proposed tasks: one `Outcome` per proposal, in order."""

    def keep(self, proposals: Sequence[dict[str, Any]], context: GateContext) -> list[Outcome]:
        raise NotImplementedError


def provenance(proposal: dict[str, Any], evidence: dict[str, Any]) -> dict[str, Any]:
    """What the proposal said of itself, with the gate's evidence under `gate`."""
    given = proposal.get("provenance")
    return {**(given if isinstance(given, dict) else {}), "gate": evidence}


def task_fields(proposal: dict[str, Any]) -> dict[str, Any]:
    """The proposal without what only the gate reads."""
    return {k: v for k, v in proposal.items() if k not in ("solutions", "provenance", "program", "inputs")}
