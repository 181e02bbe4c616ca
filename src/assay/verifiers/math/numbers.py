"""Exact parsing of written numbers into `Fraction`s: the fast path that needs no sympy.

Covered: integers with thousands separators ("1,000,000", "1 000", "1\\,000"), decimals (a decimal comma
where no other reading is possible: "1000,99", "0,111"), repeating
decimals (`0.\\overline{3}`), fractions (`\\frac{3}{4}`, `\\frac34`, `3/4`), mixed numbers
(`2\\frac{1}{2}`, "2 1/2"), percent, scientific notation (`1.5\\times10^{3}`, "1.5e3"), and small integer
powers (`10^6`, `2^{10}`). A power whose result would be huge is refused here (the cost guard), so
`9^{9^9}` never reaches exact arithmetic.

Not covered: radicals, pi, logs, anything symbolic (see `symbolic`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from assay.verifiers.math.chinese import fraction_value, percent_value
from assay.verifiers.math.spelled import spelled_value

NumberKind = Literal["integer", "decimal", "fraction", "scientific"]

# An exact power is computed only when its result has at most this many decimal digits (the cost guard:
# 10^{100000} is cheap as an integer, 9^{9^9} is not). Written scientific notation ("1e100000") is a
# number like any other, never 1 * e * 100000.
MAX_POWER_DIGITS = 200_000

_INT = r"\d+"
_DEC = r"(?:\d+\.\d*|\.\d+|\d+)"
_THOUSANDS_RE = re.compile(r"^\d{1,3}(?:(?:,|\s|\\,|\{,\})\d{3})+(?:\.\d+)?$")
_DECIMAL_RE = re.compile(rf"^{_DEC}$")
# A comma that can only be a decimal comma: after four digits or more with one or two after it, or after
# a lone 0 with three or more ("1000,99", "0,111"). "1,22" or "0,5" may be a list (see prompt.py).
_DECIMAL_COMMA_RE = re.compile(r"^(?:[1-9]\d{3,},\d{1,2}|0,\d{3,})$")
_REPEATING_RE = re.compile(r"^(\d*)\.(\d*)\\overline\{?(\d+)\}?$|^(\d*)\.(\d*)\((\d+)\)$")
_FRAC_RE = re.compile(
    r"^\\frac\s*(?:\{\s*([-+]?\s*\d+(?:\.\d+)?)\s*\}|(\d))\s*(?:\{\s*([-+]?\s*\d+(?:\.\d+)?)\s*\}|(\d))$"
)
_SLASH_RE = re.compile(rf"^({_DEC})\s*/\s*({_DEC})$")
_MIXED_RE = re.compile(r"^(\d+)\s*(\\frac.*|\d+\s*/\s*\d+)$")
_SCI_RE = re.compile(
    rf"^({_DEC})\s*(?:\\times|\\cdot|\*)\s*10\s*\^\s*(?:\{{\s*([-+]?\s*\d+)\s*\}}|([-+]?\d+))$"
)
_E_RE = re.compile(rf"^({_DEC})[eE]([-+]?\d+)$")
_POW_RE = re.compile(rf"^({_INT})\s*\^\s*(?:\{{\s*([-+]?\d+)\s*\}}|(\d))$")


@dataclass(frozen=True)
class Number:
    """An exactly known real number and how it was written (the comparer's rules depend on it)."""

    value: Fraction
    kind: NumberKind
    decimals: int = 0  # places after the point when written as a terminating decimal
    percent: bool = False
    degrees: bool = False

    @property
    def significant_digits(self) -> int:
        """Digits the gold was written with (0.5 -> 1, 1.73 -> 3): how much rounding it can imply."""
        scaled = abs(self.value) * 10**self.decimals
        return len(str(int(scaled))) if scaled >= 1 else 0

    def describe(self) -> str:
        bits = max(self.value.numerator.bit_length(), self.value.denominator.bit_length())
        text = f"<a number of about {int(bits * 0.30103)} digits>" if bits > 3000 else str(self.value)
        return f"{text}%" if self.percent else text


def _decimal_places(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def _power(base: int, exponent: int) -> Fraction | None:
    """`base ** exponent` if cheap, else None (the cost guard for exact powers)."""
    if base in (0, 1):
        return Fraction(base) if exponent >= 0 or base == 1 else None
    digits = abs(exponent) * len(str(base))
    if digits > MAX_POWER_DIGITS:
        return None
    return Fraction(base) ** exponent


def _unsigned(text: str) -> tuple[Fraction, NumberKind, int] | None:
    """Value, kind and decimal places of an unsigned written number, or None if it is not one."""
    if _DECIMAL_RE.match(text):
        places = _decimal_places(text)
        return Fraction(text.rstrip(".") or "0"), ("decimal" if places else "integer"), places
    if _DECIMAL_COMMA_RE.match(text):  # "1000,99", "0,111": no thousands grouping reads so (issue 30)
        return _unsigned(text.replace(",", "."))
    if _THOUSANDS_RE.match(text):
        digits = re.sub(r"\\,|\{,\}|,|\s", "", text)
        return Fraction(digits), ("decimal" if "." in digits else "integer"), _decimal_places(digits)
    if match := _REPEATING_RE.match(text):
        whole, fixed, cycle = (g for g in (match.groups()[:3] if match.group(3) else match.groups()[3:]))
        whole_value = Fraction(int(whole or "0"))
        fixed_value = Fraction(int(fixed), 10 ** len(fixed)) if fixed else Fraction(0)
        cycle_value = Fraction(int(cycle), (10 ** len(cycle) - 1) * 10 ** len(fixed))
        return whole_value + fixed_value + cycle_value, "fraction", 0
    if match := _FRAC_RE.match(text):
        num = (match.group(1) or match.group(2)).replace(" ", "")
        den = (match.group(3) or match.group(4)).replace(" ", "")
        return _ratio(Fraction(num), Fraction(den))
    if match := _SLASH_RE.match(text):
        return _ratio(Fraction(match.group(1)), Fraction(match.group(2)))
    if match := _MIXED_RE.match(text):
        part = _unsigned(match.group(2).strip())
        if part is None or part[1] != "fraction" or not 0 < part[0] < 1:
            return None
        return Fraction(int(match.group(1))) + part[0], "fraction", 0
    return _scientific(text)


def _ratio(num: Fraction, den: Fraction) -> tuple[Fraction, NumberKind, int] | None:
    if den == 0:
        return None
    value = num / den
    return value, ("integer" if value.denominator == 1 and num.denominator == 1 else "fraction"), 0


def _scientific(text: str) -> tuple[Fraction, NumberKind, int] | None:
    if match := _SCI_RE.match(text):
        mantissa, exponent = match.group(1), (match.group(2) or match.group(3)).replace(" ", "")
    elif match := _E_RE.match(text):
        mantissa, exponent = match.group(1), match.group(2)
    else:
        mantissa = exponent = ""
    if mantissa:
        scale = _power(10, int(exponent))
        return None if scale is None else (Fraction(mantissa.rstrip(".") or "0") * scale, "scientific", 0)
    if match := _POW_RE.match(text):
        value = _power(int(match.group(1)), int(match.group(2) or match.group(3)))
        if value is None:
            return None
        return value, ("integer" if value.denominator == 1 else "fraction"), 0
    return None


_UNITS_WORDS = [
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen"),
    "nineteen",
]
_TENS_WORDS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_NUMBER_WORDS = {word: value for value, word in enumerate(_UNITS_WORDS)} | {
    word: 10 * (index + 2) for index, word in enumerate(_TENS_WORDS)
}
_TENS_ALT, _DIGIT_ALT, _UNITS_ALT = ("|".join(w) for w in (_TENS_WORDS, _UNITS_WORDS[1:10], _UNITS_WORDS))
_NUMBER_WORD_RE = re.compile(rf"^(?:({_TENS_ALT})(?:[-\s]({_DIGIT_ALT}))?|({_UNITS_ALT}))$")


# "one half", "two thirds", "three quarters": a fraction in words (rllm's tests give "one half" as a gold).
_DENOMINATORS = {"half": 2, "third": 3, "quarter": 4, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7}
_DENOMINATORS |= {"eighth": 8, "ninth": 9, "tenth": 10}
_FRACTION_WORD_RE = re.compile(
    rf"^(a|an|{'|'.join(_UNITS_WORDS[1:10])})[-\s]({'|'.join(_DENOMINATORS)}|halves|{'s|'.join(_DENOMINATORS)}s)$"
)


def _fraction_word(text: str) -> Number | None:
    match = _FRACTION_WORD_RE.match(text.lower())
    if match is None:
        return None
    count = 1 if match.group(1) in ("a", "an") else _NUMBER_WORDS[match.group(1)]
    word = "half" if match.group(2) == "halves" else match.group(2).removesuffix("s")
    if (count == 1) != (match.group(2) in _DENOMINATORS) or word not in _DENOMINATORS:
        return None  # "one thirds", "two third": not how a fraction is said
    return Number(Fraction(count, _DENOMINATORS[word]), "fraction")


def _number_word(text: str) -> Number | None:
    """ "eighteen", "twenty-five": a whole answer written as one English number below 100; "one half",
    "two thirds": a fraction in words."""
    match = _NUMBER_WORD_RE.match(text.lower())
    if match is None:
        return _fraction_word(text)
    if match.group(3):
        return Number(Fraction(_NUMBER_WORDS[match.group(3)]), "integer")
    units = _NUMBER_WORDS[match.group(2)] if match.group(2) else 0
    return Number(Fraction(_NUMBER_WORDS[match.group(1)] + units), "integer")


def parse_number(text: str, degrees: bool = False) -> Number | None:
    """The exact number `text` writes (already `clean`ed), or None if it is not a plain number."""
    text = text.strip()
    if text[:1].isalpha():
        if len(text) <= 200 and (spelled := spelled_value(text)) is not None:
            return Number(Fraction(spelled), "integer")  # "one hundred and twenty", "zweiundfünfzig"
        if len(text) <= 200 and (fraction := fraction_value(text)) is not None:
            return Number(fraction, "integer" if fraction.denominator == 1 else "fraction")  # "三分之二"
        if len(text) <= 200 and (percent := percent_value(text)) is not None:
            return Number(Fraction(percent), "integer", percent=True)  # "百分之二十": 20%
        return _number_word(text)
    percent = text.endswith("%")
    if percent:
        text = text[:-1].strip()
    sign = 1
    while text[:1] in ("-", "+"):
        if text[0] == "-":
            sign = -sign
        text = text[1:].strip()
    if text.startswith("{") and text.endswith("}") and text.count("{") == 1:
        text = text[1:-1].strip()
    if text.startswith("(") and text.endswith(")") and text.count("(") == 1 and "," not in text:
        inner = parse_number(text[1:-1], degrees)
        if inner is None or inner.percent:
            return None
        return Number(sign * inner.value, inner.kind, inner.decimals, percent, degrees)
    if not text or len(text) > 200:
        return None
    parsed = _unsigned(text)
    if parsed is None:
        return None
    value, kind, places = parsed
    return Number(sign * value, kind, places, percent, degrees)
