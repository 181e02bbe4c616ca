"""Answer forms of issue 30 beyond extraction: clock times (clock.py), degrees inside trigonometric
functions, operators whose value is stated ("\\lim ... = 1", "\\det(A) = 3"), indexed terms as a tuple,
golds with a stray trailing backslash, and set operations (sets.py). Each class has its near-misses."""

from __future__ import annotations

import pytest

from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer

CASES = [
    # clock times: seconds left out are zero, a suffix or a 24-hour hour says the half of the day
    ("20:34:00", "20:34", True),
    ("20:34", "20:34:00", True),
    ("8:34 PM", "20:34", True),
    ("20:34", "8:34 p.m.", True),
    ("20:34", "20h34", True),
    ("8:34", "8:34 PM", True),
    ("9:05", "09:05", True),
    ("8:34 PM", "8:34", False),  # the answer leaves the half of the day open
    ("8:34", "20:34", False),  # another face
    ("8:34 AM", "20:34", False),
    ("20:34", "20:35", False),
    ("20:34:00", "20:34:01", False),
    ("1:30", "2:60", False),  # no time
    # degrees inside a trigonometric function
    ("\\cos(x)", "\\sin(90^{\\circ}-x)", True),
    ("\\frac{1}{2}", "\\sin 30^\\circ", True),
    ("\\cos(x)", "\\sin(80^{\\circ}-x)", False),
    ("\\sin(x)", "\\sin(90^{\\circ}-x)", False),
    # an operator's value stated as "= value"
    ("1", "\\lim_{x\\to 0} \\frac{\\sin x}{x} = 1", True),
    ("3", "\\det(A) = 3", True),
    ("2", "\\lim_{x\\to 0} \\frac{\\sin x}{x} = 1", False),
    ("-3", "\\det(A) = 3", False),
    # indexed terms of one letter, in index order
    ("a_1 = -1, a_2 = 1", "(-1, 1)", True),
    ("(-1, 1)", "a_1 = -1, a_2 = 1", True),
    ("a_1 = -1, a_2 = 1", "(1, -1)", False),
    # a stray trailing backslash in a gold
    ("5\\", "5", True),
    ("\\frac{1}{2}\\", "1/2", True),
    ("5\\", "6", False),
    # set operations: complement in the reals, difference, union of finite sets
    ("\\mathbb{R} \\setminus (3,5)", "(-\\infty,3]\\cup[5,\\infty)", True),
    ("(-\\infty,3]\\cup[5,\\infty)", "\\mathbb{R} \\setminus (3,5)", True),
    ("\\mathbb{R} \\setminus [3,5]", "(-\\infty,3)\\cup(5,\\infty)", True),
    ("\\mathbb{R}\\setminus\\{3\\}", "x \\ne 3", True),
    ("\\{1,2,3,4\\}", "\\{1,2\\}\\cup\\{3,4\\}", True),
    ("\\{1,3\\}", "\\{1,2,3\\}\\setminus\\{2\\}", True),
    ("\\mathbb{R} \\setminus (3,5)", "(-\\infty,3)\\cup(5,\\infty)", False),  # ends not flipped
    ("\\mathbb{R} \\setminus (3,5)", "(-\\infty,3]\\cup[6,\\infty)", False),  # another interval
    ("\\mathbb{R} \\setminus (3,5)", "(3,5)", False),
    ("\\{1,2,3,4\\}", "\\{1,2\\}\\cup\\{3,5\\}", False),
    ("\\{1,2,3,4\\}", "\\{1,2\\}\\cup\\{3\\}", False),
    # Python's power, as sympy prints golds; a chain keeps its right-associative grouping
    ("3*s**2", "3s^2", True),
    ("2*x*(15*x**2 - 4*x + 10)", "2x(15x^2-4x+10)", True),
    ("x**-1", "\\frac{1}{x}", True),
    ("20", "10 - 10*i**2", True),
    ("3*s**2", "3s^3", False),
    ("64", "2**3**2", False),
    # a root index with an unbraced one-character radicand, as LaTeX reads it
    ("\\sqrt[3]{2}", "\\sqrt[3]2", True),
    ("2", "\\sqrt[3]8", True),
    ("\\sqrt[3]{3}", "\\sqrt[3]2", False),
    ("\\sqrt[3]{27}", "\\sqrt[3]27", False),  # the cube root of 2, times 7
]


