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


# Whole numbers said in words, as each language counts (written here from the languages' rules, for the
# generator only): 2 to 999.
_EN = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
]
_EN += ["sixteen", "seventeen", "eighteen", "nineteen"]
_EN_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_DE = [
    "null",
    "eins",
    "zwei",
    "drei",
    "vier",
    "fünf",
    "sechs",
    "sieben",
    "acht",
    "neun",
    "zehn",
    "elf",
    "zwölf",
    "dreizehn",
    "vierzehn",
    "fünfzehn",
]
_DE += ["sechzehn", "siebzehn", "achtzehn", "neunzehn"]
_DE_TENS = ["_", "_", "zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig"]
_FR = [
    "zéro",
    "un",
    "deux",
    "trois",
    "quatre",
    "cinq",
    "six",
    "sept",
    "huit",
    "neuf",
    "dix",
    "onze",
    "douze",
    "treize",
    "quatorze",
    "quinze",
    "seize",
]
_FR += ["dix-sept", "dix-huit", "dix-neuf"]
_FR_TENS = ["_", "_", "vingt", "trente", "quarante", "cinquante", "soixante"]
_ES = [
    "cero",
    "uno",
    "dos",
    "tres",
    "cuatro",
    "cinco",
    "seis",
    "siete",
    "ocho",
    "nueve",
    "diez",
    "once",
    "doce",
    "trece",
    "catorce",
    "quince",
]
_ES += [
    "dieciséis",
    "diecisiete",
    "dieciocho",
    "diecinueve",
    "veinte",
    "veintiuno",
    "veintidós",
    "veintitrés",
    "veinticuatro",
]
_ES += ["veinticinco", "veintiséis", "veintisiete", "veintiocho", "veintinueve"]
_ES_TENS = ["_", "_", "_", "treinta", "cuarenta", "cincuenta", "sesenta", "setenta", "ochenta", "noventa"]
_ES_HUNDREDS = [
    "_",
    "ciento",
    "doscientos",
    "trescientos",
    "cuatrocientos",
    "quinientos",
    "seiscientos",
    "setecientos",
]
_ES_HUNDREDS += ["ochocientos", "novecientos"]


_RU = [
    "ноль",
    "один",
    "два",
    "три",
    "четыре",
    "пять",
    "шесть",
    "семь",
    "восемь",
    "девять",
    "десять",
    "одиннадцать",
    "двенадцать",
    "тринадцать",
    "четырнадцать",
    "пятнадцать",
    "шестнадцать",
    "семнадцать",
    "восемнадцать",
    "девятнадцать",
]
_RU_TENS = [
    "_",
    "_",
    "двадцать",
    "тридцать",
    "сорок",
    "пятьдесят",
    "шестьдесят",
    "семьдесят",
    "восемьдесят",
    "девяносто",
]
_RU_HUNDREDS = [
    "_",
    "сто",
    "двести",
    "триста",
    "четыреста",
    "пятьсот",
    "шестьсот",
    "семьсот",
    "восемьсот",
    "девятьсот",
]
_ZH = "零一二三四五六七八九"


