"""String normalisation of a LaTeX or plain-text answer: the cheap layer every comparison starts from.

One place turns the many spellings of an answer into one: `\\dfrac` and `\\tfrac` become `\\frac`,
`\\left(` becomes `(`, spacing commands and `\\text{...}` wrappers go, math delimiters go, a degree mark
becomes a flag. No sympy here: this layer is pure string work so the fast path stays fast.

Covered: delimiters, sizing, spacing, font and text wrappers, degree marks, currency signs, trailing
punctuation, units after a bare number (`strip_units`), text synonyms (`canonical_text`).
Not covered: anything that needs to know what an expression means (that is `values` and `symbolic`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Commands whose single braced argument is kept and the command dropped.
_WRAPPERS = (
    "text",
    "textbf",
    "textit",
    "textrm",
    "texttt",
    "textnormal",
    "mathrm",
    "mathbf",
    "mathit",
    "mathsf",
    "mathtt",
    "mathbb",
    "boldsymbol",
    "bm",
    "mbox",
    "hbox",
    "emph",
    "displaystyle",
    "boxed",
    "fbox",
    "framebox",
    "operatorname",
)
_WRAPPER_RE = re.compile(r"\\(" + "|".join(_WRAPPERS) + r")\s*\{")
_DROP_RE = re.compile(
    r"\\(?:left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|Biggl|Biggr|big|Big|bigg|Bigg|displaystyle|"
    r"textstyle|scriptstyle|limits|nolimits)(?![a-zA-Z])"
)
# `\\,` and friends are spacing whatever follows them (`100\\,\\text{cm}` must not keep a backslash);
# the word commands only when the word ends there (`\\quad`, not `\\quadrilateral`).
_SPACING_RE = re.compile(
    r"(?<!\\)\\(?:[,;:!]|(?:quad|qquad|enspace|thinspace|medspace|thickspace|space)(?![a-zA-Z]))"
    r"|~|(?<!\\)\\ "
)
_DEGREE_RE = re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|°|\\degree(?![a-zA-Z])|\^\s*\{\s*o\s*\}")
_DEGREE_WORD_RE = re.compile(r"(\d)\s*degrees?\b")
_TRIG_RE = re.compile(r"\\(?:sin|cos|tan|sec|csc|cot)(?![a-zA-Z])")
_DEGREE_NUMBER_RE = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|°|\\degree(?![a-zA-Z])|\^\s*\{\s*o\s*\})"
)
# A price with a decimal comma: two digits after the comma, then a currency sign.
# A bare "$" counts only after a space and before the end or a space ("2,74 $"): "$21,16$" is a formula.
_PRICE_COMMA_RE = re.compile(r"(?<![\d,])(\d+),(\d{2})(?:\s+\$(?=\s|$)|\s*(?:\\\$|€|£|¥|₽|₹|zł)(?![\w$]))")
_CURRENCY_RE = re.compile(r"€|£|¥|₽|₹")
_DELIMS_RE = re.compile(r"\$\$|\$|\\\[|\\\]|\\\(|\\\)")
_FRAC_ALIASES_RE = re.compile(r"\\[dt]frac(?![a-zA-Z])|\\cfrac(?![a-zA-Z])")
_RELATION_ALIASES = {
    "le": "\\leq ",
    "leqslant": "\\leq ",
    "ge": "\\geq ",
    "geqslant": "\\geq ",
    "neq": "\\ne ",
}
_RELATION_ALIASES_RE = re.compile(r"\\(le|leqslant|ge|geqslant|neq)(?![a-zA-Z])")
_CHOOSE_RE = re.compile(r"\{\s*([^{}]+?)\s*\\choose\s*([^{}]+?)\s*\}")  # {5 \\choose 2}
# Function and constant names written without their backslash: "pi" is never p times i in an answer.
_PLAIN_FUNCTION_RE = re.compile(
    r"(?<![\\a-zA-Z])(pi|sqrt|exp|ln|log|sin|cos|tan|sec|csc|cot|arcsin|arccos|arctan|infty)(?![a-zA-Z])"
)
# A doubly escaped command ("\\\\left(" from a JSON or Python string escaped twice); a LaTeX row break
# is followed by a space, a digit or a one-letter cell, never by a command name of two letters or more.
_ESCAPED_COMMAND_RE = re.compile(r"(?<!\\)\\\\(?=[a-zA-Z]{2,})")
_PERCENT_WORD_RE = re.compile(r"(\d)\s*(?:percent|per cent)\b", re.IGNORECASE)
_MULTISPACE_RE = re.compile(r"\s+")


def match_brace(text: str, open_at: int) -> int:
    """Index of the brace closing the one at `open_at` (which must be `{`), or -1 if it never closes."""
    depth = 0
    for index in range(open_at, len(text)):
        char = text[index]
        if char == "\\":
            continue
        if char == "{" and (index == 0 or text[index - 1] != "\\"):
            depth += 1
        elif char == "}" and (index == 0 or text[index - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return index
    return -1


def unwrap_commands(text: str) -> str:
    """`\\text{cm}` -> `cm`, recursively; an unclosed wrapper is left as it is."""
    for _ in range(50):  # bounded: each pass removes one wrapper
        match = _WRAPPER_RE.search(text)
        if match is None:
            return text
        close = match_brace(text, match.end() - 1)
        if close < 0:
            return text[: match.start()] + text[match.end() :]
        inner = text[match.end() : close]
        text = text[: match.start()] + inner + text[close + 1 :]
    return text


def _plain_functions(text: str) -> str:
    """Plain-text "pi/2", "exp(16)", "2*sqrt(3)" in LaTeX: `\\pi/2`, `\\exp(16)`, `2*\\sqrt{3}`."""
    text = _PLAIN_FUNCTION_RE.sub(r"\\\1", text)
    text = re.sub(r"√\s*(\d+(?:\.\d+)?|[a-zA-Z])", r"\\sqrt{\1}", text).replace("√", "\\sqrt")  # 8√3
    # Python's power between two operands ("3*s**2", sympy-printed golds); bold markers ("**55**") stay
    # (a chain "2**3**2" is right-associative: left as written rather than regrouped)
    text = re.sub(r"(?<=[\w)\]}])\*\*(-?\d+(?:\.\d+)?|-?[A-Za-z]\w*)(?![\w.]|\*\*)", r"^{\1}", text)
    text = re.sub(r"(?<=[\w)\]}])\*\*(?=[({])", "^", text)
    # `\\sqrt[3]2`: an unbraced radicand is one character, as in LaTeX (lm-eval's minerva tests write it)
    text = re.sub(r"\\sqrt\[([^\[\]{}]{1,20})\]\s*([0-9a-zA-Z])", r"\\sqrt[\1]{\2}", text)
    for _ in range(10):  # bounded: each pass rewrites one \\sqrt( ... ) to \\sqrt{ ... }
        start = text.find("\\sqrt(")
        if start < 0:
            break
        open_at, depth = start + 5, 0
        for index in range(open_at, len(text)):
            depth += {"(": 1, ")": -1}.get(text[index], 0)
            if depth == 0:
                text = f"{text[:start]}\\sqrt{{{text[open_at + 1 : index]}}}{text[index + 1 :]}"
                break
        else:
            break
    return text


@dataclass(frozen=True)
class Cleaned:
    """A normalised answer string and what the normalisation noticed on the way."""

    text: str
    degrees: bool = False


# Digits of other scripts: fullwidth (CJK input methods), Arabic-Indic and Persian.
_DIGITS = str.maketrans(
    "０１２３４５６７８９٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹－＋．，：（）",
    "0123456789" * 3 + "-+.,:()",
)


def clean(raw: str) -> Cleaned:
    """Normalise spelling without changing meaning (see the module docstring for the list)."""
    text = raw.strip().translate(_DIGITS)
    text = _ESCAPED_COMMAND_RE.sub(r"\\", text)  # "\\\\frac" (a doubly escaped string) is "\\frac"
    text = re.sub(r",\\!\s*", ",", text)  # "32,\\! 349": a thousands separator, even with a space after
    text = _PRICE_COMMA_RE.sub(r"\1.\2 ", text)  # "2,74 $", "2,74€": a price, never the list 2, 74
    text = _DELIMS_RE.sub(" ", text)
    text = _CURRENCY_RE.sub(" ", text)
    text = text.replace("\\\\%", "%").replace("\\%", "%").replace("\\$", " ").replace("\\#", "#")
    text = _FRAC_ALIASES_RE.sub(r"\\frac", text)
    text = text.replace("\\dbinom", "\\binom").replace("\\tbinom", "\\binom")
    text = _CHOOSE_RE.sub(r"\\binom{\1}{\2}", text)
    text = _RELATION_ALIASES_RE.sub(lambda m: _RELATION_ALIASES[m.group(1)], text)
    text = re.sub(r"\\[lr]?vert(?![a-zA-Z])", "|", text)  # |x| written \\lvert x \\rvert
    text = (
        text.replace("≤", "\\leq ")
        .replace("≥", "\\geq ")
        .replace("≠", "\\ne ")
        .replace("−", "-")
        .replace("×", "\\times ")
    )
    text = _DROP_RE.sub("", text)
    text = unwrap_commands(text)
    text = _plain_functions(text)
    if _TRIG_RE.search(text):  # "\\sin(90^{\\circ}-x)": degrees inside a function are pi/180 there (issue 30)
        text = _DEGREE_NUMBER_RE.sub(r"\\frac{\1\\pi}{180}", text)
    degrees = bool(_DEGREE_RE.search(text) or _DEGREE_WORD_RE.search(text))
    text = _DEGREE_WORD_RE.sub(r"\1", _DEGREE_RE.sub(" ", text))
    text = _SPACING_RE.sub(" ", text.replace("\\!", ""))
    text = text.replace("{,}", ",").replace("{.}", ".")
    text = _MULTISPACE_RE.sub(" ", text).strip()
    text = _PERCENT_WORD_RE.sub(r"\1%", text)
    text = re.sub(r"(?<!\\)\\$", "", text).rstrip()  # a stray trailing backslash ("5\\", issue 30)
    text = text.rstrip(" .;:,").lstrip(" ;:,").strip()
    if text.startswith("**") and text.endswith("**"):
        text = text[2:-2].strip()
    return Cleaned(text, degrees)


# A number (no letters) followed by one to three unit words: "20 cm", "3.5 m^2", "12 square feet".
_UNIT_TAIL_RE = re.compile(
    r"^(?P<num>[-+]?[\d.,/{}\\a-z ]*?\d[\d.,}]*%?)\s*"
    r"(?P<unit>(?:[a-zA-Z]+\.?(?:/[a-zA-Z]+)?(?:\^\{?\d\}?)?\s*){1,3})$"
)
# Words that are part of mathematics, or of a sentence about the number ("42 is wrong"), never a unit.
_NOT_UNITS = frozenset(
    {"or", "and", "i", "j", "e", "pi", "x", "y", "z", "n", "k", "to", "times", "cdot", "sqrt"}
    | {"is", "are", "was", "were", "be", "not", "no", "the", "an", "it", "this", "that", "but", "if"}
    | {"answer", "wrong", "incorrect", "correct", "false", "true", "so", "then", "maybe", "perhaps"}
    | {"plus", "minus", "over", "divided", "by", "squared", "cubed", "of", "for", "all", "when", "where"}
)
# A lone letter after a number is usually a variable ("12a" is not 12); only these read as units, in a
# gold and in a response alike. Not `A` (an option letter), `N` or `L` (as often a count as a unit), nor
# `K` or `J` (`k` and `j` are variables: _NOT_UNITS).
ONE_LETTER_UNITS = frozenset("mgslhVW")


def strip_units(text: str) -> str:
    """`20 cm^2` -> `20`; `\\$20` is handled by `clean`. "20 dollars and 50 cents" stays whole.

    Units go only when what is left is a plain number: a unit word after an expression (`5x`) or a
    second quantity ("and 50 cents") keeps the answer whole, so it cannot equal a bare number.
    """
    match = _UNIT_TAIL_RE.match(text)
    if match is None:
        return text
    number, unit = match.group("num").strip(), match.group("unit").strip()
    words = [part for w in re.split(r"\s+", unit) for part in w.rstrip(".").split("/")]  # "km/h"
    if any(re.sub(r"\^.*", "", w).lower() in _NOT_UNITS for w in words):
        return text
    if len(words) == 1 and len(re.sub(r"\^.*", "", words[0])) == 1 and words[0][0] not in ONE_LETTER_UNITS:
        return text
    if re.search(r"[a-zA-Z]", number.replace("\\frac", "")):
        return text
    return number


_UNIT_WORDS_TAIL_RE = re.compile(r"^(?P<head>.*?\S)\s+(?P<unit>(?:[a-zA-Z]{2,}\.?(?:\^\{?\d\}?)?\s*){1,3})$")


def strip_unit_words(text: str) -> str:
    """`12\\pi cm^2` -> `12\\pi`: unit words (two letters or more, after a space) at the end of an
    expression. Used only as a second try, after the answer failed as written."""
    match = _UNIT_WORDS_TAIL_RE.match(text)
    if match is None or match.group("head").rstrip().endswith("\\"):
        return text
    words = [re.sub(r"\^.*", "", w).rstrip(".").lower() for w in match.group("unit").split()]
    if any(w in _NOT_UNITS for w in words) or re.search(
        r"\\(?:sin|cos|tan|cot|sec|csc|log|ln|exp|lim|max|min|sqrt)$", match.group("head")
    ):
        return text
    return match.group("head")


# Spellings of the same text answer. Keys and values are in canonical text form.
_SYNONYMS = {
    "nosolution": "nosolution",
    "nosolutions": "nosolution",
    "norealsolution": "nosolution",
    "norealsolutions": "nosolution",
    "none": "nosolution",
    "nosuchnumber": "nosolution",
    "emptyset": "nosolution",
    "varnothing": "nosolution",
    "{}": "nosolution",
    "\\emptyset": "nosolution",
    "\\varnothing": "nosolution",
    "\\{\\}": "nosolution",
    "dne": "dne",
    "doesnotexist": "dne",
    "undefined": "dne",
    "infinity": "infinity",
    "\\infty": "infinity",
    "infty": "infinity",
    "inf": "infinity",
    "infinitelymany": "infinitelymany",
    "infinitelymanysolutions": "infinitelymany",
    "yes": "yes",
    "true": "yes",
    "no": "no",
    "false": "no",
    "even": "even",
    "odd": "odd",
}


def canonical_text(text: str) -> str:
    """Case-, space- and punctuation-free form of a text answer, with synonyms folded."""
    folded = re.sub(r"[\s.,;:!'\"`*]+", "", text.lower())
    folded = folded.replace("\\text", "").replace("\\mathrm", "")
    return _SYNONYMS.get(folded, folded)


def is_synonym_word(text: str) -> bool:
    """Whether a cleaned answer is one of the known text answers ("no solution", "DNE", ...)."""
    folded = re.sub(r"[\s.,;:!'\"`*]+", "", text.lower())
    return folded in _SYNONYMS