@pytest.fixture(scope="module")
def scorer() -> MathScorer:
    return MathScorer(Settings(workers=1, plugins=[]))


@pytest.mark.parametrize(("gold", "answer", "correct"), CASES)
def test_answer_forms(scorer: MathScorer, gold: str, answer: str, correct: bool) -> None:
    item = Item(task="math", response=f"So the answer is $\\boxed{{{answer}}}$.", reference=gold)
    result = scorer.score(item, MathOptions())
    assert result.status.value == "ok", result.reason
    assert result.correct is correct, result.reason


def test_a_time_names_its_rule(scorer: MathScorer) -> None:
    result = scorer.score(Item(task="math", response="\\boxed{20:34}", reference="8:34 PM"), MathOptions())
    assert (result.details or {})["rule"].startswith("clock:")


def test_a_complement_names_its_rule(scorer: MathScorer) -> None:
    item = Item(
        task="math",
        response="\\boxed{(-\\infty,3]\\cup[5,\\infty)}",
        reference="\\mathbb{R} \\setminus (3,5)",
    )
    assert (scorer.score(item, MathOptions()).details or {})["rule"].startswith("set complement")


MATRICES = [
    # matrix arithmetic of explicit matrices, evaluated (issue 30); a matrix row is ordered
    (
        "\\begin{pmatrix}6 & 8 \\\\ 10 & 12\\end{pmatrix}",
        "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix} + \\begin{pmatrix}5 & 6 \\\\ 7 & 8\\end{pmatrix}",
        True,
    ),
    (
        "\\begin{pmatrix}6 & 8 \\\\ 10 & 13\\end{pmatrix}",
        "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix} + \\begin{pmatrix}5 & 6 \\\\ 7 & 8\\end{pmatrix}",
        False,
    ),
    (
        "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}",
        "\\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix} \\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}",
        True,
    ),
    (
        "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}",
        "\\begin{pmatrix}0 & 1 \\\\ 1 & 0\\end{pmatrix} \\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}",
        False,
    ),
    (
        "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}",
        "\\begin{pmatrix}2 & 1 \\\\ 4 & 3\\end{pmatrix}",
        False,
    ),  # columns swapped
]
# Points on a branch cut (the negative real axis) are not sampled where complex points are allowed.
BRANCHES = [
    ("\\frac{1}{\\sqrt{x}}", "\\sqrt{\\frac{1}{x}}", True),
    ("\\sqrt{x^2}", "x", False),
    ("\\log(x^2)", "2\\log(x)", False),
    ("\\sqrt{x}\\sqrt{y}", "\\sqrt{xy}", False),
    ("\\sqrt{-x}", "i\\sqrt{x}", False),
    ("|x|", "x", False),
]


@pytest.mark.parametrize(("gold", "answer", "correct"), MATRICES + BRANCHES)
def test_matrices_and_branch_cuts(scorer: MathScorer, gold: str, answer: str, correct: bool) -> None:
    test_answer_forms(scorer, gold, answer, correct)


