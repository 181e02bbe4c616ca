"""A rule-blind generator of math answers stated in plain prose, without a box (issue 44).

Written from how people close a worked answer, not from the extractor's rules: a closing sentence that
states a total with its noun or unit ("We need 2,500 bricks in total."), an answer after a cue or a
speaker ("Answer: I think 3", "I say: 48"), an interval or several roots stated in a sentence, in several
languages, with numbers written 2500 / 2,500 / 2 500 / 2.5e3. Each positive has a negative twin drawn
from the same parts that must earn nothing: a guess ("Maybe it's 48."), a question, a bound or a
rejection of the gold ("280, not 300" for a gold 300; "300, not 280" states 300), two different numbers
in the closing sentence, a step that is no conclusion, several roots for a single-valued gold, or a
closing sentence that only restates the prompt.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

NOUNS = ("bricks", "apples", "tickets", "pages", "marbles", "cookies", "dollars", "students", "tiles")
UNITS = ("meters", "kilograms", "liters", "minutes", "km", "cm")
NAMES = ("Maria", "Tom", "The farmer", "Each class", "The shop")
WORKING = (
    "Each box holds {a} {noun} and there are {b} boxes, so we multiply {a} by {b}.",
    "There are {b} rows with {a} {noun} in each row.\nMultiplying gives the total.",
    "Step 1: {a} {noun} per day.\nStep 2: {b} days.\nSo {a} x {b} is the count we want.",
)


@dataclass(frozen=True)
class Prose:
    kind: str
    gold: str
    response: str
    prompt: str | None
    label: bool


def written(n: int, rng: random.Random) -> str:
    """`n` as a person may write it: 2500, 2,500, 2 500 (a space or a narrow no-break space), 2.5e3."""
    forms = [str(n)]
    if n >= 1000:
        forms += [f"{n:,}", f"{n:,}".replace(",", " "), f"{n:,}".replace(",", "\u202f")]
        mantissa, exponent = str(n).rstrip("0"), len(str(n)) - len(str(n).rstrip("0"))
        if exponent >= 2 and len(mantissa) <= 3:
            forms.append(f"{mantissa[0]}.{mantissa[1:] or '0'}e{exponent + len(mantissa) - 1}")
    return rng.choice(forms)


def _working(rng: random.Random, a: int, b: int) -> str:
    return rng.choice(WORKING).format(a=a, b=b, noun=rng.choice(NOUNS))


def _total(rng: random.Random, label: bool) -> Prose:
    a, b = rng.randint(2, 60), rng.choice((10, 20, 25, 50, 100, 125))
    n = a * b
    noun, num = rng.choice(NOUNS), written(n, rng)
    other = written(n + rng.randint(1, 40), rng)
    if label:
        closing = rng.choice(
            (
                f"That makes {num} in total.",
                f"We need {num} {noun} in total.",
                f"So we need {num} {noun}.",
                f"That's {num} {noun} altogether.",
                f"In total, there are {num} {noun}.",
                f"{rng.choice(NAMES)} has {num} {noun} in all.",
                f"This gives {num} {noun} overall.",
                f"Altogether we use {num} {noun}.",
                f"Insgesamt brauchen wir {num} Stück.",
                f"Il faut {num} briques au total.",
                f"En total hay {num} manzanas.",
                f"Всего нужно {num} кирпичей.",
                f"所以一共需要 {num} 块砖。",
                f"That makes {num} {noun}, not {other}.",  # the rejected value is the other one
                f"It is not {other}, it is {num}.",
                f"That is {other} cents, which is ${num}.",  # the apposition restates it in its final form
                f"Es sind nicht {other}, sondern {num} Stück.",
                f"Ce n'est pas {other}, c'est {num}.",
                f"Это не {other}, а {num}.",
                f"不是 {other}，是 {num}。",
            )
        )
    else:
        closing = rng.choice(
            (
                f"Maybe it's {num}.",
                f"Perhaps we need {num} {noun}.",
                f"It could be {num} or {other}.",
                f"Is it {num}?",
                f"We need {num} {noun} and {other} {rng.choice(NOUNS)} in total.",
                f"That makes {other} {noun}, not {num}.",
                f"The total is not {num}.",
                f"It is not {num} or {other}.",
                f"That is {num} cents, which is ${other}.",
                f"Es sind nicht {num}, sondern {other} Stück.",
                f"Es sind nicht {num} oder {other} Stück.",
                f"Ce n'est pas {num} ni {other}.",
                f"不是 {num}，是 {other}。",
                f"We need at least {num} {noun}.",
                f"Next, we add {num} to the {noun} we already have.",
                f"Let {num} be the number of {noun}.",
                f"Vielleicht sind es {num} Stück.",
                f"Es sind nicht {num} Stück.",
                f"Peut-être {num} briques.",
                f"也许是 {num} 块砖。",
                f"Всего не {num} кирпичей.",
            )
        )
    return Prose("total", str(n), f"{_working(rng, a, b)}\n\n{closing}", None, label)


def _spoken(rng: random.Random, label: bool) -> Prose:
    n, m = rng.randint(2, 999), rng.randint(1000, 1999)
    if label:
        text = rng.choice(
            (
                f"Answer: I think {n}",
                f"Final answer: I'd say {n}.",
                f"I say: {n}",
                f"I'd say: {n}",
                f"Antwort: ich denke {n}",
                f"Réponse : je pense {n}",
                f"Respuesta: creo que {n}",
                f"Ответ: я думаю {n}",
                f"答案：我认为 {n}",
            )
        )
    else:
        text = rng.choice(
            (
                f"Answer: I think {n} or {m}",
                f"I say: maybe {n}",
                f"Answer: I think it is not {n}",
                f"Antwort: ich denke {n} oder {m}",
                f"I'd say: {n}?",
            )
        )
    return Prose("spoken", str(n), f"{_working(rng, n, 3)}\n\n{text}", None, label)


def _interval(rng: random.Random, label: bool) -> Prose:
    a = rng.randint(-9, 5)
    b = a + rng.randint(1, 9)
    left, right = rng.choice("[("), rng.choice("])")
    gold = f"{left}{a},{b}{right}"
    wrong_right = ")" if right == "]" else "]"
    shown = f"{left}{a}, {b}{right}" if label else f"{left}{a}, {b}{wrong_right}"
    closing = rng.choice(
        (
            f"The interval is {shown}.",
            f"So the solution set is {shown}.",
            f"Therefore x lies in {shown}.",
            f"Die Lösungsmenge ist {shown}.",
            f"L'ensemble des solutions est {shown}.",
        )
    )
    working = f"Solving the inequality step by step gives the bounds {a} and {b}."
    return Prose("interval", gold, f"{working}\n\n{closing}", None, label)


def _roots(rng: random.Random, label: bool) -> Prose:
    a, b = rng.sample([*range(-9, 0), *range(1, 10)], 2)
    var = rng.choice("xtz")
    joined = rng.choice(
        (
            f"The roots are {var} = {a} and {var} = {b}.",
            f"So the solutions are {var} = {a}, {var} = {b}.",
            f"Hence {var} = {a} or {var} = {b}.",
            f"Die Lösungen sind {var} = {a} und {var} = {b}.",
            f"Les solutions sont {var} = {a} et {var} = {b}.",
            f"Las soluciones son {var} = {a} y {var} = {b}.",
        )
    )
    # a gold with both roots is answered; a gold of one of them is not (the response gives two)
    gold = rng.choice((f"{a}, {b}", f"\\{{{b}, {a}\\}}")) if label else str(rng.choice((a, b)))
    working = f"Factor the quadratic: ({var} - ({a}))({var} - ({b})) = 0."
    return Prose("roots", gold, f"{working}\n\n{joined}", None, label)


# (a fact of the prompt with {n}, the question, the answer from n, the honest closing sentence)
FACTS = (
    ("A square has side length {n}.", "What is its area?", lambda n: n * n, "So its area is {v}."),
    ("A cube has edge length {n}.", "What is its volume?", lambda n: n**3, "The volume is {v} cubic units."),
    (
        "Tom has {n} apples.",
        "He buys twice as many. How many does he have now?",
        lambda n: 3 * n,
        "Tom now has {v}.",
    ),
    (
        "A train travels at {n} km per hour.",
        "How far does it go in 3 hours?",
        lambda n: 3 * n,
        "It goes {v} km.",
    ),
    (
        "Each ticket costs {n} dollars.",
        "What do 4 tickets cost?",
        lambda n: 4 * n,
        "Four tickets cost {v} dollars.",
    ),
)
LEAD_INS = ("", "So, ", "Recall: ", "Answer: ", "As given, ", "We know that ", "Remember: ", "Therefore ")


def _restated(rng: random.Random, label: bool) -> Prose:
    """A prompt that states a number the gold may equal; the response works, then closes by repeating a
    sentence of the prompt (a hack: not rewarded when the gold is that number), or by its own result."""
    n = rng.randint(5, 30)
    fact_template, question, answer, honest = rng.choice(FACTS)
    fact = fact_template.format(n=n)
    value = answer(n)
    prompt = f"{fact} {question}"
    working = f"From the question, {n} is given, and working it out gives {value}."
    if label:
        closing = honest.format(v=value)
        return Prose("restated", str(value), f"{working}\n\n{closing}", prompt, True)
    lead = rng.choice(LEAD_INS)
    closing = f"{lead}{fact[0].lower() if lead and not lead.endswith(': ') else fact[0]}{fact[1:]}"
    response = rng.choice((f"{working}\n\n{closing}", closing, f"<think>{working}</think>\n\n{closing}"))
    return Prose("restated", str(n), response, prompt, False)


KINDS = (_total, _spoken, _interval, _roots, _restated)


def draw(rng: random.Random, label: bool) -> Prose:
    return rng.choice(KINDS)(rng, label)
