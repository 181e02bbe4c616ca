"""The soundness rules of assay.verifiers.math, one class of near-miss each (issue 14), and the classes of
legal answers that an earlier version rejected."""

from __future__ import annotations

import pytest

from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer

NEAR_MISSES = [
    ("x^{2y}", "\\boxed{x^2 y}", "exponent grouping kept"),
    ("x^{n+1}", "\\boxed{x^n+1}", "exponent grouping kept"),
    ("2^{10}", "\\boxed{2^1 0}", "exponent grouping kept"),
    ("10^{18}+1", "\\boxed{10^{18}}", "big integers compare exactly"),
    ("x + 10^{18} + 1", "\\boxed{x + 10^{18}}", "big values compare exactly at sampled points"),
    ("10000000000000000000000000000000000001", "\\boxed{10^{37} + 2}", "big integers compare exactly"),
    ("a_{1}", "\\boxed{a_{2}}", "subscripts kept"),
    ("3x-2", "\\boxed{3y-2}", "a variable keeps its name"),
    ("x^2", "\\boxed{y^2}", "a variable keeps its name"),
    ("f(x)", "\\boxed{f(y)}", "a variable keeps its name"),
    ("1 < x < 3", "\\boxed{1 < y < 3}", "an interval keeps its variable"),
    ("1 < x < 5 < 7", "\\boxed{1 < x < 6 < 7}", "every part of a chain compares"),
    ("a < b < c", "\\boxed{a < c < b}", "the middle of a chain compares"),
    ("x \\ne 5", "\\boxed{x = 5}", "x != 5 is not x = 5"),
    ("12:00", "\\boxed{1:00}", "clock times are not ratios"),
    ("1:00", "\\boxed{12:00}", "clock times are not ratios"),
    ("3:15", "\\boxed{1:05}", "clock times are not ratios"),
    ("1:30", "\\boxed{2:60}", "clock times are not ratios"),
    ("\\frac{1}{0}", "\\boxed{\\frac{2}{0}}", "undefined values equal nothing"),
    ("1e100000", "\\boxed{1e100001}", "scientific notation"),
    ("x", "\\boxed{E}", "a bare letter is not a variable gold"),
    ("d", "\\boxed{\\text{E}}", "a bare letter is not a variable gold"),
    ("\\sqrt{x^2}", "\\boxed{x}", "negative sample points"),
    ("|x|", "\\boxed{x}", "negative sample points"),
    ("\\log(x^2)", "\\boxed{2\\log(x)}", "negative and complex sample points"),
    ("\\sqrt{x}\\sqrt{y}", "\\boxed{\\sqrt{xy}}", "negative and complex sample points"),
    ("7 = 11a+c", "\\boxed{11a+c}", "an equation is not its side"),
    ("42", "The answer is $42$ or maybe $43$.", "a hedge after a cue"),
    ("3", "The answer is 3. Actually, wait, it is 4.", "an answer taken back is a hedge"),
    ("42", "The answer is 42.\n\nWait, the question asks for the remainder, which is 2.", "taken back"),
    ("5", "So $x != 5$.", "x != 5 never reads as its right side"),
    ("\\frac{1}{3}", "\\boxed{0.3333}", "a rounded decimal is not an exact fraction"),
    ("37212.15", "\\boxed{37212.16}", "a different digit is no floating-point noise (issue 30)"),
    ("A", "A total of 48.", "a sentence opening with 'A' chooses no option (issue 30)"),
    ("4", "\\boxed{4\\%}", "4% is 0.04, not 4, unless the prompt asks for a percent (issue 28)"),
    ("C", "It is either B or C.", "a hedge listing several letters (issue 30)"),
    (
        "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}",
        "\\boxed{\\begin{pmatrix}2 & 1 \\\\ 4 & 3\\end{pmatrix}}",
        "columns",
    ),
    ("8:34 PM", "\\boxed{8:34}", "a time that leaves the half of the day open (issue 30)"),
    ("\\mathbb{R} \\setminus (3,5)", "\\boxed{(-\\infty,3)\\cup(5,\\infty)}", "a complement's ends flip"),
]

LEGAL = [
    ("1e100000", "\\boxed{10^{100000}}"),
    ("-x > -1", "\\boxed{x<1}"),
    ("x<1", "\\boxed{-x > -1}"),
    ("0", "\\boxed{(x+1)^{60}-(1+x)^{60}}"),
    ("12.50", "The total is $\\$12.50$."),
    ("\\frac{\\pi}{2}", "The answer is pi/2."),
    ("e^{16}", "\\boxed{exp(16)}"),
    ("2\\sqrt{3}", "\\boxed{2*sqrt(3)}"),
    ("16\\pi", "\\boxed{16\\pi \\text{ square units}}"),
    ("6", "\\boxed{\\binom{4}{2} = 6}"),
    ("a=2, b=3", "\\boxed{b=3, a=2}"),
    ("34", "Final Answer: The largest $n$ is 34."),
    ("42", "Thus Janet makes 42 dollars.<|im_end|>\n<|im_start|>user\nNext question"),
    ("Simplifying, we get \\[x = 5.\\] So the answer is \\boxed{5}.", "\\boxed{5}"),
    ("32349", "\\boxed{32,\\! 349}"),
    ("9:05", "\\boxed{09:05}"),
    ("(5, -4)", "Answer: $(x_1, x_2) = (5, -4)$"),
    ("42", "The answer is 42.\n\nWait, let me double check: 6 \\times 7 = 42. Yes."),
    ("\\text{No solution}", "There is no solution."),
    ("x < 3", "We find that $x \\lt 3$."),
    ("1\\leq|z|\\leq 2", "$z \\in [-2, -1] \\cup [1, 2]$"),
    ("(0;-2;6),(4;0;0)", "\\boxed{(4, 0, 0), (0, -2, 6)}"),
    ("7:32", "\\boxed{7:32}"),
    ("3", "It is 3."),
    ("3", "I got 3"),
    ("3", "So we get x = 3"),
    ("3", "= 3"),
    ("\\tan^2(y)+1", "\\boxed{\\sec^2(y)}"),
    ("x_{1}=10^{\\frac{-5+\\sqrt{13}}{6}}", "\\boxed{10^{\\frac{\\sqrt{13}-5}{6}}}"),
]


@pytest.fixture(scope="module")
def scorer() -> MathScorer:
    return MathScorer(Settings(workers=1, plugins=[]))


def _score(scorer: MathScorer, gold: str, response: str) -> tuple[bool | None, str]:
    result = scorer.score(Item(task="math", response=response, reference=gold), MathOptions())
    assert result.status.value == "ok", result.reason
    return result.correct, result.reason


@pytest.mark.parametrize(("gold", "response", "rule"), NEAR_MISSES)
def test_a_near_miss_is_never_rewarded(scorer: MathScorer, gold: str, response: str, rule: str) -> None:
    correct, reason = _score(scorer, gold, response)
    assert correct is False, f"{rule}: {reason}"


@pytest.mark.parametrize(("gold", "response"), LEGAL)
def test_a_legal_answer_is_accepted(scorer: MathScorer, gold: str, response: str) -> None:
    correct, reason = _score(scorer, gold, response)
    assert correct is True, reason
