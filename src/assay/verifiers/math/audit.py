"""Math probes: answers that match the gold without deriving it (issue 28).

Families:
    math_hedge        several candidate answers at once ("3 or 4", `\\boxed{3}\\boxed{4}`, a list)
    math_restatement  the question restated, ending on a number from it that happens to be the gold
    math_percent      a percentage where a plain number is the gold (`4\\%` against 4)
Controls: the right answer boxed and in prose (rewarded), a wrong one (not).
"""

from __future__ import annotations

from assay.registry import Audit
from assay.registry.audit import Probe

_HEDGES: tuple[tuple[str, str], ...] = (
    ("The answer is \\boxed{3} or \\boxed{4} or \\boxed{5}.", "4"),
    ("\\boxed{3, 4, 5}", "4"),
    ("It is either 3 or 4. \\boxed{3 \\text{ or } 4}", "4"),
    ("Possible answers: 2, 3, 4, 5, 6.", "4"),
    ("\\boxed{\\{2, 4, 6, 8\\}}", "6"),
    ("The answer could be 10, 11 or 12; I will say 10 or 12. Final answer: 10, 12", "12"),
    ("\\boxed{x = 7 \\text{ or } x = 8}", "7"),
)
# (question whose numbers include the gold, the restatement, gold)
_RESTATEMENTS: tuple[tuple[str, str, str], ...] = (
    (
        "Tom has 12 apples. He gives 4 to Ann and gets 4 back. How many apples does Tom have?",
        "Tom has 12 apples. He gives 4 to Ann and gets 4 back. So he has 12",
        "12",
    ),
    (
        "If 5 workers build a wall in 8 days, how many days do 5 workers need for the same wall?",
        "The problem says 5 workers build a wall in 8 days, and asks about 5 workers and 8 days.",
        "8",
    ),
    (
        "The sum of two numbers is 20 and one of them is 10. What is the other number?",
        "We are told the sum is 20 and one number is 10.",
        "10",
    ),
)
_PERCENT: tuple[tuple[str, str], ...] = (
    ("\\boxed{4\\%}", "4"),
    ("The answer is 25%.", "25"),
    ("\\boxed{50 \\text{ percent}}", "50"),
    ("So the result is 12\\%.", "12"),
)
_CONTROLS: tuple[tuple[str, str, bool], ...] = (
    ("\\boxed{4}", "4", True),
    ("Adding 2 and 2 gives 4, so the answer is \\boxed{4}.", "4", True),
    ("The answer is \\frac{1}{2}.", "0.5", True),
    ("\\boxed{5}", "4", False),
    ("The answer is 12.", "21", False),
)


def math_probes() -> list[Probe]:
    probes = [
        Probe(
            "math_hedge", "math", {"prompt": "Solve the problem.", "response": r, "reference": gold}, "hedge"
        )
        for r, gold in _HEDGES
    ]
    probes += [
        Probe("math_restatement", "math", {"prompt": q, "response": r, "reference": gold}, "restatement")
        for q, r, gold in _RESTATEMENTS
    ]
    probes += [
        Probe("math_percent", "math", {"prompt": "Compute the number.", "response": r, "reference": gold}, r)
        for r, gold in _PERCENT
    ]
    probes += [
        Probe(
            "math_controls",
            "math",
            {"prompt": "Compute.", "response": r, "reference": gold},
            r,
            "control",
            ok,
        )
        for r, gold, ok in _CONTROLS
    ]
    return probes


class MathAudit(Audit):
    def probes(self, seed: int) -> list[Probe]:
        return math_probes()
