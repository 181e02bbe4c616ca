"""`answer_in_prompt`: the math reference can be read off the prompt (the math task's
`Validation.check_prompt`). After an answer cue ("the answer is", "Answer:", "hint", `\\boxed{}`) it is an
error, since the task rewards copying; elsewhere a warning, since a number of the question may equal the
answer by chance ("if x = 3, what is x^2 - 6?")."""

from __future__ import annotations

import re
from fractions import Fraction

from assay.registry import Finding
from assay.types import Item

_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:/\d+)?(?![\w.]*\d)")
_CUE = re.compile(
    r"(?:\banswer\b|\bsolution\b|\bresult\b|\bhint\b|\bans\b|答案|答)\W{0,3}(?:\w+\W{1,3}){0,3}?(?:is|=|:|：|是|为)?\s*$",
    re.IGNORECASE,
)


def _value(text: str) -> Fraction | None:
    text = text.strip().strip("$").replace(",", "")
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def answer_in_prompt(item: Item) -> list[Finding]:
    """Where the reference can be read off the prompt."""
    if not item.prompt or not item.reference:
        return []
    gold = item.reference.strip()
    prompt = item.prompt
    # Fixed patterns only: a pattern built from each gold would be compiled once per task (most of the
    # cost of validating 10,000 tasks, measured).
    boxed = [m.span() for m in _BOXED.finditer(prompt) if m.group(1).strip() == gold]
    if f"\\boxed{{{gold}}}" in prompt:  # a gold with braces of its own (\frac{1}{2})
        at = prompt.index(f"\\boxed{{{gold}}}")
        boxed.append((at, at + len(gold) + 8))
    spans = list(boxed)
    value = _value(gold)
    if value is not None:
        spans += [m.span() for m in _NUMBER.finditer(prompt) if _value(m.group()) == value]
    elif len(gold) >= 3:
        start = prompt.find(gold)
        while start != -1:
            spans.append((start, start + len(gold)))
            start = prompt.find(gold, start + 1)
    if not spans:
        return []
    cued = bool(boxed) or any(_CUE.search(prompt[max(0, start - 40) : start]) for start, _ in spans)
    if cued:
        return [Finding("answer_in_prompt", f"the prompt states the reference {gold!r} as its answer")]
    return [Finding("answer_in_prompt", f"the reference {gold!r} appears in the prompt", "warning")]
