"""The extractor: which text of a long response is the final answer. Every row pins a real-world case."""

from __future__ import annotations

import pytest

from assay.verifiers.math.extract import Extraction, NoAnswer, extract

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
    # GSM8K's reference format: the "#### N" line (it used to be read as a cut-off response)
    ("So she has 18 apples left.\n#### 18", ("18",), "hash-cue"),
    # ... with currency; a markdown "#### Step 2" heading is not an answer line
    ("#### Step 1\n9 * $2 = $18\n#### $18", ("$18",), "hash-cue"),
    # the cue's answer ends with its clause: "16, because ..." is 16 (it was read as a hedge)
    ("The answer is 16, because 4 groups of 4 make 16.", ("16",), "answer-cue"),
    ("The final answer is 16, so Tom needs 16 boards.", ("16",), "answer-cue"),
    ("So the answer is 16 (four rows of four).", ("16",), "answer-cue"),
    # ... while a list stays a list
    ("Both work, so the answer is 3, 5.", ("3, 5",), "answer-cue"),
    # multiple-choice cues (MMLU, GPQA, Llama MC prompts)
    ("The correct option is B.", ("B",), "answer-cue"),
    ("Hence, the correct answer is: C", ("C",), "answer-cue"),
    ("The best answer is C.", ("C",), "answer-cue"),
    ("9 * 2 = 18\n\n**Answer**: 18", ("18",), "answer-cue"),
    # ... and a second value after the clause keeps the sentence whole, so the hedge is seen
    ("The answer is 2 (or maybe 3).", ("2 (or maybe 3)",), "answer-cue"),
    ("The answer is 2, but it could also be 3.", ("2, but it could also be 3",), "answer-cue"),
    # a "Final Answer" heading over a sentence: its predicate is the answer (QwQ)
    ("**Final Answer**\nThe number of ways is 12.", ("12",), "answer-cue"),
    # a last line that is only an option letter, alone, bold or with its value
    (COT + "(C)", ("(C)",), "last-line"),
    (COT + "**C**", ("(C)",), "last-line"),
    (COT + "C) 24", ("(C) 24",), "last-line"),
    ("The ratio is 3:2, matching option **(B)**.", ("(B)",), "last-line"),
    ("A fails.\n\nTherefore, option B is correct.", ("(B)",), "last-line"),
    # a whole short response that opens with a connective ("So x = 3." used to be a relation "So x = 3")
    ("So x = 3.", ("x = 3.",), "bare"),
    # words around one formula: the formula is the answer, and "are" concludes
    ("The solutions are $x=2$ and $x=3$.", ("$x=2$ and $x=3$",), "last-math"),
    ("So the probability is $\\frac{1}{6}$.", ("\\frac{1}{6}",), "last-math"),
    # GSM8K prose conclusions: the one number of a concluding last sentence ($ is currency here)
    (COT + "Therefore, Janet makes $18 every day.", ("18",), "concluding-sentence"),
    (COT + "Therefore, she reads 8 * 5 = 40 pages.", ("40",), "concluding-sentence"),
    # ... or a plain statement of the result (chat models often end so), also as a whole short response
    (COT + "Janet makes $18 every day at the farmers' market.", ("18",), "concluding-sentence"),
    ("She still has 13 apples.", ("13",), "concluding-sentence"),
    # GPT-4-style bold value in the last sentence, with no cue
    ("She sells 9 eggs.\n\nJanet makes **$18** every day.", ("$18",), "last-line"),
    ("Total: **55 marbles**.", ("55 marbles",), "last-line"),
    # after a cue, the formula that follows the verb, not a name mentioned before it
    ("Final answer: The probability of $A$ is $\\frac{1}{2}$.", ("\\frac{1}{2}",), "answer-cue"),
    # fillers between the cue and the answer
    ("The answer is therefore 42.", ("42",), "answer-cue"),
    ("The final result is 42.", ("42",), "answer-cue"),
    # the answer named in the last sentence ("42 is the answer" used to lose 42 to unit stripping)
    ("Thus, 42 is the answer.", ("42",), "answer-cue"),
    ("(C) is the correct answer.", ("(C)",), "answer-cue"),
    # a bulleted final answer (Qwen2.5-Instruct) is one answer, not its first bullet
    ("**Final Answer**\n\n- $x = 2$\n- $y = 3$", ("$x = 2$, $y = 3$",), "answer-cue"),
    # chat-template tokens decoded with the response (OpenRLHF sends them)
    ("The answer is 18.<|im_end|>", ("18",), "answer-cue"),
    # a base model that goes on with the next few-shot question: its answer is not this one
    ("The answer is 18.\n\nQuestion: Tom has 5 apples.\nAnswer: The answer is 5.", ("18",), "answer-cue"),
    # an antiderivative's constant of integration is a term, not option C (reasoning-gym's integration
    # golds, correct by construction, all scored 0 when "+ C" was read as a choice); "Answer - C" still is
    ("2*x**10 - x + C", ("2*x**10 - x + C",), "bare"),
    ("<answer>-6*x**3 + 2*x + C</answer>", ("-6*x**3 + 2*x + C",), "answer-tag:bare"),
    ("We integrate term by term.\n\nSo the answer is x^2/2 + C.", ("x^2/2 + C",), "answer-cue"),
    ("It cannot be A or B, so the choice - C", ("(C)",), "choice-prose"),
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
    # "So far" is not a conclusion; its number is an intermediate
    ("Step 2: 7 + 5 = 12.\n\nSo far, the total is 12.", "no boxed answer"),
    # a bound in the last sentence is not the answer
    ("Therefore, the total must be less than 18.", "no boxed answer"),
    # a last sentence that is a step or a plan, or that rejects its number, is not a result
    (COT + "Next, we multiply 9 by 2 to get 18.", "no boxed answer"),
    (COT + "I first got 18, but that is wrong.", "no boxed answer"),
    # a concluding sentence with two numbers names no single answer
    ("So, we have 3 apples and 4 oranges.", "no boxed answer"),
    # an option list copied at the end is not a choice
    ("Options:\n\n(A) 12\n(B) 18\n(C) 24", "cut off"),
    # cut off, with an end token after the cut
    ("She makes 18 dollars, and then she has to<|im_end|>", "cut off"),
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


@pytest.mark.parametrize(
    "response",
    [
        "The result is x^2 + 1.",  # answered 1
        "The antiderivative is x^2/2 + C.",  # answered 2 (reasoning-gym's integration families)
        "So we get 2*x + 1.",
    ],
)
def test_a_formula_in_plain_text_is_not_a_sentence_with_one_number(response: str) -> None:
    found = extract(response, 100_000)
    assert not (isinstance(found, Extraction) and found.rule == "concluding-sentence"), found
