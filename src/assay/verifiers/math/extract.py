"""The one extractor of a final answer from a model's full output (often a long chain of thought).

Order of preference, first hit wins:
1. `\\boxed{...}` / `\\fbox{...}` (nested braces) in the final region. Every box is returned: the
   comparer requires all of them to match, so several different boxes (a hedge) are never rewarded.
2. The last answer cue: "the (final) answer is", "**Final Answer**", "Answer:", "Final answer:".
3. The whole final region when it is only an answer (a bare "42" or "$x = 3$").
4. The last `$...$`, `$$...$$` or `\\[...\\]` of a final paragraph that concludes ("therefore",
   "thus", "so", "hence") in a response that does not look cut off.

The final region is the text after the last `</think>`. A `<think>` that never closes means the
response was cut off while thinking: only a box counts there. A response that ends mid-sentence with no
box or cue has no answer: its last number is an intermediate value, not an answer (math-verify 0.9.0
accepted such truncations when the last number happened to equal the gold).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from assay.verifiers.math.normalise import match_brace

_BOX_RE = re.compile(r"\\(?:boxed|fbox|framebox)\s*(\{|[^\s{])")
_CUE_RE = re.compile(
    r"(?:\*\*\s*final\s+answer\s*:?\s*\*\*\s*:?"
    r"|\bfinal\s+answer\s*(?:is|:|=)"
    r"|\bthe\s+(?:correct\s+)?answer\s+(?:is|would\s+be|should\s+be)\s*:?"
    r"|\banswer\s*:"
    r"|\bfinal\s+answer\b)",
    re.IGNORECASE,
)
_MATH_SEGMENT_RE = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\[(.+?)\\\]|\\\((.+?)\\\)", re.DOTALL)
_CONCLUDING_RE = re.compile(
    r"\b(?:therefore|thus|hence|so|consequently|answer|in conclusion|we get|we have|equals|is)\b|∴",
    re.IGNORECASE,
)
# Words that may sit between the math segments of one answer ("either $2$ or $3$", "$x=1$ and $x=2$").
_CONNECTOR_RE = re.compile(r"^[\s,;.:]*(?:either|or|and|both|&|,|;|\s)*[\s,;.:]*$", re.IGNORECASE)
_WORDS_RE = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}")
_BARE_MAX_CHARS = 160
_CUE_MAX_CHARS = 400


@dataclass(frozen=True)
class Extraction:
    """What was found: one or more answer strings (several only for boxes) and the rule that found them."""

    answers: tuple[str, ...]
    rule: str


@dataclass(frozen=True)
class NoAnswer:
    """Why nothing was found; the response then scores as incorrect."""

    reason: str


def find_boxes(text: str) -> list[str]:
    """Contents of every `\\boxed{...}`/`\\fbox{...}` in order; `\\boxed 5` takes the next token."""
    found: list[str] = []
    for match in _BOX_RE.finditer(text):
        if match.group(1) == "{":
            open_at = match.end() - 1
            close = match_brace(text, open_at)
            if close < 0:
                continue  # cut off inside the box: no answer here
            found.append(text[open_at + 1 : close].strip())
        else:
            token = re.match(r"[^\s$\\]+", text[match.start(1) :])
            if token:
                found.append(token.group(0).rstrip(".,;"))
    return [box for box in found if box]


def final_region(response: str) -> tuple[str, bool]:
    """The text after the last `</think>`, and whether the thinking never closed (truncated)."""
    close = response.rfind("</think>")
    if close >= 0:
        return response[close + len("</think>") :], False
    if "<think>" in response:
        return response, True
    return response, False


def _answer_after_cue(snippet: str) -> str | None:
    """The answer written right after a cue: its math, or the words up to the end of the sentence."""
    snippet = snippet.lstrip(" \t:*=\n").replace("**", "")
    if _BOX_RE.search(snippet):
        return None  # a box that never closed: the response was cut off inside its answer
    line = snippet.split("\n\n", 1)[0].strip()
    if not line:
        return None
    line = line[:_CUE_MAX_CHARS]
    segments = list(_MATH_SEGMENT_RE.finditer(line))
    if segments:
        between = [line[a.end() : b.start()] for a, b in itertools.pairwise(segments)]
        before = line[: segments[0].start()]
        if all(_CONNECTOR_RE.match(gap) for gap in between) and len(before.split()) <= 3:
            if len(segments) == 1:
                return _segment_text(segments[0])
            return line[segments[0].start() : segments[-1].end()]
        return _segment_text(segments[0])
    sentence = re.split(r"(?<=[^\d\s])\.(?:\s|$)|\.\s|\n|(?:,\s|\s)(?:because|since|which|as)\s", line)[0]
    return sentence.strip() or None


def _segment_text(match: re.Match[str]) -> str:
    return next(group for group in match.groups() if group is not None).strip()


def _looks_complete(text: str) -> bool:
    """A response that was cut off by the token limit usually stops mid-sentence or mid-formula."""
    tail = text.rstrip()
    return (bool(tail) and tail[-1] in ".!)]}$*") or tail.endswith(("\\]", "\\)"))


def _last_paragraph_math(region: str) -> str | None:
    paragraphs = [p for p in re.split(r"\n\s*\n", region.strip()) if p.strip()]
    if not paragraphs or not _looks_complete(region):
        return None
    last = paragraphs[-1]
    segments = list(_MATH_SEGMENT_RE.finditer(last))
    if not segments or not _CONCLUDING_RE.search(last):
        return None
    answer = _segment_text(segments[-1])
    # "... so $a + b = 12$": the value is what follows the last top-level "=".
    if "=" in answer and not re.search(r"\\(?:leq?|geq?|ne)|[<>]", answer):
        answer = answer.rsplit("=", 1)[1].strip()
    return answer or None


def _is_bare(region: str) -> bool:
    stripped = region.strip()
    if not stripped or len(stripped) > _BARE_MAX_CHARS or stripped.count("\n") > 1:
        return False
    return len(_WORDS_RE.findall(stripped)) <= 4


def extract(response: str, max_chars: int) -> Extraction | NoAnswer:
    """Find the final answer of `response` (see the module docstring for the rules and their order)."""
    text = response[-max_chars:] if len(response) > max_chars else response
    region, unclosed = final_region(text)
    if not region.strip():
        return NoAnswer("nothing after </think>")
    boxes = find_boxes(region)
    if boxes:
        return Extraction(tuple(boxes), "boxed")
    if unclosed:
        return NoAnswer("the thinking never closed (cut off) and nothing is boxed")
    cues = list(_CUE_RE.finditer(region))
    for cue in reversed(cues):
        answer = _answer_after_cue(region[cue.end() :])
        if answer:
            return Extraction((answer,), "answer-cue")
    if _is_bare(region):
        return Extraction((region.strip(),), "bare")
    answer = _last_paragraph_math(region)
    if answer:
        return Extraction((answer,), "last-math")
    if not _looks_complete(region):
        return NoAnswer("the response stops mid-sentence (cut off) without a final answer")
    return NoAnswer("no boxed answer, answer cue or concluding formula found")
