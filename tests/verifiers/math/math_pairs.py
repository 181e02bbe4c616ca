"""A model of math answers that knows nothing of the verifier's rules: labelled (gold, response) pairs.

A value of some gold type is drawn at random (integers including big ones, rationals, decimals, radicals,
pi-expressions, expressions in named and subscripted variables, equations, inequalities including
chains, intervals, tuples, sets, matrices, complex numbers, percents, clock times, option letters). The
gold is written one way; the response writes the same value another way (a *rendering*: LaTeX variants,
plain text, unicode, thousands separators, `\\$`, units) inside a realistic chain of thought (boxed,
cued, after `</think>`), and must be accepted; or it writes a *near-miss* of the value (a mutation: an
exponent regrouped, a variable renamed, +-1 on a big integer, ...), and must be rejected.

Values and their equivalent forms come from sympy (`sympy.latex`, exact arithmetic), never from
`assay.verifiers.math`. Used by tests/verifiers/math/test_math_generated.py (bounded, via hypothesis) and
benchmarks/math_fuzz.py (>= 20,000 pairs).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import sympy
from answer_styles import STYLED


@dataclass(frozen=True)
class Pair:
    gold: str
    response: str
    label: bool  # True: an equivalent rewrite; False: a near-miss
    kind: str  # the gold's type
    form: str  # the rendering (label True) or the mutation (label False)
    wrapper: str  # how the answer sits in the response
    prompt: str | None = None  # the question, where it decides (answer_styles.py)


# (gold, [(rendering name, text)], [(mutation name, text)])
Drawn = tuple[str, list[tuple[str, str]], list[tuple[str, str]]]

_FILLER = [
    "Let me set up the problem carefully and write down what we know.",
    "First, we compute the intermediate quantity: {a} + {b} = {c}.",
    "Substituting the given values, we get {a} \\cdot {b} = {d}, which we will use below.",
    "Wait, let me double-check that step. Multiplying both sides by {a} gives {d}.",
    "Consider the case $n = {a}$: then the expression equals ${c}$, which is consistent.",
    "By the formula $S = \\frac{{n(n+1)}}{{2}}$ with $n = {b}$, we get $S = {e}$.",
    "Hmm, that does not look right; going back, the difference is {c} - {b} = {a}.",
]


def _filler(rng: random.Random, sentences: int) -> str:
    lines = []
    for _ in range(sentences):
        a, b = rng.randint(2, 60), rng.randint(2, 60)
        line = rng.choice(_FILLER).format(a=a, b=b, c=a + b, d=a * b, e=b * (b + 1) // 2)
        lines.append(line)
    return "\n\n".join(" ".join(lines[i : i + 2]) for i in range(0, len(lines), 2))


def wrap(rng: random.Random, answer: str) -> tuple[str, str]:
    """A response that ends with `answer` in one of the ways models write a final answer."""
    thinking = _filler(rng, rng.randint(2, 6))
    plain = bool(re.fullmatch(r"-?[\d,]+(?:\.\d+)?", answer))  # a plain number, as GSM8K writes one
    style = rng.choice(
        [
            *("boxed", "boxed-dollars", "cue", "final-answer", "think-boxed", "think-cue", "bold"),
            *("inline-boxed", "answer-line", "concluding-formula", "think-bare", "chat-tail", "plain-line"),
            "box-tokens",
            "answer-tag",
            *(("gsm8k",) if plain else ()),
        ]
    )
    if style == "gsm8k" or (style == "plain-line" and not plain):
        return (
            "gsm8k",
            f"{thinking}\n\n#### {answer}" if plain else f"{thinking}\n\nThe answer is ${answer}$.",
        )
    if style == "plain-line":
        return style, f"{thinking}\n\nSo the final answer is {answer}."
    if style == "answer-tag":  # R1-style format
        return style, f"<think>\n{thinking}\n</think>\n<answer>{answer}</answer>"
    if style == "box-tokens":  # GLM-4.1V/4.5V's answer box
        return style, f"<think>\n{thinking}\n</think>\n<|begin_of_box|>{answer}<|end_of_box|>"
    if style == "inline-boxed":
        return style, f"{thinking}\n\nHence the required value is \\(\\boxed{{{answer}}}\\)."
    if style == "answer-line":
        return style, f"{thinking}\n\nAnswer: ${answer}$"
    if style == "concluding-formula":
        return style, f"{thinking}\n\nTherefore, the value we want is ${answer}$."
    if style == "think-bare":
        return style, f"<think>\n{thinking}\n</think>\n\n${answer}$"
    if style == "chat-tail":
        tail = "<|im_end|>\n<|im_start|>user\nNow solve the next problem: what is 2 +"
        return style, f"{thinking}\n\nThe final answer is $\\boxed{{{answer}}}$.{tail}"
    if style == "boxed":
        return style, f"{thinking}\n\nTherefore, the answer is \\boxed{{{answer}}}."
    if style == "boxed-dollars":
        return style, f"{thinking}\n\nPutting everything together:\n\n$$\\boxed{{{answer}}}$$"
    if style == "cue":
        return style, f"{thinking}\n\nThe answer is ${answer}$."
    if style == "final-answer":
        return style, f"{thinking}\n\nFinal Answer: The final answer is ${answer}$. I hope it is correct."
    if style == "think-boxed":
        return style, f"<think>\n{thinking}\n</think>\n\nSo the final answer is $\\boxed{{{answer}}}$."
    if style == "think-cue":
        return style, f"<think>\n{thinking}\n</think>\n\n**Final Answer**\n\n$${answer}$$"
    return style, f"{thinking}\n\n**Final Answer:** ${answer}$"


def _thousands(n: int, sep: str) -> str:
    return f"{n:,}".replace(",", sep)


def power_of_ten(rng: random.Random) -> Drawn:
    """A big integer near a power of ten, written as a power: exactness is the point."""
    k, d = rng.randint(12, 40), rng.choice([1, -1, 7])
    n = 10**k + d
    gold = str(n)
    forms = [("power-form", f"10^{{{k}}} {'+' if d > 0 else '-'} {abs(d)}"), ("plain", str(n))]
    mutations = [
        ("power-only", f"10^{{{k}}}"),
        ("plus-one", f"10^{{{k}}} {'+' if d + 1 > 0 else '-'} {abs(d + 1)}"),
    ]
    return gold, forms, mutations


def integer(rng: random.Random) -> Drawn:
    n = rng.choice([rng.randint(-999, 999), rng.randint(10**4, 10**7), rng.randint(10**15, 10**24)])
    forms = [("plain", str(n)), ("text-wrapper", f"\\text{{{n}}}")]
    if n >= 1000:
        forms += [("thousands-comma", _thousands(n, ",")), ("thousands-latex", _thousands(n, "{,}"))]
        forms += [("thousands-thin", _thousands(n, "\\,")), ("thousands-bang", _thousands(n, ",\\!"))]
    if 0 < n < 10**6:
        forms += [("dollar", f"\\${n}"), ("unit-text", f"{n} \\text{{ apples}}")]
    if n < 0:
        forms.append(("unicode-minus", f"−{-n}"))
    if n >= 1000:
        forms.append(("dollar-thousands", "\\$" + _thousands(n, ",")))
    forms.append(("trailing-period", f"{n}."))
    forms.append(("named", f"x = {n}"))
    if n >= 10**4 and n % 1000 == 0:
        forms.append(("scientific", f"{n // 1000} \\times 10^{{3}}"))
    mutations = [("plus-one", str(n + 1)), ("minus-one", str(n - 1)), ("times-ten", str(10 * n or 10))]
    if n != 0:
        mutations.append(("sign-flip", str(-n)))
    return str(n), forms, mutations


def rational(rng: random.Random) -> Drawn:
    value = Fraction(rng.choice([-1, 1]) * rng.randint(1, 99), rng.randint(2, 60))
    while value.denominator == 1:
        value += Fraction(1, 7)
    p, q = value.numerator, value.denominator
    sign, ap = ("-" if p < 0 else ""), abs(p)
    gold = f"{sign}\\frac{{{ap}}}{{{q}}}"
    forms = [
        ("dfrac", f"{sign}\\dfrac{{{ap}}}{{{q}}}"),
        ("slash", f"{p}/{q}"),
        ("left-right", f"\\left({gold}\\right)"),
        ("unreduced", f"{sign}\\frac{{{2 * ap}}}{{{2 * q}}}"),
    ]
    if all(f in (2, 5) for f in sympy.factorint(q)):
        forms.append(("exact-decimal", str(sympy.Rational(p, q).evalf(30)).rstrip("0")))
    else:
        forms.append(("tfrac", f"{sign}\\tfrac{{{ap}}}{{{q}}}"))
        if q in (3, 9, 11) and abs(value) < 1:
            digits = str(sympy.Rational(abs(p), q).evalf(12))[2:]
            cycle = digits[: {3: 1, 9: 1, 11: 2}[q]]
            forms.append(("repeating-decimal", f"{sign}0.\\overline{{{cycle}}}"))
    rounded = round(p / q, 3)
    mutations = [
        ("sign-flip", f"{'' if sign else '-'}\\frac{{{ap}}}{{{q}}}"),
        ("reciprocal", f"\\frac{{{q}}}{{{p}}}"),
        ("numerator-plus-one", f"{sign}\\frac{{{ap + 1}}}{{{q}}}"),
    ]
    forms.append(("minus-in-numerator", f"\\frac{{{p}}}{{{q}}}"))
    if Fraction(str(rounded)) != value:
        mutations.append(("rounded-decimal", f"{rounded}"))
    return gold, forms, mutations


def decimal(rng: random.Random) -> Drawn:
    places = rng.randint(1, 3)
    value = Fraction(rng.randint(1, 10**6), 10**places)
    text = f"{float(value):.{places}f}"
    step = Fraction(1, 10**places)
    forms = [("plain", text), ("trailing-zero", text + "0"), ("dollar", f"\\${text}")]
    if value >= 1000:
        forms.append(("thousands-comma", f"{float(value):,.{places}f}"))
    mutations = [("last-digit-plus-one", f"{float(value + step):.{places}f}"), ("sign-flip", f"-{text}")]
    if places >= 2 and text[-1] != "0":
        mutations.append(("rounded", f"{float(value):.{places - 1}f}"))
    return text, forms, mutations


def radical(rng: random.Random) -> Drawn:
    a, b = rng.randint(2, 12), rng.choice([2, 3, 5, 6, 7, 10, 11, 13, 14, 15])
    gold = f"{a}\\sqrt{{{b}}}"
    forms = [
        ("sqrt-nested", f"\\sqrt{{{a * a * b}}}"),
        ("plain-text", f"{a}*sqrt({b})"),
        ("cdot", f"{a} \\cdot \\sqrt{{{b}}}"),
    ]
    if b < 10:
        forms.append(("sqrt-no-braces", f"{a}\\sqrt{b}"))
    mutations = [
        ("radicand-plus-one", f"{a}\\sqrt{{{b + 1}}}"),
        ("coefficient-plus-one", f"{a + 1}\\sqrt{{{b}}}"),
        ("coefficient-inside", f"\\sqrt{{{a * b}}}"),
        ("rounded-decimal", f"{a * b**0.5:.2f}"),
    ]
    forms.append(("unicode", f"{a}√{b}"))
    forms.append(("sqrt-first", f"\\sqrt{{{b}}} \\cdot {a}"))
    return gold, forms, mutations


def pi_expression(rng: random.Random) -> Drawn:
    a, b = rng.randint(1, 9), rng.randint(2, 9)
    if sympy.gcd(a, b) != 1:
        a += 1 if sympy.gcd(a + 1, b) == 1 else 0
    expr = sympy.Rational(a, b) * sympy.pi
    gold = sympy.latex(expr)
    forms = [
        ("frac-after", f"\\frac{{{a}}}{{{b}}}\\pi"),
        ("plain-text", f"{a}*pi/{b}"),
        ("unicode", f"{a}π/{b}"),
        ("dfrac", f"\\dfrac{{{a}\\pi}}{{{b}}}"),
    ]
    mutations = [
        ("numerator-plus-one", sympy.latex(sympy.Rational(a + 1, b) * sympy.pi)),
        ("sign-flip", sympy.latex(-expr)),
        ("pi-dropped", f"\\frac{{{a}}}{{{b}}}"),
        ("rounded-decimal", f"{float(expr):.2f}"),
    ]
    return gold, forms, mutations


_NAMES = ["x", "y", "t", "n", "a_{1}", "a_{2}", "b_{3}"]


def _plain(expr: sympy.Expr) -> str:
    return str(expr).replace("**", "^")


def expression(rng: random.Random) -> Drawn:
    names = rng.sample(_NAMES, 2)
    u, v = sympy.symbols(names)
    c = [rng.choice([-1, 1]) * rng.randint(1, 9) for _ in range(3)]
    expr = c[0] * u**2 + c[1] * u * v + c[2]
    gold = sympy.latex(expr)
    forms = [
        ("reordered", sympy.latex(sympy.Add(*reversed(expr.as_ordered_terms()), evaluate=False))),
        ("plain-text", _plain(expr)),
        ("python-syntax", str(expr)),  # sympy's own printing: "3*x**2 + x*y - 4"
        ("factored-out", sympy.latex(sympy.factor(expr)) if sympy.factor(expr) != expr else _plain(expr)),
    ]
    others = [n for n in _NAMES if n not in names]
    w = sympy.Symbol(rng.choice(others))
    mutations = [
        ("rename-variable", sympy.latex(expr.xreplace({u: w}))),
        ("coefficient-plus-one", sympy.latex(expr + u**2)),
        ("sign-flip", sympy.latex(expr - 2 * c[2])),
        ("exponent-changed", sympy.latex(expr - c[0] * u**2 + c[0] * u**3)),
        ("term-dropped", sympy.latex(expr - c[2])),
    ]
    swapped = expr.xreplace({u: v, v: u})  # xreplace swaps simultaneously
    if sympy.expand(swapped - expr) != 0:
        mutations.append(("swap-variables", sympy.latex(swapped)))
    k = rng.randint(2, 5)
    if rng.random() < 0.5:  # an exponent whose braces group a product
        gold = f"{names[0]}^{{{k}{names[1]}}}"
        forms = [
            ("spaced", f"{names[0]}^{{{k} {names[1]}}}"),
            ("cdot", f"{names[0]}^{{{k} \\cdot {names[1]}}}"),
        ]
        mutations = [
            ("regroup-exponent", f"{names[0]}^{k} {names[1]}"),
            ("python-power-regrouped", f"{names[0]}**{k}*{names[1]}"),
            ("rename-variable", f"{w}^{{{k}{names[1]}}}"),
        ]
    return gold, forms, mutations


def equation(rng: random.Random) -> Drawn:
    m, c = rng.choice([-1, 1]) * rng.randint(1, 9), rng.randint(1, 9)
    gold = f"y = {m}x + {c}"
    forms = [
        ("no-spaces", f"y={m}x+{c}"),
        ("sides-swapped", f"{m}x + {c} = y"),
        ("reordered", f"y = {c} + {m}x"),
    ]
    mutations = [
        ("slope-plus-one", f"y = {m + 1}x + {c}"),
        ("rename-variable", f"y = {m}t + {c}"),
        ("intercept-sign", f"y = {m}x - {c}"),
    ]
    if m != -1:  # y = -x + c and x = -y + c are the same line
        mutations.append(("swap-variables", f"x = {m}y + {c}"))
    return gold, forms, mutations


def inequality(rng: random.Random) -> Drawn:
    a = rng.randint(-20, 20)
    b = a + rng.randint(1, 20)
    if rng.random() < 0.5:
        strict = rng.random() < 0.5
        op, other = ("<", "\\le") if strict else ("\\le", "<")
        gold = f"x {op} {a}"
        end = ")" if strict else "]"
        forms = [
            ("interval", f"(-\\infty, {a}{end}"),
            ("reversed", f"{a} {op.replace('<', '>').replace('le', 'ge')} x"),
        ]
        forms.append(("set-builder-in", f"x \\in \\left(-\\infty, {a}\\right{end}"))
        forms.append(("unicode", f"x {'<' if strict else '≤'} {a}"))
        flipped = ">" if strict else "\\ge"
        mutations = [
            ("strictness", f"x {other} {a}"),
            ("direction", f"x {flipped} {a}"),
            ("rename-variable", f"y {op} {a}"),
        ]
        return gold, forms, mutations
    gold = f"{a} < x \\le {b}"
    forms = [
        ("interval", f"({a}, {b}]"),
        ("leq", f"{a} < x \\leq {b}"),
        ("left-right", f"\\left({a}, {b}\\right]"),
    ]
    mutations = [
        ("strictness", f"{a} \\le x \\le {b}"),
        ("chain-middle", f"{a} < y \\le {b}"),
        ("bound-plus-one", f"{a} < x \\le {b + 1}"),
    ]
    return gold, forms, mutations


def interval(rng: random.Random) -> Drawn:
    a = rng.randint(-20, 20)
    b = a + rng.randint(1, 20)
    left, right = rng.choice("(["), rng.choice(")]")
    gold = f"{left}{a}, {b}{right}"
    flip = {"(": "[", "[": "(", ")": "]", "]": ")"}
    forms = [
        ("left-right", f"\\left{left}{a}, {b}\\right{right}"),
        ("no-space", f"{left}{a},{b}{right}"),
        ("in-interval", f"x \\in {left}{a}, {b}{right}"),
    ]
    mutations = [
        ("open-closed-left", f"{flip[left]}{a}, {b}{right}"),
        ("open-closed-right", f"{left}{a}, {b}{flip[right]}"),
    ]
    return gold, forms, mutations


def tuple_(rng: random.Random) -> Drawn:
    items = [rng.randint(-9, 9) for _ in range(rng.randint(2, 4))]
    while items == items[::-1]:
        items[0] += 1
    text = ", ".join(map(str, items))
    gold = f"({text})"
    forms = [("left-right", f"\\left({text}\\right)"), ("no-spaces", f"({','.join(map(str, items))})")]
    bumped = [*items[:-1], items[-1] + 1]
    forms.append(("named-pair", f"(x_1, x_2) = ({text})" if len(items) == 2 else f"({text})"))
    mutations = [
        ("as-a-set", "\\{" + text + "\\}"),
        ("reversed", f"({', '.join(map(str, items[::-1]))})"),
        ("component-plus-one", f"({', '.join(map(str, bumped))})"),
    ]
    return gold, forms, mutations


def set_(rng: random.Random) -> Drawn:
    items = rng.sample(range(-20, 21), rng.randint(2, 4))
    gold = "\\{" + ", ".join(map(str, items)) + "\\}"
    shuffled = items[:]
    rng.shuffle(shuffled)
    forms = [
        ("permuted", "\\{" + ", ".join(map(str, shuffled)) + "\\}"),
        ("left-right", "\\left\\{" + ", ".join(map(str, items)) + "\\right\\}"),
    ]
    forms.append(("bare-list", ", ".join(map(str, shuffled))))
    extra = max(items) + 1
    flipped = [-items[0] if items[0] else 21, *items[1:]]
    mutations = [
        ("element-sign-flip", "\\{" + ", ".join(map(str, flipped)) + "\\}"),
        ("subset", "\\{" + ", ".join(map(str, items[:-1])) + "\\}"),
        ("superset", "\\{" + ", ".join(map(str, [*items, extra])) + "\\}"),
    ]
    return gold, forms, mutations


def matrix(rng: random.Random) -> Drawn:
    m = sympy.Matrix(2, 2, [rng.randint(-9, 9) for _ in range(4)])
    while m == m.T:
        m[0, 1] += 1

    def body(mat: sympy.Matrix) -> str:
        return " \\\\ ".join(" & ".join(str(x) for x in mat.row(i)) for i in range(mat.rows))

    gold = f"\\begin{{pmatrix}} {body(m)} \\end{{pmatrix}}"
    forms = [
        ("bmatrix", f"\\begin{{bmatrix}} {body(m)} \\end{{bmatrix}}"),
        ("array", f"\\left[\\begin{{array}}{{cc}} {body(m)} \\end{{array}}\\right]"),
    ]
    bumped = m.copy()
    bumped[1, 1] += 1
    mutations = [
        ("transpose", f"\\begin{{pmatrix}} {body(m.T)} \\end{{pmatrix}}"),
        ("entry-plus-one", f"\\begin{{pmatrix}} {body(bumped)} \\end{{pmatrix}}"),
    ]
    return gold, forms, mutations


def complex_(rng: random.Random) -> Drawn:
    a, b = rng.randint(-9, 9), rng.randint(1, 9)
    gold = f"{a} + {b}i"
    forms = [("imaginary-first", f"{b}i + {a}"), ("no-spaces", f"{a}+{b}i"), ("cdot", f"{a} + {b} \\cdot i")]
    forms.append(("parenthesised", f"({a}+{b}i)"))
    mutations = [("conjugate", f"{a} - {b}i"), ("real-part-plus-one", f"{a + 1} + {b}i")]
    if a != b:
        mutations.append(("parts-swapped", f"{b} + {a}i"))
    return gold, forms, mutations


def percent(rng: random.Random) -> Drawn:
    p = rng.randint(1, 99)
    gold = f"{p}\\%"
    forms = [("plain-percent", f"{p}%"), ("word", f"{p} \\text{{ percent}}"), ("spaced", f"{p} \\%")]
    forms.append(("thin-space", f"{p}\\,\\%"))
    mutations = [("plus-one", f"{p + 1}\\%"), ("times-ten", f"{10 * p}\\%")]
    return gold, forms, mutations


def clock(rng: random.Random) -> Drawn:
    h, m = rng.randint(1, 12), rng.choice([0, 15, 30, 45, rng.randint(0, 59)])
    gold = f"{h}:{m:02d}"
    forms = [("text-wrapper", f"\\text{{{h}:{m:02d}}}")]
    other = (h % 12) + 1
    mutations = [("another-hour", f"{other}:{m:02d}"), ("another-minute", f"{h}:{(m + 1) % 60:02d}")]
    return gold, forms, mutations


def letter(rng: random.Random) -> Drawn:
    options = "ABCDE"
    choice = rng.choice(options)
    gold = choice
    forms = [
        ("parenthesised", f"({choice})"),
        ("text-wrapper", f"\\text{{{choice}}}"),
        ("bold-text", f"\\textbf{{({choice})}}"),
    ]
    mutations = [("another-letter", rng.choice([o for o in options if o != choice]))]
    return gold, forms, mutations


KINDS: dict[str, Callable[[random.Random], Drawn]] = {
    "integer": integer,
    "power-of-ten": power_of_ten,
    "rational": rational,
    "decimal": decimal,
    "radical": radical,
    "pi": pi_expression,
    "expression": expression,
    "equation": equation,
    "inequality": inequality,
    "interval": interval,
    "tuple": tuple_,
    "set": set_,
    "matrix": matrix,
    "complex": complex_,
    "percent": percent,
    "clock": clock,
    "letter": letter,
}


def _styled(rng: random.Random, label: bool) -> Pair:
    """A pair of answer_styles.py: a whole response written in one of the styles policies use."""
    kind = rng.choice(sorted(STYLED))
    gold, forms, mutations, prompt = STYLED[kind](rng, _filler(rng, rng.randint(1, 4)))
    form, response = rng.choice(forms if label else mutations)
    return Pair(gold, response, label, kind, form, "as-written", prompt)


def _revised(rng: random.Random, answer: str, wrong: str, label: bool) -> tuple[str, str]:
    """A response that boxes one value and then explicitly corrects it, or that checks its answer in a
    closing paragraph whose number is not the answer."""
    thinking = _filler(rng, rng.randint(2, 4))
    if rng.random() < 0.5:
        first, last = (wrong, answer) if label else (answer, wrong)
        return (
            "correction",
            f"{thinking}\n\nSo the answer is $\boxed{{{first}}}$.\n\nCorrecting, the answer is ${last}$.",
        )
    check = rng.randint(2, 99)
    said = answer if label else wrong
    return (
        "check-after",
        f"{thinking}\n\nTherefore, the answer is ${said}$.\n\nCheck: substituting back gives {check}.",
    )


def draw(rng: random.Random, label: bool | None = None) -> Pair:
    """One labelled pair: a rewrite (label True) or a near-miss (False), of a random gold type."""
    label = rng.random() < 0.5 if label is None else label
    if rng.random() < 0.3:
        return _styled(rng, label)
    kind = rng.choice(sorted(KINDS))
    gold, forms, mutations = KINDS[kind](rng)
    if rng.random() < 0.1:  # a correction after a box, or a check after the answer
        wrapper, response = _revised(rng, rng.choice(forms)[1], rng.choice(mutations)[1], label)
        return Pair(gold, response, label, kind, "revised", wrapper)
    if not label and rng.random() < 0.15:  # a hedge: the right value and a near-miss, both offered
        right, wrong = rng.choice(forms)[1], rng.choice(mutations)[1]
        wrapper, response = wrap(rng, right)
        head, found, tail = response.rpartition(right)  # the final answer: the last occurrence
        second = f"}} \\text{{ or }} \\boxed{{{wrong}" if "boxed" in wrapper else f"$ or maybe ${wrong}"
        response = head + found + second + tail if found else response
        return Pair(gold, response, False, kind, "hedge", wrapper)
    form, answer = rng.choice(forms if label else mutations)
    wrapper, response = wrap(rng, answer)
    return Pair(gold, response, label, kind, form, wrapper)
