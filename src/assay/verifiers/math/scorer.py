"""The `math` scorer, wired through math-verify with its own (SIGALRM) timeouts disabled.

Deadlines come from the killable worker pool (assay.workers): math-verify's timeouts use SIGALRM, which
fails off the main thread (its issues #11, #50, #55).
"""

from __future__ import annotations

import logging
from typing import ClassVar

from pydantic import Field

from assay.registry import Scorer
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions


class MathOptions(TaskOptions):
    rel_tol: float | None = Field(None, ge=0, description="Relative tolerance for decimals.")


class MathScorer(Scorer):
    name: ClassVar[str] = "math"
    description: ClassVar[str] = "Final answer of a chain of thought vs a gold answer (LaTeX or text)."
    Options: ClassVar[type[TaskOptions]] = MathOptions
    item_fields: ClassVar[tuple[str, ...]] = ("response", "reference")
    runs_in = "process"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        # math-verify warns on every call that its timeouts are off; that is deliberate here.
        logging.getLogger("math_verify").setLevel(logging.ERROR)

    def deadline_s(self, item: Item, options: TaskOptions) -> float:
        return self.settings.math.deadline_s

    def score(self, item: Item, options: TaskOptions) -> Result:
        from math_verify import parse, verify

        if item.reference is None or not item.reference.strip():
            return Result.invalid("math items need a non-empty reference")
        if item.response is None:
            return Result.invalid("math items need a response")
        gold = parse(item.reference, parsing_timeout=None)  # type: ignore[arg-type]
        if not gold:
            gold = parse(f"${item.reference}$", parsing_timeout=None)  # type: ignore[arg-type]
        if not gold:
            return Result.invalid(f"cannot parse the reference {item.reference!r}")
        response = item.response[-self.settings.math.max_response_chars :]
        answer = parse(response, parsing_timeout=None)  # type: ignore[arg-type]
        if not answer:
            return Result.verdict(False, "no final answer found in the response")
        extracted = str(answer[-1])
        correct = bool(verify(gold, answer, timeout_seconds=None))
        reason = "equivalent to the reference" if correct else "not equivalent to the reference"
        return Result.verdict(correct, reason, extracted=extracted, details={"rule": "math-verify"})
