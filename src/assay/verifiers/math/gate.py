"""The math task's gate for proposed tasks: k solver samples; their final answers are grouped by
equivalence *as the math verifier judges it* (sample j agrees with answer a when scoring j against
reference a is correct), and the largest group must hold at least `threshold` of the samples. Its answer
becomes the reference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.registry import Finding
from assay.registry.gate import Gate, GateContext, Outcome, Score, provenance, task_fields
from assay.types import Status


class MathGate(Gate):
    def keep(self, proposals: Sequence[dict[str, Any]], context: GateContext) -> list[Outcome]:
        """Each proposal has a prompt and `solutions` (k texts)."""
        return [self._one(proposal, context.score, context.threshold) for proposal in proposals]

    def _one(self, proposal: dict[str, Any], score: Score, threshold: float) -> Outcome:
        solutions = [str(s) for s in proposal.get("solutions") or []]
        if not solutions:
            return [
                Finding("no_solutions", "a proposed math task needs `solutions`: k solver responses")
            ], None
        answer, agreeing = _majority(proposal, solutions, score)
        share = agreeing / len(solutions)
        if answer is None or share < threshold:
            found = (
                "no final answer the verifier can read in any sample"
                if answer is None
                else f"{answer!r} in {agreeing}"
            )
            reason = f"{found} of {len(solutions)} samples agree; at least {threshold:.0%} must"
            return [Finding("no_consensus", reason)], None
        evidence = {"agreement": round(share, 4), "samples": len(solutions), "answer": answer}
        kept = {**task_fields(proposal), "task": "math", "reference": answer}
        kept["provenance"] = provenance(proposal, evidence)
        return [], kept


def _majority(proposal: dict[str, Any], solutions: list[str], score: Score) -> tuple[str | None, int]:
    """The final answer most samples agree with under the math verifier, and how many agree."""
    base = {"task": "math", "prompt": proposal.get("prompt")}
    # What each sample answers: extraction does not depend on the reference; "0" only fills the field.
    read = score([{**base, "response": s, "reference": "0"} for s in solutions])
    answers = list(dict.fromkeys(r.extracted for r in read if r.status is Status.OK and r.extracted))
    if not answers:
        return None, 0
    items = [{**base, "response": s, "reference": a} for a in answers for s in solutions]
    verdicts = score(items)
    k = len(solutions)
    counts = [sum(r.correct is True for r in verdicts[i * k : (i + 1) * k]) for i in range(len(answers))]
    best = max(range(len(answers)), key=lambda i: counts[i])
    # An "answer" no sample matches, not even its own (an empty box), is no answer.
    return (answers[best], counts[best]) if counts[best] else (None, 0)
