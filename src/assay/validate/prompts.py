"""Checks on the prompts of a task set: duplicates, near-duplicates, and what each task checks itself.

- Exact duplicates compare prompts after Unicode (NFKC) folding, case folding and collapsing whitespace.
  A repeat with the same reference is a `duplicate` warning (it weighs the prompt twice); a repeat with a
  different reference is a `conflicting_duplicate` error (one of the two references is wrong).
- Near-duplicates: MinHash over word 3-grams (characters for scripts written without spaces), candidate
  pairs from datasketch's LSH index, each confirmed by the exact Jaccard similarity of the shingle sets.
- What a task checks of its own prompts (`Validation.check_prompt`: math's `answer_in_prompt`) is in the
  task's folder; `check_prompt` applies it.
"""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from collections.abc import Sequence

from assay.registry import Scorer
from assay.types import Item
from assay.validate.report import TaskReport

NEAR_DUPLICATE_JACCARD = 0.8
_NUM_PERM = 64
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_SPACELESS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


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


def check_prompt(report: TaskReport, scorer: type[Scorer], item: Item) -> None:
    """The task's own checks of what it was given (`Validation.check_prompt`), before any probe."""
    for finding in scorer.validation.check_prompt(item):
        report.add(finding.check, finding.reason, finding.severity)
