"""What `assay validate` says about one task: the problems found, each named by its check.

`valid` is false exactly when a problem of severity `error` was found: the task would teach the policy
something wrong (a reference its own verifier rejects, a trivial answer that is rewarded, a reference that
cannot be reproduced). `warning`s are reported for a person to read (a duplicate prompt, an answer that
appears in the prompt, a check that could not run) and never reject a task on their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

Severity = Literal["error", "warning"]

# Keys that validation, probing and the gate add to a task row: not item fields, carried along as they are.
META_FIELDS = ("provenance", "solve_rate", "learning_value", "samples")


@dataclass(frozen=True)
class BadRow:
    """A line of a task file that could not be read at all; it keeps its place and gets a report."""

    id: str
    reason: str


class Problem(BaseModel):
    """One finding: which check found it, why, and how serious it is."""

    check: str
    reason: str
    severity: Severity = "error"


class TaskReport(BaseModel):
    """One line of the report: the task's id, whether it is fit to train on, and why not."""

    id: str
    task: str | None = None
    valid: bool = True
    problems: list[Problem] = Field(default_factory=list)
    # Filled by solve-rate probing (`--policy`): pass rate of k samples, and 4p(1-p) (1 at p = 0.5).
    solve_rate: float | None = None
    samples: int | None = None
    learning_value: float | None = None

    def add(self, check: str, reason: str, severity: Severity = "error") -> None:
        self.problems.append(Problem(check=check, reason=reason, severity=severity))
        if severity == "error":
            self.valid = False

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