def _en(n: int, rng: random.Random) -> str:
    if n < 20:
        return _EN[n]
    if n < 100:
        return _EN_TENS[n // 10] + (f"-{_EN[n % 10]}" if n % 10 else "")
    rest = n % 100
    joined = rng.choice((" and ", " ")) if rest else ""
    return f"{_EN[n // 100]} hundred{joined}{_en(rest, rng) if rest else ''}"


def _de(n: int) -> str:
    if n < 20:
        return _DE[n]
    if n < 100:
        unit = "ein" if n % 10 == 1 else _DE[n % 10]
        return (f"{unit}und" if n % 10 else "") + _DE_TENS[n // 10]
    head = "ein" if n // 100 == 1 else _DE[n // 100]
    return f"{head}hundert{_de(n % 100) if n % 100 else ''}"


def _fr(n: int) -> str:
    if n < 20:
        return _FR[n]
    if n < 70:
        tens, unit = divmod(n, 10)
        return _FR_TENS[tens] + ("" if not unit else " et un" if unit == 1 else f"-{_FR[unit]}")
    if n < 80:
        return "soixante" + (" et onze" if n == 71 else f"-{_FR[n - 60]}")
    if n < 100:
        return "quatre-vingts" if n == 80 else f"quatre-vingt-{_FR[n - 80]}"
    hundreds, rest = divmod(n, 100)
    head = "cent" if hundreds == 1 else f"{_FR[hundreds]} cent" + ("s" if not rest else "")
    return head + (f" {_fr(rest)}" if rest else "")


def _es(n: int) -> str:
    if n < 30:
        return _ES[n]
    if n < 100:
        return _ES_TENS[n // 10] + (f" y {_ES[n % 10]}" if n % 10 else "")
    if n == 100:
        return "cien"
    return _ES_HUNDREDS[n // 100] + (f" {_es(n % 100)}" if n % 100 else "")


def _ru(n: int) -> str:
    hundreds, tens, units = n // 100, n // 10 % 10, n % 10
    parts = [_RU_HUNDREDS[hundreds]] if hundreds else []
    if n % 100 >= 20:
        parts += [_RU_TENS[tens]] + ([_RU[units]] if units else [])
    elif n % 100:
        parts.append(_RU[n % 100])
    return " ".join(parts)


def _zh(n: int, rng: random.Random) -> str:
    """ "十二", "二十二", "一百零五", "两百二十" (两 or 二 before 百, as people write it)."""
    hundreds, tens, units = n // 100, n // 10 % 10, n % 10
    out = (rng.choice("两二") if hundreds == 2 else _ZH[hundreds]) + "百" if hundreds else ""
    if tens:
        out += ("" if n < 20 else _ZH[tens]) + "十"
    elif hundreds and units:
        out += "零"
    return out + (_ZH[units] if units else "")


def in_words(n: int, language: str, rng: random.Random) -> str:
    """`n` (2 to 999) in words, as the language counts."""
    return {
        "en": lambda: _en(n, rng),
        "de": lambda: _de(n),
        "fr": lambda: _fr(n),
        "es": lambda: _es(n),
        "ru": lambda: _ru(n),
        "zh": lambda: _zh(n, rng),
    }[language]()


# (language, closing with {v} and {noun}) of a worked answer; the noun is the language's own
SAID = {
    "en": (
        "The answer is {v}.",
        "She has {v} {noun} left.",
        "So we need {v} {noun} in total.",
        "That makes {v} {noun} altogether.",
        "Therefore, the total is {v}.",
        "I think it's {v}.",
        "In all, there are {v} {noun}.",
    ),
    "de": ("Die Antwort ist {v}.", "Sie hat noch {v} Äpfel übrig.", "Insgesamt sind es {v} Stück."),
    "fr": ("La réponse est {v}.", "Il reste {v} pommes.", "Au total, il faut {v} briques."),
    "es": ("La respuesta es {v}.", "En total hay {v} manzanas.", "Le quedan {v} manzanas en total."),
    "ru": (
        "Ответ: {v}.",
        "У неё осталось {v} яблок.",
        "Всего нужно {v} кирпичей.",
        "Итого получается {v} страниц.",
        "Осталось {v} яблок, а не {w}.",
    ),
    "zh": (
        "答案是{v}。",
        "答案：{v}",
        "所以一共需要{v}块砖。",
        "小明还剩{v}个苹果。",
        "一共有{v}个，不是{w}个。",
    ),
}
# the same closings when they must earn nothing: a guess, a bound, a rejection, a question, two values
NOT_SAID = {
    "en": (
        "Maybe it's {v}.",
        "She has at least {v} {noun}.",
        "It is not {v}.",
        "Is it {v}?",
        "It could be {v} or {w}.",
        "She has {v} {noun} and {w} {noun}.",
        "The {v} {noun} are all the same size.",
        "She has {v} times as many {noun}.",
    ),
    "de": ("Vielleicht sind es {v} Stück.", "Die Antwort ist nicht {v}.", "Es sind mindestens {v} Stück."),
    "fr": ("Peut-être {v} pommes.", "La réponse n'est pas {v}.", "Il faut au moins {v} briques."),
    "es": ("Quizás {v} manzanas.", "La respuesta no es {v}.", "Hay al menos {v} manzanas."),
    "ru": (
        "Возможно, осталось {v} яблок.",
        "Ответ: не {v}.",
        "Осталось как минимум {v} яблок.",
        "Ответ: {v} или {w}.",
        "Осталось {v} яблок и {w} груш.",
        "Осталось {w} яблок, а не {v}.",
        "Может быть, {v}?",
    ),
    "zh": (
        "也许是{v}个。",
        "答案不是{v}。",
        "至少需要{v}块砖。",
        "答案是{v}或{w}。",
        "一共有{v}个苹果和{w}个梨。",
        "一共有{w}个，不是{v}个。",
        "这{v}个苹果一共{w}元。",
    ),
}


def _spelled(rng: random.Random, label: bool) -> Prose:
    """A closing sentence with its value in words ("She has twelve apples left.", "Die Antwort ist
    zweiundfünfzig."); its negative twin guesses, bounds, rejects, asks or offers two values."""
    n = rng.randint(2, 990)
    other = n + rng.randint(1, 9)
    language = rng.choice(sorted(SAID))
    template = rng.choice((SAID if label else NOT_SAID)[language])
    closing = template.format(
        v=in_words(n, language, rng), w=in_words(other, language, rng), noun=rng.choice(NOUNS)
    )
    return Prose(
        "spelled", str(n), f"{_working(rng, n, 3)}\n\n{closing[0].upper()}{closing[1:]}", None, label
    )


# A closing label line, with or without its full stop, as people end a long reply: (label, or None)
LABELS = ("Final", "Total", "Result", "Final result", "Gesamt", "Insgesamt", "Total général", "Итого", "合计")
NOT_LABELS = ("Given", "Estimate", "Check", "Step 2", "Maybe", "At least", "Vielleicht", "Wrong")


def _label_line(rng: random.Random, label: bool) -> Prose:
    """ "...\n\nFinal: 52" after a long reply; what must earn nothing: a label that sets up, guesses or
    bounds its value, the last line of a list of labelled values, or a second value after the first."""
    n = rng.randint(2, 5000)
    num, colon = written(n, rng), rng.choice((": ", ":", "： "))
    stop = rng.choice(("", ".", ""))
    unit = rng.choice(("", "", f" {rng.choice(NOUNS)}"))
    if label:
        closing = rng.choice(
            (
                f"{rng.choice(LABELS)}{colon}{num}{unit}{stop}",
                f"Apples{colon}{n - 1}\nPears{colon}1\nTotal{colon}{num}{stop}",  # a list summed up
            )
        )
    else:
        closing = rng.choice(
            (
                f"{rng.choice(NOT_LABELS)}{colon}{num}{unit}{stop}",
                f"Apples{colon}{n + 3}\nPears{colon}{num}{stop}",
                f"{rng.choice(LABELS)}{colon}{num} or {n + 1}{stop}",
                f"{rng.choice(LABELS)}{colon}not {num}{stop}",
            )
        )
    working = "\n".join(_working(rng, n, k) for k in range(2, 5))  # a long reply: several paragraphs of work
    return Prose("label", str(n), f"{working}\n\n{closing}", None, label)


# A value rejected after a cue, then the one stated, as each language says it: (rejected, stated)
REJECTIONS = (
    "The answer is not {r}, it is {s}.",
    "The answer isn't {r}; it's {s}.",
    "Die Antwort ist nicht {r}, sondern {s}.",
    "Die Antwort lautet nicht {r}, sondern {s}.",
    "La réponse n'est pas {r} mais {s}.",
    "La respuesta no es {r}, sino {s}.",
    "A resposta não é {r}, mas {s}.",
    "La risposta non è {r}, ma {s}.",
    "Het antwoord is niet {r}, maar {s}.",
    "Ответ: не {r}, а {s}.",
    "Ответ не {r}, а {s}.",
    "Ответ: {s}, а не {r}.",
    "答案不是{r}，而是{s}。",
    "答案：不是{r}，是{s}。",
    "Die Antwort ist {s}, nicht {r}.",
    "La respuesta es {s}, no {r}.",
)
# rejections that state nothing, or still hedge or bound what they state
EMPTY_REJECTIONS = (
    "Die Antwort ist nicht {s}.",
    "La réponse n'est pas {s}.",
    "La respuesta no es {s}.",
    "Ответ: не {s}.",
    "答案不是{s}。",
    "Die Antwort ist nicht {r} oder {s}.",
    "Die Antwort ist nicht {r}, sondern vielleicht {s}.",
    "Die Antwort ist nicht {r}, sondern mindestens {s}.",
    "La réponse n'est pas {r} mais peut-être {s}.",
    "La respuesta no es {r}, sino {s} o {t}.",
)


def _rejected_after_cue(rng: random.Random, label: bool) -> Prose:
    """A cue, a rejected value and the value stated instead, in the cue table's languages; the gold is
    the stated value (rewarded) or the rejected one (never)."""
    stated, rejected = rng.sample(range(2, 999), 2)
    if label:
        closing, gold = rng.choice(REJECTIONS).format(r=rejected, s=stated), stated
    elif rng.random() < 0.5:
        closing, gold = rng.choice(REJECTIONS).format(r=rejected, s=stated), rejected
    else:
        closing = rng.choice(EMPTY_REJECTIONS).format(r=rejected, s=stated, t=stated + 1)
        gold = stated
    return Prose("rejected", str(gold), f"{_working(rng, stated, 2)}\n\n{closing}", None, label)


def _restated_in_words(rng: random.Random, label: bool) -> Prose:
    """A prompt that states its number in words; the response closes by repeating that sentence (never
    an answer when the gold is the number), or by its own result in words."""
    n = rng.randint(2, 19)
    prompt = f"Tom has {_EN[n]} apples. He eats none of them. How many apples does he have?"
    if label:
        return Prose(
            "restated-words",
            str(n),
            f"He eats none, so the count stays.\n\nSo he still has {_EN[n]} apples.",
            prompt,
            True,
        )
    lead = rng.choice(("", "So, ", "Recall: ", "As given, "))
    sentence = f"{lead}{'t' if lead and not lead.endswith(': ') else 'T'}om has {_EN[n]} apples."
    return Prose("restated-words", str(n), f"He eats none of them.\n\n{sentence}", prompt, False)


# After a stated value, how people hedge or bound it, and what they add that does neither.
DOUBTS_AFTER = (
    ", I think",
    ", probably",
    " or so",
    " or more",
    " at least",
    " at most",
    ", I guess",
    " maybe",
)
NEUTRAL_AFTER = ("", " in total", " altogether", " in all")
CLOSINGS = (
    "We need {v} {noun}{after}.",
    "Total: {v}{after}",
    "The answer is {v}{after}.",
    "Answer: {v}{after}",
    "So {name} has {v} {noun}{after}.",
)


def _doubted_after(rng: random.Random, label: bool) -> Prose:
    """A value stated after a cue, a label or in a closing sentence, in digits or in words: rewarded as
    stated or with a neutral trailer ("in total"), never with a guess or a bound after it."""
    n = rng.randint(2, 99)
    value = written(n, rng) if rng.random() < 0.6 else _EN[n] if n < 20 else written(n, rng)
    after = rng.choice(NEUTRAL_AFTER if label else DOUBTS_AFTER)
    closing = rng.choice(CLOSINGS).format(
        v=value, noun=rng.choice(NOUNS), after=after, name=rng.choice(NAMES).lower()
    )
    return Prose("doubted-after", str(n), f"{_working(rng, n, 3)}\n\n{closing}", None, label)


KINDS = (
    _total,
    _spoken,
    _interval,
    _roots,
    _restated,
    _spelled,
    _label_line,
    _rejected_after_cue,
    _restated_in_words,
    _doubted_after,
)


def draw(rng: random.Random, label: bool) -> Prose:
    return rng.choice(KINDS)(rng, label)
