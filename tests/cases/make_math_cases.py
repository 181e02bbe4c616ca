"""Generate tests/cases/math.jsonl: the labelled development set of the `math` verifier.

Run `python tests/cases/make_math_cases.py` to rewrite the file; the .jsonl is committed and is the source
of truth. Each answer spec (category, gold, how the model wrote its answer, truly correct?, note) is
wrapped in one or two realistic response shapes: multi-paragraph chains of thought ending in a box, a
"**Final Answer**" block, `<think>...</think>` then an answer line, "Answer:", a bare answer. The chains of
thought mention intermediate numbers (sometimes the gold itself) so that "last number" extraction is
punished. Labels are about the mathematics: an odd but correct form is labelled true.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).with_name("math.jsonl")

# (category, gold, answer as the model writes it (LaTeX), label, note)
SPECS: list[tuple[str, str, str, bool, str]] = [
    # --- integers ----------------------------------------------------------------------------------
    ("integer", "42", "42", True, "plain integer"),
    ("integer", "1000000", "1,000,000", True, "thousands separators"),
    ("integer", "1000", "1\\,000", True, "LaTeX thin-space thousands separator"),
    ("integer", "1000000", "10^6", True, "power of ten"),
    ("integer", "1000000", "10^{6}", True, "braced power of ten"),
    ("integer", "2024", "2{,}024", True, "LaTeX braced comma separator"),
    ("integer", "-7", "-7", True, "negative integer"),
    ("integer", "-7", "7", False, "sign dropped"),
    ("integer", "36", "35", False, "off by one"),
    ("integer", "120", "5!", True, "factorial form of the integer"),
    ("integer", "10", "\\binom{5}{2}", True, "binomial coefficient form"),
    ("integer", "12", "12.0", True, "integer written with a trailing .0"),
    ("integer", "12", "12.5", False, "decimal close to the integer"),
    ("integer", "5", "\\sqrt{25}", True, "radical that evaluates to the integer"),
    ("integer", "1024", "2^{10}", True, "power form of the integer"),
    ("integer", "256", "2^{9}", False, "wrong power"),
    ("integer", "7", "x = 7", True, "answer given as an equation"),
    ("integer", "7", "n=7", True, "answer given as an equation in n"),
    ("integer", "3", "3 \\text{ apples}", True, "unit word after the number"),
    ("integer", "15", "15 \\text{ cm}", True, "length unit"),
    ("integer", "20", "\\$20", True, "currency sign"),
    ("integer", "20", "20 \\text{ dollars and } 50 \\text{ cents}", False, "two quantities, not 20"),
    ("integer", "8", "\\lfloor 8.7 \\rfloor", True, "floor that evaluates to the gold"),
    ("integer", "100", "100\\%", False, "percent for a plain integer gold, no prompt: 100% is 1 (issue 28)"),
    ("integer", "0", "0", True, "zero"),
    ("integer", "0", "0.0001", False, "tiny non-zero value is not zero"),
    ("integer", "6", "6 \\text{ ways}", True, "counting unit word"),
    ("integer", "9", "\\textbf{9}", True, "bold wrapper"),
    ("integer", "13", "\\mathbf{13}", True, "mathbf wrapper"),
    ("integer", "27", "3^3", True, "cube form"),
    ("integer", "144", "144.", True, "trailing period"),
    ("integer", "31", "13", False, "digits swapped"),
    ("integer", "2", "\\log_2 4", True, "logarithm that evaluates to the gold"),
    ("integer", "5", "5 \\text{ and } 7", False, "two answers for a single-valued gold"),
    ("integer", "1", "e^{i\\pi} + 2", True, "Euler identity evaluates to 1"),
    ("integer", "4", "\\frac{8}{2}", True, "unreduced fraction equal to the integer"),
    ("integer", "64", "64 \\text{ square units}", True, "area unit words"),
    ("integer", "45", "45^\\circ", True, "degree mark on a plain-number gold"),
    ("integer", "1000", "1,\\!000", True, "negative thin space inside a thousands separator"),
    ("integer", "18", "18 \\text{ inches}", True, "unit on the answer"),
    ("integer", "15", "5, 3", False, "factors listed instead of the product"),
    ("fraction", "\\frac{1}{2}\\text{ inches}", "\\frac{1}{2}", True, "unit on the gold only"),
    # --- rationals, decimals, percent, scientific ------------------------------------------------------
    ("fraction", "\\frac{1}{2}", "0.5", True, "decimal for a fraction"),
    ("fraction", "\\frac{1}{2}", "\\dfrac{1}{2}", True, "dfrac"),
    ("fraction", "\\frac{1}{2}", "1/2", True, "slash fraction"),
    ("fraction", "\\frac{1}{2}", "\\frac{2}{4}", True, "unreduced fraction"),
    ("fraction", "\\frac{3}{4}", "\\frac34", True, "brace-free frac"),
    ("fraction", "\\frac{3}{4}", "\\frac{4}{3}", False, "reciprocal"),
    ("fraction", "\\frac{1}{3}", "0.\\overline{3}", True, "repeating decimal"),
    ("fraction", "\\frac{1}{6}", "0.1\\overline{6}", True, "repeating decimal with a fixed part"),
    ("fraction", "\\frac{1}{3}", "0.33", False, "rounded decimal for an exact fraction (too coarse)"),
    ("fraction", "\\frac{5}{2}", "2\\frac{1}{2}", True, "mixed number"),
    ("fraction", "\\frac{5}{2}", "2 \\frac{1}{3}", False, "wrong mixed number"),
    ("fraction", "-\\frac{2}{3}", "\\frac{-2}{3}", True, "sign inside the numerator"),
    ("fraction", "-\\frac{2}{3}", "\\frac{2}{3}", False, "sign dropped"),
    ("fraction", "\\frac{1}{2}", "50\\%", True, "percent for a fraction gold"),
    ("fraction", "\\frac{1}{4}", "25\\%", True, "percent for a fraction gold"),
    ("fraction", "\\frac{1}{4}", "0.25\\%", False, "percent off by a factor of 100"),
    ("fraction", "\\frac{7}{8}", "\\tfrac{7}{8}", True, "tfrac"),
    ("fraction", "\\frac{1}{2^{99}}", "\\frac{1}{2^{98}}", False, "tiny values compared relatively"),
    ("fraction", "\\frac{1}{2^{99}}", "2^{-99}", True, "tiny value, negative exponent"),
    ("fraction", "\\frac{9}{4}", "2.25", True, "terminating decimal"),
    ("fraction", "\\frac{9}{4}", "2.2", False, "wrong decimal"),
    ("decimal", "0.5", "\\frac{1}{2}", True, "fraction for a decimal gold"),
    ("decimal", "3.14", "3.14", True, "same decimal"),
    ("decimal", "3.14", "3.140", True, "trailing zero"),
    ("decimal", "1.73", "1.732", True, "more precise answer that rounds to the gold"),
    ("decimal", "1.73", "\\sqrt{3}", True, "exact value that rounds to the gold"),
    ("decimal", "1.73", "1.7", False, "less precise than the gold"),
    ("decimal", "1.73", "1.74", False, "wrong last digit"),
    (
        "decimal",
        "0.5",
        "50\\%",
        True,
        "percent for a plain decimal gold: 50% is 0.5 (issue 30)",
    ),
    ("decimal", "12.5", "12\\frac{1}{2}", True, "mixed number for a decimal"),
    ("decimal", "2.5", "2.50 \\text{ meters}", True, "decimal with a unit"),
    ("decimal", "0.125", ".125", True, "leading point"),
    ("decimal", "7.5", "75", False, "decimal point lost"),
    ("percent", "50\\%", "50\\%", True, "same percent"),
    ("percent", "50\\%", "50", True, "percent gold answered without the sign"),
    ("percent", "50\\%", "0.5", True, "fraction of one for a percent gold"),
    ("percent", "50\\%", "\\frac{1}{2}", True, "fraction for a percent gold"),
    ("percent", "25\\%", "0.25\\%", False, "percent off by 100"),
    ("percent", "12.5\\%", "12.5 \\text{ percent}", True, "percent spelled as a word"),
    ("percent", "40\\%", "60\\%", False, "complement"),
    ("scientific", "1500", "1.5 \\times 10^{3}", True, "scientific notation"),
    ("scientific", "1500", "1.5e3", True, "e notation"),
    ("scientific", "3 \\times 10^{8}", "300000000", True, "expanded scientific"),
    ("scientific", "6.02 \\times 10^{23}", "6.02 \\times 10^{22}", False, "exponent off by one"),
    ("scientific", "2.5 \\times 10^{-3}", "0.0025", True, "small scientific"),
    # --- radicals, pi, e, logs, expressions ------------------------------------------------------------
    ("expression", "2\\sqrt{2}", "\\sqrt{8}", True, "unsimplified radical"),
    ("expression", "2\\sqrt{2}", "2.83", False, "rounded decimal for an exact radical"),
    ("expression", "\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}", True, "coefficient moved"),
    ("expression", "\\frac{\\sqrt{3}}{3}", "\\frac{1}{\\sqrt{3}}", True, "unrationalised denominator"),
    ("expression", "\\frac{\\sqrt{3}}{3}", "\\frac{\\sqrt{2}}{2}", False, "different radical"),
    ("expression", "3\\sqrt{5}", "\\sqrt{45}", True, "radical form"),
    ("expression", "1+\\sqrt{2}", "\\sqrt{2}+1", True, "terms reordered"),
    ("expression", "1+\\sqrt{2}", "1-\\sqrt{2}", False, "conjugate"),
    ("expression", "\\sqrt[3]{2}", "2^{1/3}", True, "cube root as a power"),
    ("expression", "2\\pi", "2 \\pi", True, "spacing"),
    ("expression", "2\\pi", "\\pi \\cdot 2", True, "product reordered"),
    ("expression", "2\\pi", "6.28", False, "rounded pi multiple"),
    ("expression", "\\frac{\\pi}{4}", "\\pi/4", True, "slash form"),
    ("expression", "\\frac{\\pi}{4}", "\\frac{\\pi}{2}", False, "different angle"),
    ("expression", "12\\pi", "12\\pi \\text{ cm}^2", True, "area with a unit"),
    ("expression", "e^2", "e^{2}", True, "braces"),
    ("expression", "e^2", "2e", False, "power read as a product"),
    ("expression", "\\ln 2", "\\frac{\\log 2}{\\log e}", True, "change of base"),
    ("expression", "\\log_2 3", "\\frac{\\ln 3}{\\ln 2}", True, "change of base for log base 2"),
    ("expression", "\\log_2 3", "\\log_3 2", False, "base and argument swapped"),
    ("expression", "x^2+2x+1", "(x+1)^2", True, "factored polynomial"),
    ("expression", "x^2-1", "(x-1)(x+1)", True, "difference of squares"),
    ("expression", "x^2-1", "(x-1)^2", False, "wrong factorisation"),
    ("expression", "\\frac{x+1}{x-1}", "\\frac{1+x}{x-1}", True, "commuted numerator"),
    ("expression", "\\frac{x+1}{x-1}", "\\frac{x-1}{x+1}", False, "reciprocal rational function"),
    ("expression", "2x+3", "3+2x", True, "commuted linear"),
    ("expression", "\\sin^2 x", "1-\\cos^2 x", True, "Pythagorean identity"),
    ("expression", "\\frac{n(n+1)}{2}", "\\frac{n^2+n}{2}", True, "expanded triangular number"),
    ("expression", "\\frac{n(n+1)}{2}", "\\frac{n(n-1)}{2}", False, "off-by-one formula"),
    ("expression", "4\\sqrt{3}", "\\sqrt{48}", True, "unsimplified radical"),
    ("expression", "5+2\\sqrt{6}", "(\\sqrt{2}+\\sqrt{3})^2", True, "squared sum of radicals"),
    ("expression", "\\frac{1}{x}", "x^{-1}", True, "negative exponent"),
    ("expression", "a^2+b^2", "b^2+a^2", True, "commuted symbols"),
    ("expression", "2^{100}", "1267650600228229401496703205376", True, "big power expanded"),
    ("expression", "2^{100}", "2^{99}", False, "big power off by one"),
    ("expression", "\\sqrt{2}", "1.4142135623730951", True, "decimal within the relative tolerance"),
    ("expression", "\\frac{\\pi}{6}", "30^\\circ", True, "degrees for a radian gold"),
    ("expression", "\\frac{\\pi}{6}", "30", False, "bare 30 for a radian gold"),
    ("degrees", "30^\\circ", "\\frac{\\pi}{6}", True, "radians for a degree gold"),
    ("degrees", "30^\\circ", "30", True, "degree mark dropped"),
    ("degrees", "60^\\circ", "30^\\circ", False, "wrong angle"),
    ("degrees", "90^\\circ", "90 \\text{ degrees}", True, "degrees as a word"),
    # --- equations vs values -----------------------------------------------------------------------
    ("equation", "y = 2x+1", "2x+1", True, "value for an equation gold"),
    ("equation", "2x+1", "y = 2x+1", True, "equation for a value gold"),
    ("equation", "y = 2x+1", "y = 2x - 1", False, "wrong intercept"),
    ("equation", "x^2+y^2=1", "y^2+x^2=1", True, "sides reordered"),
    ("equation", "x+2y=4", "2x+4y=8", True, "equation scaled by 2"),
    ("equation", "x+2y=4", "x+2y=5", False, "different constant"),
    ("equation", "y=-\\frac{1}{2}x+3", "y = 3 - \\frac{x}{2}", True, "slope-intercept reordered"),
    ("equation", "x = 5", "5", True, "value for an assignment gold"),
    ("equation", "f(x) = x^2", "x^2", True, "function notation"),
    # --- multiple solutions ----------------------------------------------------------------------------
    ("solutions", "-2, 2", "x = \\pm 2", True, "plus-minus for a pair of roots"),
    ("solutions", "x = \\pm 2", "-2, 2", True, "list for a plus-minus gold"),
    ("solutions", "-2, 2", "2, -2", True, "order of roots does not matter"),
    ("solutions", "-2, 2", "x=2 \\text{ or } x=-2", True, "roots joined by or"),
    ("solutions", "-2, 2", "2", False, "one root missing"),
    ("solutions", "-2, 2", "-2, 2, 0", False, "an extra root"),
    ("solutions", "1, 3", "\\{1, 3\\}", True, "solution set"),
    ("solutions", "1 \\pm \\sqrt{2}", "1+\\sqrt{2}, 1-\\sqrt{2}", True, "plus-minus with radicals"),
    ("solutions", "1 \\pm \\sqrt{2}", "1+\\sqrt{2}", False, "one of two radical roots"),
    ("solutions", "2, 5", "x_1 = 2, x_2 = 5", True, "indexed roots"),
    # --- intervals and unions --------------------------------------------------------------------------
    ("interval", "(1, 2]", "(1, 2]", True, "same half-open interval"),
    ("interval", "(1, 2]", "[1, 2)", False, "ends swapped"),
    ("interval", "(1, 2]", "(1, 2)", False, "closed end made open"),
    ("interval", "[0, \\infty)", "[0, \\infty)", True, "unbounded interval"),
    ("interval", "(3, \\infty)", "x > 3", True, "inequality for an interval"),
    ("interval", "(3, \\infty)", "x \\geq 3", False, "closed inequality for an open interval"),
    ("interval", "[-2, 5)", "-2 \\le x < 5", True, "double inequality"),
    ("interval", "(-\\infty, 1) \\cup (2, \\infty)", "(-\\infty,1)\\cup(2,\\infty)", True, "union spacing"),
    (
        "interval",
        "(-\\infty, 1) \\cup (2, \\infty)",
        "(2, \\infty) \\cup (-\\infty, 1)",
        True,
        "union reordered",
    ),
    (
        "interval",
        "(-\\infty, 1) \\cup (2, \\infty)",
        "(-\\infty, 1]\\cup(2, \\infty)",
        False,
        "union end closed",
    ),
    ("interval", "(-\\infty, 1) \\cup (2, \\infty)", "x < 1 \\text{ or } x > 2", True, "inequalities joined"),
    ("interval", "\\left[ \\frac{1}{2}, 3 \\right]", "[0.5, 3]", True, "decimal end"),
    ("inequality", "x \\geq 4", "[4, \\infty)", True, "interval for an inequality gold"),
    ("interval", "[2, 5)", "x \\in [2, 5)", True, "membership written out"),
    ("tuple", "x=2, y=3", "(2, 3)", True, "pair for named coordinates"),
    ("tuple", "x=2, y=3", "(3, 2)", False, "pair reversed for named coordinates"),
    ("inequality", "x \\geq 4", "x > 4", False, "strict for non-strict"),
    ("inequality", "x < -1", "-1 > x", True, "inequality flipped"),
    # --- tuples, vectors, sets, matrices ---------------------------------------------------------------
    ("tuple", "(1, 2)", "(1,2)", True, "ordered pair"),
    ("tuple", "(1, 2)", "(2, 1)", False, "ordered pair reversed"),
    ("tuple", "(1, 2)", "\\{1, 2\\}", False, "a set is not an ordered pair"),
    ("tuple", "(3, -4)", "\\left(3, -4\\right)", True, "left/right sizing"),
    ("tuple", "(\\frac{1}{2}, 3)", "(0.5, 3)", True, "decimal component"),
    ("tuple", "(2, 3, 5)", "(2, 3)", False, "component missing"),
    ("tuple", "(1, 2)", "x = 1, y = 2", True, "coordinates as equations"),
    ("tuple", "(2, -1)", "(x, y) = (2, -1)", True, "named pair"),
    ("vector", "\\langle 1, 2 \\rangle", "(1, 2)", True, "angle-bracket vector as a tuple"),
    ("vector", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\langle 1,2 \\rangle", True, "column vector"),
    ("vector", "\\begin{pmatrix} 3 \\\\ -1 \\\\ 2 \\end{pmatrix}", "(3, -1, 2)", True, "3-vector"),
    ("vector", "\\begin{pmatrix} 3 \\\\ -1 \\\\ 2 \\end{pmatrix}", "(3, 1, 2)", False, "sign wrong"),
    ("set", "\\{1, 2, 3\\}", "\\{3, 2, 1\\}", True, "set order ignored"),
    ("set", "\\{1, 2, 3\\}", "\\{1, 2\\}", False, "element missing"),
    ("set", "\\{1, 2\\}", "(1, 2)", False, "a tuple is not a set"),
    (
        "matrix",
        "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
        "\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}",
        True,
        "bmatrix for pmatrix",
    ),
    (
        "matrix",
        "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
        "\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}",
        False,
        "transposed matrix",
    ),
    (
        "matrix",
        "\\begin{pmatrix} \\frac12 & 0 \\\\ 0 & 1 \\end{pmatrix}",
        "\\begin{pmatrix} 0.5 & 0 \\\\ 0 & 1 \\end{pmatrix}",
        True,
        "decimal entry",
    ),
    # --- complex numbers ----------------------------------------------------------------------------
    ("complex", "3+4i", "4i+3", True, "reordered complex"),
    ("complex", "3+4i", "3+4j", True, "engineering j"),
    ("complex", "3+4i", "3-4i", False, "conjugate"),
    ("complex", "1-i", "\\frac{2}{1+i}", True, "unsimplified quotient"),
    ("complex", "-1", "i^2", True, "i squared"),
    ("complex", "2i", "\\sqrt{-4}", True, "square root of a negative"),
    ("complex", "\\frac{1}{2}+\\frac{\\sqrt{3}}{2}i", "e^{i\\pi/3}", True, "polar form"),
    # --- text answers -----------------------------------------------------------------------------
    ("text", "\\text{no solution}", "\\text{No solution}", True, "case"),
    ("text", "\\text{no solution}", "\\emptyset", True, "empty set for no solution"),
    ("text", "\\text{no solution}", "\\text{none}", True, "none for no solution"),
    ("text", "\\text{Tuesday}", "\\text{tuesday}", True, "case of a weekday"),
    ("text", "\\text{Tuesday}", "\\text{Wednesday}", False, "different weekday"),
    ("text", "\\text{even}", "\\text{Even}", True, "parity word"),
    ("text", "\\text{even}", "\\text{odd}", False, "wrong parity"),
    ("text", "\\text{yes}", "Yes", True, "yes"),
    ("text", "\\text{yes}", "No", False, "no for yes"),
    ("text", "\\infty", "\\infty", True, "infinity"),
    ("text", "\\text{does not exist}", "\\text{DNE}", True, "abbreviation"),
    ("text", "\\text{north east}", "\\text{northeast}", True, "space inside the words"),
    # --- multiple choice ---------------------------------------------------------------------------
    ("choice", "B", "(B)", True, "parenthesised letter"),
    ("choice", "B", "B)", True, "letter with a closing parenthesis"),
    ("choice", "B", "\\textbf{(B) } 24", True, "AMC style bold letter with its value"),
    ("choice", "B", "\\text{(B)}", True, "letter in text"),
    ("choice", "B", "(C)", False, "wrong letter"),
    ("choice", "B", "\\textbf{(C) } 24", False, "wrong letter with a value"),
    ("choice", "\\textbf{(D) }12", "D", True, "letter for an AMC gold"),
    ("choice", "\\textbf{(D) }12", "12", True, "value for an AMC gold"),
    ("choice", "\\textbf{(D) }12", "13", False, "wrong value for an AMC gold"),
    ("choice", "C", "C", True, "bare letter"),
    ("choice", "B", "B \\text{ and } C", False, "two letters: a hedge"),
    (
        "choice",
        "A",
        "\\textbf{(A) } 10 \\qquad \\textbf{(B) } 12",
        False,
        "two options copied from the prompt",
    ),
    ("integer", "1", "1 + x - x", True, "symbols that cancel"),
    ("choice", "A", "\\text{A}", True, "letter in text"),
]

# Structural cases: (category, gold, full response, label, note)
RAW: list[tuple[str, str, str, bool, str]] = []

INTROS = [
    "Let me work through this step by step.",
    "We need to find the requested quantity. Let's set up the problem carefully.",
    "First, let's understand what the problem is asking.",
    "I'll start by writing down what we know.",
    "To solve this, I will break the problem into smaller parts.",
]
STEPS = [
    "Substituting the given values, we get {a} + {b} = {c}. This is consistent with the constraint above.",
    "Now, multiplying both sides by {a}, we find that the left-hand side becomes {c}.",
    "Let's double-check: if we take {b} and add {a}, we obtain {c}, which matches our earlier computation.",
    "Consider the case where $n = {a}$. Then the expression equals ${c}$, so this case contributes {b}.",
    "Using the formula for the sum, $S = \\frac{{n(n+1)}}{{2}}$ with $n = {a}$, we get $S = {c}$.",
    "Wait, let me reconsider. The factor of {b} should be applied before the subtraction, giving {c}.",
    "By the Pythagorean theorem, $c^2 = {a}^2 + {b}^2$, so the hypotenuse squared is ${c}$.",
    "Next, we simplify the fraction $\\frac{{{c}}}{{{a}}}$ and check whether it reduces further.",
    "The discriminant is $\\Delta = {b}^2 - 4 \\cdot {a} = {c}$, which tells us about the roots.",
    "Counting the remaining cases gives {a} + {b} = {c} arrangements in total.",
]
CLOSERS_BOX = [
    "Therefore, the final answer is $\\boxed{{{ans}}}$.",
    "So the answer is $\\boxed{{{ans}}}$.",
    "**Final Answer**\n\n\\[\n\\boxed{{{ans}}}\n\\]",
    "Putting everything together:\n\n$$\\boxed{{{ans}}}$$",
    "Hence the required value is \\(\\boxed{{{ans}}}\\).",
]
CLOSERS_TEXT = [
    "The final answer is ${ans}$.",
    "Answer: ${ans}$",
    "**Final Answer:** ${ans}$",
    "So the answer is ${ans}$.",
    "Final answer: {ans}",
]


def chain_of_thought(rng: random.Random, paragraphs: int) -> str:
    parts = [rng.choice(INTROS)]
    for _ in range(paragraphs):
        a, b = rng.randint(2, 40), rng.randint(2, 40)
        sentences = [rng.choice(STEPS).format(a=a, b=b, c=a + b, n=a) for _ in range(rng.randint(2, 4))]
        parts.append(" ".join(sentences))
    return "\n\n".join(parts)


def wrap(rng: random.Random, answer: str, shape: str) -> str:
    if shape == "bare":
        return answer if rng.random() < 0.5 else f"${answer}$"
    cot = chain_of_thought(rng, rng.randint(2, 6))
    if shape == "box":
        return f"{cot}\n\n{rng.choice(CLOSERS_BOX).format(ans=answer)}"
    if shape == "think":
        closer = rng.choice(CLOSERS_TEXT + CLOSERS_BOX).format(ans=answer)
        return f"<think>\n{cot}\n</think>\n\n{closer}"
    return f"{cot}\n\n{rng.choice(CLOSERS_TEXT).format(ans=answer)}"


def structural(rng: random.Random) -> None:
    """Extraction-specific cases: truncation, hedges, think tags, cues without boxes."""
    cot = chain_of_thought
    add = RAW.append
    for gold in ("17", "24", "9", "130", "\\frac{3}{5}"):
        add(
            (
                "truncated",
                gold,
                f"{cot(rng, 3)}\n\nNow the sum is {gold} and we still need to multiply it by",
                False,
                "cut off mid-sentence; the last number equals the gold but is not an answer",
            )
        )
        add(
            (
                "truncated",
                gold,
                f"<think>\n{cot(rng, 4)}\nSo far we have ${gold}$ as a partial value, and next",
                False,
                "cut off inside <think>; an intermediate equals the gold",
            )
        )
        add(
            (
                "truncated",
                gold,
                f"{cot(rng, 2)}\n\nThe answer is $\\boxed{{{gold}",
                False,
                "cut off inside the box",
            )
        )
        add(
            (
                "hedge",
                gold,
                f"{cot(rng, 3)}\n\nThe answer is either ${gold}$ or $0$.",
                False,
                "hedge with either/or",
            )
        )
        add(
            (
                "hedge",
                gold,
                f"{cot(rng, 3)}\n\nSo $\\boxed{{{gold}}}$ or possibly $\\boxed{{1}}$.",
                False,
                "two different boxed answers",
            )
        )
        add(
            (
                "think",
                gold,
                f"<think>\n{cot(rng, 4)}\nI think it is 5... no.\n</think>\n\nThe answer is ${gold}$.",
                True,
                "answer after </think>",
            )
        )
        add(
            (
                "think",
                gold,
                f"<think>\n{cot(rng, 3)}\n</think>\n\n$\\boxed{{{gold}}}$",
                True,
                "boxed after </think>",
            )
        )
        add(
            (
                "think",
                gold,
                f"<think>\n{cot(rng, 3)} The result is \\boxed{{{gold}}}.\n</think>\n\n",
                False,
                "nothing after </think>",
            )
        )
        add(
            (
                "cue",
                gold,
                f"{cot(rng, 3)}\n\nTherefore, the final answer is {gold}. I hope it is correct.",
                True,
                "Minerva-style final answer sentence",
            )
        )
        add(
            (
                "cue",
                gold,
                f"{cot(rng, 2)}\n\n**Final Answer**\nThe answer is ${gold}$",
                True,
                "Final Answer heading then sentence",
            )
        )
        add(
            (
                "cue",
                gold,
                f"{cot(rng, 3)}\n\nThus, we conclude that the value is\n\\[\n{gold}\n\\]",
                True,
                "concluding display math without a box",
            )
        )
        add(
            (
                "boxed",
                gold,
                f"{cot(rng, 3)}\n\nWe box it: $\\boxed{{{gold}}}$. Checking again gives $\\boxed{{{gold}}}$.",
                True,
                "the same box twice",
            )
        )
        add(("boxed", gold, f"{cot(rng, 2)}\n\n\\fbox{{${gold}$}}", True, "fbox"))
        add(
            (
                "hedge",
                gold,
                f"{cot(rng, 2)}\n\nThe answer is $\\boxed{{{gold}, 0, 1, 2}}$.",
                False,
                "list of candidates in one box",
            )
        )
    for gold, wrong in (("B", "A, B, C, D"), ("D", "(A), (B), (C), (D)"), ("C", "B \\text{ or } C")):
        add(
            (
                "hedge",
                gold,
                f"{cot(rng, 2)}\n\nThe answer is $\\boxed{{{wrong}}}$.",
                False,
                "every option listed",
            )
        )
    add(
        (
            "boxed",
            "\\frac{a+b}{2}",
            f"{cot(rng, 2)}\n\nSo $\\boxed{{\\frac{{b+a}}{{2}}}}$.",
            True,
            "nested braces in the box",
        )
    )
    add(
        (
            "boxed",
            "\\{1,\\{2,3\\}\\}",
            f"{cot(rng, 2)}\n\n$\\boxed{{\\{{1,\\{{2,3\\}}\\}}}}$",
            True,
            "nested set braces",
        )
    )
    add(("boxed", "6", "The total is \\boxed 6.", True, "boxed without braces"))
    add(
        (
            "none",
            "12",
            f"{cot(rng, 4)}\n\nThis problem is tricky and I am not sure how to proceed.",
            False,
            "complete response without any answer",
        )
    )
    add(("safety", "5", "\\boxed{9^{9^{9}}}", False, "power tower: refused, not evaluated"))
    add(
        (
            "safety",
            "1",
            "\\boxed{" + "(" * 300 + "1" + ")" * 300 + "}",
            True,
            "300 nested parentheses around 1",
        )
    )
    add(
        (
            "safety",
            "2",
            "\\boxed{" + "(" * 300 + "1" + ")" * 300 + "}",
            False,
            "300 nested parentheses, wrong",
        )
    )
    add(("safety", "7", "Let me think. " * 4000 + "\n\nThe answer is $\\boxed{7}$.", True, "56 KB response"))
    add(
        (
            "safety",
            "7",
            "Let me think. " * 4000 + "\n\nThe answer is $\\boxed{8}$.",
            False,
            "56 KB response, wrong",
        )
    )
    add(("safety", "2^{10000}", "\\boxed{2^{10000}}", True, "large power, same form"))


def main() -> None:
    rng = random.Random(7)
    cases: list[dict[str, object]] = []
    shapes = ["box", "box", "think", "text", "bare"]
    for index, (category, gold, answer, label, note) in enumerate(SPECS):
        picked = list(dict.fromkeys(rng.sample(shapes, 2)))
        if len(picked) == 1:
            picked.append("think")
        for shape in picked:
            cases.append(
                {
                    "id": f"{category}-{index:03d}-{shape}",
                    "task": "math",
                    "response": wrap(rng, answer, shape),
                    "reference": gold,
                    "label": label,
                    "category": category,
                    "note": f"{note} [{shape}]",
                }
            )
    structural(rng)
    for index, (category, gold, response, label, note) in enumerate(RAW):
        cases.append(
            {
                "id": f"{category}-s{index:03d}",
                "task": "math",
                "response": response,
                "reference": gold,
                "label": label,
                "category": category,
                "note": note,
            }
        )
    with OUT.open("w", encoding="utf-8") as handle:
        for case in cases:
            handle.write(json.dumps(case, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
