"""Checks on the prompts of a task set: duplicates, near-duplicates, and answers given away.

- Exact duplicates compare prompts after Unicode (NFKC) folding, case folding and collapsing whitespace.
  A repeat with the same reference is a `duplicate` warning (it weighs the prompt twice); a repeat with a
  different reference is a `conflicting_duplicate` error (one of the two references is wrong).
- Near-duplicates: MinHash over word 3-grams (characters for scripts written without spaces), candidate
  pairs from datasketch's LSH index, each confirmed by the exact Jaccard similarity of the shingle sets.
- `answer_in_prompt` (math): the reference appears in the prompt. After an answer cue ("the answer is",
  "Answer:", "hint", `\\boxed{}`) it is an error, since the task rewards copying; elsewhere a warning, since
  a number of the question may equal the answer by chance ("if x = 3, what is x^2 - 6?").
"""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from collections.abc import Sequence
from fractions import Fraction

from assay.types import Item
from assay.validate.report import TaskReport

NEAR_DUPLICATE_JACCARD = 0.8
_NUM_PERM = 64
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_SPACELESS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:/\d+)?(?![\w.]*\d)")
_CUE = re.compile(
    r"(?:\banswer\b|\bsolution\b|\bresult\b|\bhint\b|\bans\b|答案|答)\W{0,3}(?:\w+\W{1,3}){0,3}?(?:is|=|:|：|是|为)?\s*$",
    re.IGNORECASE,
)


def normalise(prompt: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", prompt).casefold().split())


def shingles(text: str) -> set[str]:
    """Word 3-grams; character 3-grams for text in a script written without spaces."""
    text = normalise(text)
    if _SPACELESS.search(text):
        chars = text.replace(" ", "")
        return {chars[i : i + 3] for i in range(max(1, len(chars) - 2))}
    words = _WORD.findall(text)
    return {" ".join(words[i : i + 3]) for i in range(max(1, len(words) - 2))}


def check_duplicates(reports: Sequence[TaskReport], items: Sequence[Item | None]) -> None:
    first: dict[tuple[str, str], int] = {}
    for index, item in enumerate(items):
        if item is None or not item.prompt:
            continue
        key = (item.task, normalise(item.prompt))
        seen = first.setdefault(key, index)
        if seen == index:
            continue
        earlier = items[seen]
        assert earlier is not None
        other = reports[seen].id
        if (earlier.reference or "").strip() != (item.reference or "").strip():
            reports[index].add(
                "conflicting_duplicate",
                f"the same prompt as task {other} with a different reference "
                f"({earlier.reference!r} there, {item.reference!r} here): one of them is wrong",
            )
        else:
            reports[index].add("duplicate", f"the same prompt as task {other}", "warning")


def near_duplicates_available() -> bool:
    return importlib.util.find_spec("datasketch") is not None


def check_near_duplicates(reports: Sequence[TaskReport], items: Sequence[Item | None]) -> bool:
    """Flag prompts whose shingle sets overlap by NEAR_DUPLICATE_JACCARD or more. False when datasketch
    is not installed (the caller says so); exact duplicates are left to `check_duplicates`."""
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError:
        return False
    index = MinHashLSH(threshold=NEAR_DUPLICATE_JACCARD, num_perm=_NUM_PERM)
    sets: dict[int, set[str]] = {}
    exact: set[tuple[str, str]] = set()
    for i, item in enumerate(items):
        if item is None or not item.prompt:
            continue
        key = (item.task, normalise(item.prompt))
        if key not in exact:  # an exact duplicate is reported as such
            exact.add(key)
            sets[i] = shingles(item.prompt)
    # One call for every sketch: MinHash.bulk shares the permutations (one sketch each draws its own).
    sketches = MinHash.bulk(
        ([g.encode("utf-8") for g in grams] for grams in sets.values()), num_perm=_NUM_PERM
    )
    for (i, grams), sketch in zip(sets.items(), sketches, strict=True):
        for j in sorted(int(k) for k in index.query(sketch)):
            other = items[j]
            if other is None or other.task != items[i].task:  # type: ignore[union-attr]
                continue
            similarity = len(grams & sets[j]) / len(grams | sets[j])
            if similarity >= NEAR_DUPLICATE_JACCARD:
                reports[i].add(
                    "near_duplicate",
                    f"prompt {similarity:.0%} similar to task {reports[j].id} (word 3-gram Jaccard)",
                    "warning",
                )
                break
        index.insert(str(i), sketch)
    return True


def _value(text: str) -> Fraction | None:
    text = text.strip().strip("$").replace(",", "")
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def check_answer_in_prompt(report: TaskReport, item: Item) -> None:
    """Math tasks only: where the reference can be read off the prompt."""
    if item.task != "math" or not item.prompt or not item.reference:
        return
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
        return
    cued = bool(boxed) or any(_CUE.search(prompt[max(0, start - 40) : start]) for start, _ in spans)
    if cued:
        report.add("answer_in_prompt", f"the prompt states the reference {gold!r} as its answer")
    else:
        report.add("answer_in_prompt", f"the reference {gold!r} appears in the prompt", "warning")
