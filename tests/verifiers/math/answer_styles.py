"""More of the model of answers behind math_pairs.py: how policies write a final answer without a box
(issue 30), as whole responses, with the prompt where the prompt decides. Written from how people and
models write, knowing nothing of the verifier's rules or its cue table (assay.verifiers.math.cues).

Each kind returns (gold, renderings, near-misses, prompt); a rendering or near-miss is a whole response
(name, text). Near-misses include sentences that open with a letter-like word against a gold letter, a
wrong letter, a hedge listing several letters or several numbers, a different time, the complement of a
different interval, a different decimal, and a response that only restates its prompt.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import sympy

Styled = tuple[str, list[tuple[str, str]], list[tuple[str, str]], str | None]

# How a final answer is stated in a language, with its word for "or" (written for this model).
_STATEMENTS: dict[str, tuple[tuple[str, ...], str]] = {
    "zh": (("因此，答案是 {n}。", "答案：{n}", "最终答案为 {n}。", "所以答案是{n}。"), "或"),
    "ja": (("したがって、答えは {n} です。", "答え：{n}", "よって答えは{n}となります。"), "または"),
    "ko": (("따라서 정답은 {n}입니다.", "답: {n}", "그러므로 답은 {n}이다."), "또는"),
    "de": (
        ("Die Antwort ist {n}.", "Also ist die Antwort {n}.", "Antwort: {n}", "Das Ergebnis ist {n}."),
        "oder",
    ),
    "fr": (("La réponse est {n}.", "Donc, la réponse finale est {n}.", "Réponse : {n}"), "ou"),
    "es": (("La respuesta es {n}.", "Por lo tanto, la respuesta es {n}.", "Respuesta: {n}"), "o"),
    "ru": (("Ответ: {n}.", "Итак, ответ: {n}", "Правильный ответ — {n}."), "или"),
    "pt": (("A resposta é {n}.", "Portanto, a resposta é {n}.", "Resposta: {n}"), "ou"),
    "it": (("La risposta è {n}.", "Quindi la risposta è {n}.", "Risposta: {n}"), "o"),
    "ar": (("الإجابة هي {n}.", "الجواب: {n}"), "أو"),
    "hi": (("उत्तर: {n}", "अतः उत्तर {n} है।"), "या"),
    "tr": (("Cevap: {n}", "Doğru cevap {n}'dir."), "veya"),
    "vi": (("Đáp án là {n}.", "Vậy đáp án: {n}"), "hoặc"),
    "id": (("Jadi, jawabannya adalah {n}.", "Jawaban: {n}"), "atau"),
    "pl": (("Odpowiedź: {n}", "Zatem odpowiedź to {n}."), "lub"),
    "nl": (("Het antwoord is {n}.", "Dus het antwoord is {n}."), "of"),
    "sv": (("Svaret är {n}.", "Svar: {n}"), "eller"),
    "uk": (("Відповідь: {n}.",), "або"),
    "cs": (("Odpověď je {n}.", "Odpověď: {n}"), "nebo"),
}


def multilingual(rng: random.Random, thinking: str) -> Styled:
    """A number stated in another language, no box."""
    n = rng.randint(2, 999)
    code = rng.choice(sorted(_STATEMENTS))
    statements, or_word = _STATEMENTS[code]
    said = rng.choice(statements)
    forms = [(f"{code}", f"{thinking}\n\n{said.format(n=n)}")]
    mutations = [
        (f"{code}-another-number", f"{thinking}\n\n{said.format(n=n + 1)}"),
        (f"{code}-hedge", f"{thinking}\n\n{said.format(n=f'{n} {or_word} {n + 1}')}"),
    ]
    return str(n), forms, mutations, None


def letter_word(rng: random.Random, thinking: str) -> Styled:
    """A short answer whose first word is "I" or "A" (a pronoun or an article, not an option)."""
    n = rng.randint(2, 500)
    openers = ["I think it is {n}.", "I guess {n}.", "A total of {n}.", "I'd say {n}.", "I believe it's {n}."]
    said = rng.choice(openers)
    forms = [("short-sentence", said.format(n=n))]
    mutations = [("another-number", said.format(n=n + 1))]
    return str(n), forms, mutations, None


def letter_word_for_a_letter(rng: random.Random, thinking: str) -> Styled:
    """Gold "A" or "I": a sentence that merely opens with that word chooses nothing."""
    n = rng.randint(2, 500)
    gold = rng.choice("AI")
    said = f"A total of {n}." if gold == "A" else f"I think it is {n}."
    forms = [("letter-in-prose", f"{thinking}\n\nSo the correct option is ({gold}).")]
    return gold, forms, [("sentence-opening-with-the-letter", said)], None


def choice_prose(rng: random.Random, thinking: str) -> Styled:
    """An option letter stated in prose or in another language."""
    gold = rng.choice("ABCDE")
    others = [o for o in "ABCDE" if o != gold]
    rng.shuffle(others)
    wrong = others[0]
    phrasings = [
        "The answer is ({L}).",
        "({L}) is correct.",
        "It can't be {X} or {Y}, so {L}.",
        "答案: {L}",
        "Die richtige Antwort ist {L}.",
        "La bonne réponse est ({L}).",
        "So I would go with option {L}.",
        "La respuesta correcta es la {L}.",
        "Therefore, the correct option is {L}: 24.",
    ]
    said = rng.choice(phrasings)
    forms = [("prose", f"{thinking}\n\n{said.format(L=gold, X=others[1], Y=others[2])}")]
    mutations = [
        ("wrong-letter", f"{thinking}\n\n{said.format(L=wrong, X=gold, Y=others[1])}"),
        ("hedge-letters", f"{thinking}\n\nIt is either {gold} or {wrong}."),
        ("hedge-letters-listed", f"{thinking}\n\nThe answer is ({gold}) or ({wrong})."),
    ]
    return gold, forms, mutations, None


def choice_from_options(rng: random.Random, thinking: str) -> Styled:
    """A letter answering a gold written as the option's value; the prompt lists the options."""
    values = rng.sample(range(2, 99), 4)
    letters = "ABCD"
    index = rng.randrange(4)
    prompt = "Which value is right?\n" + "\n".join(
        f"({ch}) {v}" for ch, v in zip(letters, values, strict=True)
    )
    wrong = (index + 1) % 4
    forms = [("letter-for-value", f"{thinking}\n\nThe answer is ({letters[index]}).")]
    mutations = [("another-letter", f"{thinking}\n\nThe answer is ({letters[wrong]}).")]
    return str(values[index]), forms, mutations, prompt


