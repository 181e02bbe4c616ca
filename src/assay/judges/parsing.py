"""Reading a score or a verdict out of a judge's text, and G-Eval's probability-weighted score.

Scores: a constrained JSON answer (`{"score": N}`, structured.py) is read first; else the last `[RESULT] N`
wins; failing that, the last "score: N" / "rating: N", then the last
"N/high", then a text that is only a number. Anything else, or a number outside the scale, raises
`JudgeUnparseable` with the raw text: a guessed score would be a reward made up by the parser.

G-Eval (Liu et al., 2023): instead of the sampled score token, take the probabilities the judge gave each
score at that position (`top_logprobs`), renormalise them over the valid scores and use the expected
score. It separates "certainly 4" from "4 or 2, undecided" and breaks ties between responses. It needs
each score to be a single token, so it applies to scales within 0..9 only; otherwise, or when the backend
returns no logprobs, or when the score token cannot be located, the parsed score is used as is.

Pairwise verdicts: a JSON answer (`{"verdict": "A"}`), else the last `[[A]]`-style marker, else prose as
small judges write it ("A is better", "Response B is better", "I prefer answer A", "it's a tie"): the
last such phrase wins. Anything else is `JudgeUnparseable`, never a guess.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from assay.judges.client import ChatReply
from assay.judges.failures import JudgeUnparseable
from assay.judges.structured import json_field

_NUMBER = r"(-?\d+(?:\.\d+)?)"
_SCORE_PATTERNS = (
    re.compile(r"\[RESULT\]\s*[:=\-]?\s*\**\s*\(?" + _NUMBER, re.IGNORECASE),
    re.compile(r"\b(?:score|rating)\b\s*(?:is|of|:|=)?\s*\**\s*" + _NUMBER, re.IGNORECASE),
)
_RAW_CHARS = 2000


@dataclass(frozen=True)
class ParsedScore:
    value: float  # the score read from the text
    start: int  # where its digits start in the text (to find its token)
    end: int


def parse_score(text: str, low: int, high: int) -> ParsedScore:
    """The judge's score on the `low..high` scale, or JudgeUnparseable with the raw text."""
    constrained = json_field(text, "score")
    if constrained is not None:
        value, start, end = constrained
        if isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high:
            return ParsedScore(float(value), start, end)
        raise JudgeUnparseable(
            f"the judge's JSON score {value!r} is not on {low}..{high}", raw=text[:_RAW_CHARS]
        )
    patterns = [*_SCORE_PATTERNS, re.compile(_NUMBER + rf"\s*/\s*{high}\b")]
    for pattern in patterns:
        matches = list(pattern.finditer(text))
        if matches:
            return _checked(matches[-1], text, low, high)
    whole = re.fullmatch(r"\s*" + _NUMBER + r"\s*\.?\s*", text)
    if whole:
        return _checked(whole, text, low, high)
    raise JudgeUnparseable("the judge's answer holds no score", raw=text[:_RAW_CHARS])


def _checked(match: re.Match[str], text: str, low: int, high: int) -> ParsedScore:
    value = float(match.group(1))
    if not low <= value <= high:
        raise JudgeUnparseable(
            f"the judge's score {match.group(1)} is outside the scale {low}..{high}", raw=text[:_RAW_CHARS]
        )
    return ParsedScore(value, match.start(1), match.end(1))


def weighted_score(
    completion: ChatReply, parsed: ParsedScore, low: int, high: int
) -> dict[int, float] | None:
    """The judge's probability for each score at the score token's position, or None if unavailable."""
    if low < 0 or high > 9 or not completion.tokens or not parsed.value.is_integer():
        return None
    offset = 0
    for token in completion.tokens:
        end = offset + len(token.token)
        if offset <= parsed.start < end:
            if token.token.strip() != completion.text[parsed.start : parsed.end]:
                return None  # the score shares its token with other text: no clean distribution
            return _distribution(token.top or ((token.token, token.logprob),), low, high)
        offset = end
    return None  # tokens do not add up to the text (e.g. byte tokens): keep the parsed score


def _distribution(top: tuple[tuple[str, float], ...], low: int, high: int) -> dict[int, float] | None:
    mass: dict[int, float] = {}
    for token, logprob in top:
        text = token.strip()
        if text.isdigit() and low <= int(text) <= high:
            mass[int(text)] = mass.get(int(text), 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if total <= 0.0:
        return None
    return {score: p / total for score, p in sorted(mass.items())}


def expected(distribution: dict[int, float]) -> float:
    return sum(score * p for score, p in distribution.items())


_JSON_VERDICTS = {"A": "[[A]]", "B": "[[B]]", "TIE": "[[C]]"}
# The letters are case-sensitive (so "a better answer" is not a verdict); the words around them are not.
_WHO = r"(?:\b(?i:answer|response|assistant|output)\s+)?(?<!\w)\(?([AB])\)?(?!\w)"
_PROSE = (  # (pattern, marker or None: the letter it captured)
    (
        re.compile(_WHO + r"(?i:\s+is\s+(?:the\s+|much\s+|clearly\s+)?(?:better|best|preferred|superior))\b"),
        None,
    ),
    (re.compile(r"\b(?i:prefer(?:red)?\s+(?:is\s+)?)" + _WHO), None),
    (re.compile(_WHO + r"(?i:\s+(?:wins|is\s+the\s+winner))\b"), None),
    (re.compile(r"(?i)\b(?:it'?s\s+a\s+tie|(?:both|they)\s+are\s+equally\s+(?:good|bad))\b"), "[[C]]"),
)


def parse_verdict(text: str, verdicts: dict[str, str]) -> str:
    """The judge's verdict mapped through `verdicts` (marker -> name), or JudgeUnparseable."""
    pairwise = "[[A]]" in verdicts
    constrained = json_field(text, "verdict") if pairwise else None
    if constrained is not None and str(constrained[0]).upper() in _JSON_VERDICTS:
        return verdicts[_JSON_VERDICTS[str(constrained[0]).upper()]]
    names = "|".join(re.escape(marker[2:-2]) for marker in verdicts)
    matches = list(re.finditer(rf"\[\[\s*({names})\s*\]\]", text, re.IGNORECASE))
    if matches:
        return verdicts[f"[[{matches[-1].group(1).upper()}]]"]
    found = _prose_verdict(text) if pairwise else None
    if found is None or found not in verdicts:
        raise JudgeUnparseable("the judge's answer holds no verdict", raw=text[:_RAW_CHARS])
    return verdicts[found]


def _prose_verdict(text: str) -> str | None:
    """The marker of the last verdict phrase in prose ("A is better"), or None."""
    last: tuple[int, str] | None = None
    for pattern, marker in _PROSE:
        for match in pattern.finditer(text):
            found = marker or f"[[{match.group(1).upper()}]]"
            if last is None or match.start() >= last[0]:
                last = (match.start(), found)
    return None if last is None else last[1]
