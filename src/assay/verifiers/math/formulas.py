"""Where the boxes and formulas of a response are: `\\boxed{...}` (nested braces) and the `$...$`,
`$$...$$`, `\\[...\\]`, `\\(...\\)` segments, found in one place for every rule of extract.py.

A dollar sign before a number in prose ("$18 every day") is currency, not the opening of a formula: a
"$...$" segment that starts with a digit and holds English words is not read as math.
"""

from __future__ import annotations

import re

from assay.verifiers.math.normalise import match_brace

BOX_RE = re.compile(r"\\(?:boxed|fbox|framebox)\s*(\{|[^\s{])")
# An escaped dollar (`\\$12.50`) is a currency sign inside a formula, never its end.
MATH_SEGMENT_RE = re.compile(
    r"\$\$(.+?)\$\$|(?<!\\)\$((?:\\\$|[^$])+?)(?<!\\)\$|\\\[(.+?)\\\]|\\\((.+?)\\\)", re.DOTALL
)
# An English word in a "$...$" that may be two prices; plain-text function names ("8*sqrt(7)") are math.
_PROSE_WORD_RE = re.compile(
    r"(?<![\\a-zA-Z])(?!(?:sqrt|exp|log|sin|cos|tan|frac|pi)(?![a-zA-Z]))[a-zA-Z]{3,}"
)


def find_boxes(text: str) -> list[str]:
    """Contents of every `\\boxed{...}`/`\\fbox{...}` in order; `\\boxed 5` takes the next token."""
    found: list[str] = []
    closing: dict[int, int] | None = None
    for match in BOX_RE.finditer(text):
        if match.group(1) == "{":
            open_at = match.end() - 1
            close = match_brace(text, open_at) if closing is None else closing.get(open_at, -1)
            if close < 0 and closing is None:
                # Unclosed boxes would each rescan to the end ("\\boxed{" x 10,000 took 17 s): pair
                # every brace once instead.
                closing = _brace_pairs(text)
            if close < 0:
                continue  # cut off inside the box: no answer here
            found.append(text[open_at + 1 : close].strip())
        else:
            token = re.match(r"[^\s$\\]+", text[match.start(1) :])
            if token:
                found.append(token.group(0).rstrip(".,;"))
    return [box for box in found if box]


def _brace_pairs(text: str) -> dict[int, int]:
    """Index of each `{` -> index of the `}` closing it, in one pass (the rules of `match_brace`)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for index, char in enumerate(text):
        if char not in "{}" or (index > 0 and text[index - 1] == "\\"):
            continue
        if char == "{":
            stack.append(index)
        elif stack:
            pairs[stack.pop()] = index
    return pairs


def math_segments(text: str) -> list[re.Match[str]]:
    """The `$...$`, `$$...$$`, `\\[...\\]`, `\\(...\\)` formulas of `text`, skipping currency.

    "$2, so she makes 9 * $" is two prices, not a formula: a single-dollar segment that starts with a
    digit and holds English words is skipped, and the scan resumes after its opening dollar.
    """
    found: list[re.Match[str]] = []
    position = 0
    while (match := MATH_SEGMENT_RE.search(text, position)) is not None:
        inline = match.group(2)
        if inline is not None and inline.lstrip()[:1].isdigit() and _PROSE_WORD_RE.search(inline):
            position = match.start() + 1
            continue
        found.append(match)
        position = match.end()
    return found


def segment_text(match: re.Match[str]) -> str:
    """The formula inside a segment found by `math_segments`, without its delimiters."""
    return next(group for group in match.groups() if group is not None).strip()


# Markdown bold markers, not a Python power between two operands ("5*x**2": normalise.py reads it).
_BOLD_MARK_RE = re.compile(r"(?<![\w)\]}])\*\*|\*\*(?![\w({-])")


def unbold(text: str) -> str:
    """`text` without markdown bold markers ("**55**" -> "55"), keeping a power written `x**2`."""
    return _BOLD_MARK_RE.sub("", text) if "**" in text else text