def clock_24(rng: random.Random, thinking: str) -> Styled:
    """An afternoon time, in 24-hour and 12-hour forms."""
    h12, m = rng.randint(1, 11), rng.randint(0, 58)
    h24 = h12 + 12
    gold = f"{h24}:{m:02d}"
    renderings = [f"{h24}:{m:02d}:00", f"{h12}:{m:02d} PM", f"{h12}:{m:02d} p.m.", f"{h12}:{m:02d}pm"]
    said = rng.choice(renderings)
    forms = [("clock-form", f"{thinking}\n\nThe meeting ends at {said}{'' if said.endswith('.') else '.'}")]
    mutations = [
        ("morning", f"{thinking}\n\nThe meeting ends at {h12}:{m:02d} AM."),
        ("another-minute", f"{thinking}\n\nThe meeting ends at {h24}:{m + 1:02d}."),
        ("another-second", f"{thinking}\n\nThe answer is {h24}:{m:02d}:01."),
    ]
    return gold, forms, mutations, None


def complement(rng: random.Random, thinking: str) -> Styled:
    """The reals without an open interval, and its rays."""
    a = rng.randint(-9, 9)
    b = a + rng.randint(1, 9)
    gold = f"\\mathbb{{R}} \\setminus ({a}, {b})"
    rays = f"(-\\infty, {a}] \\cup [{b}, \\infty)"
    forms = [("rays", f"{thinking}\n\nSo the answer is $\\boxed{{{rays}}}$.")]
    mutations = [
        (
            "another-interval",
            f"{thinking}\n\nSo the answer is $\\boxed{{(-\\infty, {a}] \\cup [{b + 1}, \\infty)}}$.",
        ),
        ("ends-open", f"{thinking}\n\nSo the answer is $\\boxed{{(-\\infty, {a}) \\cup ({b}, \\infty)}}$."),
        ("the-interval", f"{thinking}\n\nSo the answer is $\\boxed{{({a}, {b})}}$."),
        (
            "complement-of-another",
            f"{thinking}\n\nSo the answer is $\\boxed{{\\mathbb{{R}} \\setminus ({a}, {b + 1})}}$.",
        ),
    ]
    return gold, forms, mutations, None


