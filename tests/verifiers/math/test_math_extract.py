"""The extractor: which text of a long response is the final answer. Every row pins a real-world case."""

from __future__ import annotations

import pytest

from assay.verifiers.math.extract import Extraction, NoAnswer, extract, find_boxes

COT = "Let me think step by step.\n\nWe have 3 + 4 = 7, and 7 * 2 = 14.\n\n"

# (response, expected answers, expected rule)
FOUND = [
    # DeepSeek-R1 style: thinking, then a boxed answer after </think>
    ("<think>\nmaybe 5\n</think>\n\nSo $\\boxed{14}$.", ("14",), "boxed"),
    # nested braces inside a box (MATH solutions)
    (COT + "$\\boxed{\\frac{\\sqrt{3}}{2}}$", ("\\frac{\\sqrt{3}}{2}",), "boxed"),
    # \fbox is used by some fine-tuned models instead of \boxed
    (COT + "\\fbox{42}", ("42",), "boxed"),
    # `\boxed 5` without braces (seen in Qwen outputs)
    ("The total is \\boxed 5.", ("5",), "boxed"),
    # hedge: two boxes are both returned so the comparer can reject the hedge
    (COT + "$\\boxed{2}$ or $\\boxed{3}$", ("2", "3"), "boxed"),
    # Minerva / lm-eval style sentence
    (COT + "Final Answer: The final answer is $14$. I hope it is correct.", ("14",), "answer-cue"),
    # **Final Answer** heading (Qwen2.5-Instruct)
    (COT + "**Final Answer**\nThe answer is $x = 3$", ("x = 3",), "answer-cue"),
    # "Answer:" line without math delimiters
    (COT + "Answer: (B) 24", ("(B) 24",), "answer-cue"),
    # either/or is kept whole (the comparer calls it a hedge)
    (COT + "The answer is either $2$ or $3$.", ("$2$ or $3$",), "answer-cue"),
    # a response that is only the answer
    ("$\\frac{1}{2}$", ("$\\frac{1}{2}$",), "bare"),
    # a concluding display formula in the last paragraph
    (COT + "Therefore the area is\n\\[\n12\\pi\n\\]", ("12\\pi",), "last-math"),
    # ... where the value is the right-hand side of the last "="
    (COT + "Thus $a + b = 5 + 7 = 12$.", ("12",), "last-math"),
]

# (response, reason fragment)
MISSING = [
    # cut off mid-sentence: the last number is an intermediate (math-verify 0.9.0 accepted these)
    (COT + "Now the sum is 14 and we multiply it by", "cut off"),
    # cut off inside <think>: nothing boxed
    ("<think>\nWe get 14 so far, and", "never closed"),
    # cut off inside the box itself
    (COT + "The answer is $\\boxed{14", "cut off"),
    # empty after </think>
    ("<think>\n\\boxed{14}\n</think>\n", "nothing after"),
]


@pytest.mark.parametrize(("response", "answers", "rule"), FOUND)
def test_extracts_final_answer(response: str, answers: tuple[str, ...], rule: str) -> None:
    found = extract(response, 100_000)
    assert isinstance(found, Extraction)
    assert found.answers == answers
    assert found.rule == rule


@pytest.mark.parametrize(("response", "reason"), MISSING)
def test_no_answer_when_truncated_or_empty(response: str, reason: str) -> None:
    found = extract(response, 100_000)
    assert isinstance(found, NoAnswer)
    assert reason in found.reason


def test_only_the_tail_of_a_huge_response_is_read() -> None:
    response = "\\boxed{1} " + "x " * 50_000 + "\\boxed{2}"
    found = extract(response, 1_000)
    assert isinstance(found, Extraction) and found.answers == ("2",)


def test_unclosed_box_is_skipped() -> None:
    assert find_boxes("\\boxed{1} then \\boxed{2") == ["1"]