# Whole responses and golds as other graders' tests write them (benchmarks/grader_suites.py, issue 30).
RESPONSES = [
    # an R1-style answer tag is the answer slot; two different tags are a hedge
    ("42", "<think>reasoning</think><answer>42</answer>", True),
    ("42", "<think>reasoning</think>\n<answer>\nThe answer is 42.\n</answer>", True),
    ("42", "The answer is <answer>42</answer> but also 99.", True),
    ("42", "<think>reasoning</think><answer>43</answer>", False),
    ("42", "<answer>42</answer> and <answer>43</answer>", False),
    ("42", "<think>reasoning <answer>42</answer>", False),  # the thinking never closed
    # a number in scientific notation is one number ("6.022e23" is not 6)
    ("6.022e23", "Avogadro's number is approximately 6.022e23.", True),
    ("6", "Avogadro's number is approximately 6.022e23.", False),
    # CJK text: its full stop ends a sentence, its words are words, its "therefore" concludes
    ("x = \\frac{3}{2}", "移项得到 $2x = 3$。\n两边同时除以 2，得出 $x = 1.5$。", True),
    ("x = \\frac{3}{2}", "移项得到 $2x = 3$。\n两边同时除以 2，得出 $x = 2.5$。", False),
    ("E = mc^2", "根据物理公式：$E = mc^3$。\n但实际上光速的指数应为 2，因此正确公式是 $E = mc^2$。", True),
    ("5", "其中，$x = 5$ 代表速度，$y = 7$ 代表时间。", False),  # mentioned, not concluded
    ("6", "计算得到 $x=5$。\n\n因此 $x=5$ 或 $x=6$。", False),  # another language's "or" is a hedge
    ("6", "したがって $x=5$ または $x=6$ である。", False),
    ("5,6", "计算得到 $x=5$。\n\n因此 $x=5$ 和 $x=6$。", True),  # and its "and" a list
    ("E = mc^2", "爱因斯坦公式 $E = c^2 m$ 适用于质量与能量的转换。", False),  # a formula in passing
    # a Python power after a cue is no bold marker; bold around an answer still is
    ("5 x^{2} - 8", "The answer is $5*x**2 - 8$.", True),
    ("55", "The answer is **55**.", True),
    # GLM-4.1V/4.5V's answer box tokens are a box
    ("42", "<think>...</think>\n<|begin_of_box|>42<|end_of_box|>", True),
    ("42", "<think>...</think>\n<|begin_of_box|>43<|end_of_box|>", False),
    # a fraction in words; words that only count are not the count ("three quarters" is not 3)
    ("one half", "The answer is \\boxed{0.5}.", True),
    ("\\frac{2}{3}", "The answer is two thirds.", True),
    ("\\frac{2}{3}", "The answer is one third.", False),
    ("3", "The answer is three quarters.", False),
    ("2", "The answer is two thirds.", False),
    # a gold written as a sentence: after its answer cue, or the one number it states
    ("The answer is 33", "\\boxed{33}", True),
    ("The answer is 33", "\\boxed{34}", False),
    ("Final answer: #### 4", "The result is #### 4", True),
    ("The number is 4.", "It is 4.", True),
    ("The number is 4.", "It is 5.", False),
    ("The answer is (B).", "The correct option is (B).", True),
    ("The answer is (B).", "The correct option is (C).", False),
    # an answer cue without an article at the start of a line
    ("996", "answer is 996", True),
    ("996", "answer is 997", False),
    # a last sentence that names a thing; its negation or a second candidate is no answer
    ("Paris", "The capital of France is Paris.", True),
    ("Paris", "The capital of France is Lyon.", False),
    ("Paris", "The capital of France is not Paris.", False),
    ("Paris", "The capital of France is Paris or Lyon.", False),
    # a formula followed by a sentence that offers other numbers leaves the answer open
    ("\\frac{1}{4}", "The equation is $x=\\frac{1}{4}$. Some other numbers are 1, 2, 3.", False),
    ("5", "Work.\n\nTherefore $x = 5$. That is 5 apples.", True),
]


@pytest.mark.parametrize(("gold", "response", "correct"), RESPONSES)
def test_whole_responses(scorer: MathScorer, gold: str, response: str, correct: bool) -> None:
    result = scorer.score(Item(task="math", response=response, reference=gold), MathOptions())
    assert result.status.value == "ok", result.reason
    assert result.correct is correct, result.reason


def test_a_word_answer_names_its_rule(scorer: MathScorer) -> None:
    item = Item(task="math", response="The capital of France is Paris.", reference="Paris")
    assert scorer.score(item, MathOptions()).details["extraction"] == "predicate-sentence"