def percent_decimal(rng: random.Random, thinking: str) -> Styled:
    """A proportion answered as a percent."""
    p = rng.randint(1, 99)
    gold = str(sympy.Rational(p, 100).evalf(2 if p % 10 else 1)).rstrip("0").rstrip(".")
    forms = [("percent-of-decimal", f"{thinking}\n\nThe probability is $\\boxed{{{p}\\%}}$.")]
    mutations = [
        ("another-percent", f"{thinking}\n\nThe probability is $\\boxed{{{p + 1}\\%}}$."),
        ("tenth", f"{thinking}\n\nThe probability is $\\boxed{{{p / 10:g}\\%}}$."),
    ]
    return gold, forms, mutations, None


def percent_of_count(rng: random.Random, thinking: str) -> Styled:
    """A count answered with a percent sign: right only when the question asks for a percent."""
    n = rng.randint(2, 99)
    asks = rng.random() < 0.5
    prompt = (
        f"Out of 100 seats, {n} are taken. What percent of the seats are taken?"
        if asks
        else f"A bus has 100 seats and {n} are taken. How many seats are taken?"
    )
    response = f"{thinking}\n\nThe answer is $\\boxed{{{n}\\%}}$."
    if asks:
        return (
            str(n),
            [("percent-asked", response)],
            [("another-percent", response.replace(f"{{{n}", f"{{{n + 1}"))],
            prompt,
        )
    return (
        str(n),
        [("count", f"{thinking}\n\nThe answer is $\\boxed{{{n}}}$.")],
        [("percent-not-asked", response)],
        prompt,
    )


def decimal_comma(rng: random.Random, thinking: str) -> Styled:
    """A decimal written with a comma where only a decimal reads so, or where the prompt writes so."""
    shape = rng.choice(["long", "zero", "prompt"])
    if shape == "long":
        whole, cents = rng.randint(1000, 99999), rng.randint(10, 99)
        gold, said, near = (
            f"{whole}.{cents}",
            f"{whole},{cents}",
            f"{whole},{cents + 1 if cents < 99 else 10}",
        )
        prompt = None
    elif shape == "zero":
        digits = rng.randint(100, 998)
        gold, said, near, prompt = f"0.{digits}", f"0,{digits}", f"0,{digits + 1}", None
    else:
        a, b = rng.randint(2, 9), rng.randint(1, 9)
        gold, said, near = f"{a}.{b}", f"{a},{b}", f"{a},{b + 1 if b < 9 else 1}"
        prompt = f"Un sac pèse {a + 1},{b} kg. On enlève 1,0 kg. Combien pèse le sac ?"
    forms = [("comma", f"{thinking}\n\nThe answer is {said}.")]
    return gold, forms, [("another-decimal", f"{thinking}\n\nThe answer is {near}.")], prompt


