"""The math task's validation probes: its reference boxed and in prose must be accepted; an empty
`\\boxed{}` and the question restated must earn nothing; a reference read as words is a warning; a
reference given away in the prompt is `answer_in_prompt` (`given_away`)."""

from __future__ import annotations

import re

from assay.registry import Finding, Validation, ValidationProbe
from assay.types import Item, Result
from assay.verifiers.math.gate import MathGate
from assay.verifiers.math.given_away import answer_in_prompt

_PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
MOST = 4  # two forms of the reference, two trivial answers


class MathValidation(Validation):
    gate = MathGate()

    def most(self, repeats: int) -> int:
        return MOST

    def probes(self, index: int, item: Item, repeats: int) -> list[ValidationProbe]:
        found = []
        if item.reference is not None:
            ref = item.reference.strip()
            forms = [("the reference boxed", f"The answer is $\\boxed{{{ref}}}$.")]
            # In prose too, unless the gold is a plain number: its one rendering is the boxed one's, and a
            # probe costs as much as scoring a sample (validating must stay within 2x of scoring once).
            if not _PLAIN_NUMBER.fullmatch(ref):
                forms.append(("the reference in prose", f"So the final answer is {ref}"))
            found += [ValidationProbe.answer(index, item, text, "accepted", label) for label, text in forms]
        # No empty response: the contract fixes its verdict (no extractable answer: reward 0).
        trivial = [("an empty \\boxed{}", "The answer is \\boxed{}.")]
        if item.prompt:
            trivial.append(("the question restated", item.prompt))
        return found + [
            ValidationProbe.answer(index, item, text, "rejected", label) for label, text in trivial
        ]

    def check_prompt(self, item: Item) -> list[Finding]:
        return answer_in_prompt(item)

    def read_reference(self, result: Result) -> list[Finding]:
        if result.details.get("gold_kind") != "text":
            return []
        reason = (
            "the verifier reads the reference as words and compares answers to it as text: "
            "a mathematical answer in any other wording scores 0"
        )
        return [Finding("text_reference", reason, "warning")]
