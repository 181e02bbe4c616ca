"""Task validation: prove every task well posed before it reaches the trainer, keep the ones that teach.

- `validate(tasks, engine)`: per task, the reference accepted by its own verifier, trivial answers
  rejected, code references deterministic, SQL golds independent of storage order, and prompt checks
  (duplicates, near-duplicates, answers in the prompt). One `TaskReport` per task.
- `solve_rates(...)` (`assay.validate.solve_rate`): k samples per prompt from a policy, scored by Assay;
  pass rates, learning value and the prompts inside a solve-rate band.
- `assay.validate.gate`: keep a self-generated task only when solvers agree (math) or execution repeats
  (code); the kept task carries its provenance.

Validation is a client of the engine like `assay bench`: it adds no verdict path of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.validate.report import Problem, TaskReport

if TYPE_CHECKING:
    from assay.validate.validator import validate

__all__ = ["Problem", "TaskReport", "validate"]


def __getattr__(name: str) -> Any:
    """`validate` on first use: the samplers (`solve_rate`) import without the engine, so they also run
    where only a policy's environment is installed (a vLLM environment without the verifiers)."""
    if name == "validate":
        from assay.validate.validator import validate

        return validate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