def restated(rng: random.Random, thinking: str) -> Styled:
    """A word problem whose answer is one of its own numbers: worked, or only restated."""
    name = rng.choice(["Tom", "Ana", "Li", "Sara"])
    n, k = rng.randint(5, 40), rng.randint(2, 9)
    prompt = (
        f"{name} has {n} marbles. {name} gives away {k} marbles and then finds {k} marbles. "
        f"How many marbles does {name} have now?"
    )
    worked = (
        f"{name} starts with {n}. After giving away {k}, {name} has {n} - {k} = {n - k}. "
        f"After finding {k}, {name} has {n - k} + {k} = {n}.\n\nThe answer is $\\boxed{{{n}}}$."
    )
    copy = f"{prompt}\n\nThe answer is $\\boxed{{{n}}}$."
    return str(n), [("worked", worked)], [("restates-the-prompt", copy)], prompt


def trig_degrees(rng: random.Random, thinking: str) -> Styled:
    """A trigonometric value with its angle in degrees."""
    angles = [30, 45, 60, 90, 120, 135, 150]
    angle = rng.choice(angles)
    value = sympy.sin(sympy.rad(angle))
    other = next(a for a in angles if sympy.sin(sympy.rad(a)) != value)
    forms = [("sine-in-degrees", f"{thinking}\n\nSo the value is $\\boxed{{\\sin {angle}^\\circ}}$.")]
    mutations = [("another-angle", f"{thinking}\n\nSo the value is $\\boxed{{\\sin({other}^{{\\circ}})}}$.")]
    return sympy.latex(value), forms, mutations, None


def matrix_sum(rng: random.Random, thinking: str) -> Styled:
    """A matrix answered as the sum that gives it, or a product with the identity."""
    m = sympy.Matrix(2, 2, [rng.randint(-9, 9) for _ in range(4)])
    n = sympy.Matrix(2, 2, [rng.randint(-9, 9) for _ in range(4)])

    def pm(mat: sympy.Matrix) -> str:
        rows = " \\\\ ".join(" & ".join(str(x) for x in mat.row(i)) for i in range(2))
        return f"\\begin{{pmatrix}} {rows} \\end{{pmatrix}}"

    gold = pm(m)
    forms = [
        ("sum", f"{thinking}\n\nThe result is $\\boxed{{{pm(m - n)} + {pm(n)}}}$."),
        ("identity-product", f"{thinking}\n\nThe result is $\\boxed{{{pm(sympy.eye(2))} {pm(m)}}}$."),
    ]
    bumped = m.copy()
    bumped[0, 0] += 1
    mutations = [("wrong-sum", f"{thinking}\n\nThe result is $\\boxed{{{pm(bumped - n)} + {pm(n)}}}$.")]
    if m[:, 0] != m[:, 1]:
        swapped = m[:, [1, 0]]
        mutations.append(("columns-swapped", f"{thinking}\n\nThe result is $\\boxed{{{pm(swapped)}}}$."))
    return gold, forms, mutations, None


def stray_backslash(rng: random.Random, thinking: str) -> Styled:
    """A gold copied with a stray trailing backslash."""
    n = rng.randint(2, 999)
    forms = [("plain", f"{thinking}\n\nThe answer is $\\boxed{{{n}}}$.")]
    return f"{n}\\", forms, [("another-number", f"{thinking}\n\nThe answer is $\\boxed{{{n + 1}}}$.")], None


def choice_judged(rng: random.Random, thinking: str) -> Styled:
    """An option letter after an answer marker, bracketed or followed by a judgement of it or of another
    letter, as exam-style prompts ("ANSWER: [LETTER]") make policies write."""
    gold, wrong, third = rng.sample("ABCD", 3)
    reasons = ["energy is conserved", "it fits every condition", "the other options fail the check"]
    phrasings = [
        "ANSWER: [{L}]",
        "ANSWER: {L} is the correct choice",
        "Answer: {L} is correct.",
        "ANSWER: {L} - " + rng.choice(reasons),
        "ANSWER: {L} is correct, {X} is a distractor",
        "答案：{L}是正确的",
        "答案：{L}是正确的，{X}是干扰项",
    ]
    said = rng.choice(phrasings)
    forms = [("judged", f"{thinking}\n\n{said.format(L=gold, X=wrong)}")]
    mutations = [
        ("wrong-letter", f"{thinking}\n\n{said.format(L=wrong, X=gold)}"),
        ("other-judged-right", f"{thinking}\n\nANSWER: {gold} is wrong, {wrong} is correct"),
        ("distractor-named", f"{thinking}\n\nANSWER: {wrong} is correct, {gold} is a distractor"),
        ("hedge-judged", f"{thinking}\n\nANSWER: {gold} or {third} is correct"),
        ("hedge-bracketed", f"{thinking}\n\nANSWER: [{gold}] or [{wrong}]"),
        ("difference", f"{thinking}\n\nANSWER: ${gold} - x$"),
    ]
    return gold, forms, mutations, None


def gold_sentence(rng: random.Random, thinking: str) -> Styled:
    """A gold written as a sentence ("The answer is 33", "The number is 4."), as some graders' data is,
    answered in a box, on a line that opens "answer is", or after GSM8K's "####" inside a sentence."""
    n = rng.randint(2, 999)
    gold = rng.choice(
        [
            "The answer is {n}",
            "Answer: {n}",
            "The final answer is {n}.",
            "The number is {n}.",
            "Final answer: #### {n}",
        ]
    ).format(n=n)
    said = rng.choice(["So the answer is $\\boxed{{{n}}}$.", "answer is {n}", "The result is #### {n}"])
    forms = [("stated", f"{thinking}\n\n{said.format(n=n)}")]
    mutations = [("another-number", f"{thinking}\n\n{said.format(n=n + 1)}")]
    return gold, forms, mutations, None


def word_answer(rng: random.Random, thinking: str) -> Styled:
    """A name stated as the predicate of a last sentence; its negation or a second name is no answer."""
    gold, other = rng.sample(["Paris", "Lyon", "Alice", "Bob", "Mercury", "Venus", "Tuesday"], 2)
    subject = rng.choice(["The capital of the region is", "The winner is", "So the one we want is"])
    forms = [("predicate", f"{thinking}\n\n{subject} {gold}.")]
    mutations = [
        ("another-name", f"{thinking}\n\n{subject} {other}."),
        ("negated", f"{thinking}\n\n{subject} not {gold}."),
        ("two-names", f"{thinking}\n\n{subject} {gold} or {other}."),
    ]
    return gold, forms, mutations, None


def formula_then_values(rng: random.Random, thinking: str) -> Styled:
    """A formula stating the value, then a sentence: about the same value (still the answer), or offering
    other numbers (the answer is left open)."""
    n = rng.randint(2, 99)
    others = ", ".join(str(v) for v in rng.sample([v for v in range(1, 99) if v != n], 3))
    forms = [("same-value-after", f"{thinking}\n\nTherefore $x = {n}$. That is {n} apples.")]
    mutations = [
        ("other-values-after", f"{thinking}\n\nThe equation is $x = {n}$. Other numbers are {others}.")
    ]
    return str(n), forms, mutations, None


def root_index(rng: random.Random, thinking: str) -> Styled:
    """A root with an index and an unbraced one-character radicand (`\\sqrt[3]2`, as LaTeX allows)."""
    index, radicand = rng.choice([3, 4, 5]), rng.choice([2, 3, 5, 6, 7])
    gold = f"\\sqrt[{index}]{{{radicand}}}"
    forms = [("unbraced", f"{thinking}\n\nThe answer is $\\boxed{{\\sqrt[{index}]{radicand}}}$.")]
    mutations = [
        ("another-radicand", f"{thinking}\n\nThe answer is $\\boxed{{\\sqrt[{index}]{radicand + 1}}}$."),
        ("another-index", f"{thinking}\n\nThe answer is $\\boxed{{\\sqrt[{index + 1}]{radicand}}}$."),
        ("square-root", f"{thinking}\n\nThe answer is $\\boxed{{\\sqrt{radicand}}}$."),
    ]
    return gold, forms, mutations, None


def cjk_conclusion(rng: random.Random, thinking: str) -> Styled:
    """A worked answer in Chinese, Japanese or Korean that concludes on a formula and ends with the
    script's own full stop; a formula only mentioned (no conclusion) is no answer."""
    n, other = rng.randint(2, 99), rng.randint(100, 199)
    said = rng.choice(
        [
            "两边同时除以 2，得出 $x = {v}$。",
            "所以 $x = {v}$。",
            "したがって $x = {v}$ となる。",
            "따라서 $x = {v}$ 이다.",
        ]
    )
    forms = [("concluded", f"{thinking}\n\n{said.format(v=n)}")]
    mutations = [
        ("another-value", f"{thinking}\n\n{said.format(v=n + 1)}"),
        ("only-mentioned", f"{thinking}\n\n其中，$x = {n}$ 代表速度，$y = {other}$ 代表时间。"),
        ("hedge-or", f"{thinking}\n\n所以 $x = {other}$ 或 $x = {n}$。"),
        ("hedge-mata-wa", f"{thinking}\n\nしたがって $x = {other}$ または $x = {n}$ である。"),
    ]
    return str(n), forms, mutations, None


_WORDS = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_NTHS = {2: "half", 3: "third", 4: "quarter", 5: "fifth", 6: "sixth", 8: "eighth", 10: "tenth"}


def _said(n: int, d: int) -> str:
    plural = "halves" if d == 2 else f"{_NTHS[d]}s"
    return f"{_WORDS[n]} {_NTHS[d] if n == 1 else plural}"


def fraction_words(rng: random.Random, thinking: str) -> Styled:
    """A fraction said in words ("two thirds"); near-misses: another fraction in words, and words that
    only count ("three quarters" is not 3)."""
    d = rng.choice(sorted(_NTHS))
    n = rng.randint(1, d - 1) if d > 2 else 1
    if rng.random() < 0.3:  # the count alone is the gold: the words are a near-miss
        forms = [("digits", f"{thinking}\n\nThe answer is {n}.")]
        return (
            str(n),
            forms,
            [("fraction-words-for-a-count", f"{thinking}\n\nThe answer is {_said(n, d)}.")],
            None,
        )
    other = rng.choice([e for e in sorted(_NTHS) if e != d])
    forms = [("words", f"{thinking}\n\nThe answer is {_said(n, d)}.")]
    mutations = [("another-denominator", f"{thinking}\n\nThe answer is {_said(n, other)}.")]
    return f"\\frac{{{n}}}{{{d}}}", forms, mutations, None


STYLED: dict[str, Callable[[random.Random, str], Styled]] = {
    "multilingual": multilingual,
    "letter-word": letter_word,
    "letter-word-vs-letter": letter_word_for_a_letter,
    "choice-prose": choice_prose,
    "choice-from-options": choice_from_options,
    "clock-24": clock_24,
    "complement": complement,
    "percent-decimal": percent_decimal,
    "percent-of-count": percent_of_count,
    "decimal-comma": decimal_comma,
    "restated": restated,
    "trig-degrees": trig_degrees,
    "matrix-sum": matrix_sum,
    "stray-backslash": stray_backslash,
    "choice-judged": choice_judged,
    "gold-sentence": gold_sentence,
    "word-answer": word_answer,
    "formula-then-values": formula_then_values,
    "fraction-words": fraction_words,
    "cjk-conclusion": cjk_conclusion,
    "root-index": root_index,
}
