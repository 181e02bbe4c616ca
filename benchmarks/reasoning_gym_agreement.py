"""Assay's math verdict vs reasoning-gym's own scorer on correct answers, per reasoning-gym dataset.

    .venv/bin/python benchmarks/reasoning_gym_agreement.py [--items 20] [--seed 0] [--show 2]

Every dataset whose answers are numbers or expressions (decided by its generated golds: all `--items`
golds must read as a number, an expression in a variable, or a construction such as countdown's
"94*4 - 61 - 6"; assay.verifiers.reasoning_gym.forms) is drawn with `--seed`. Each gold is written four
ways, all correct: as it is, in another notation (1/2 for 0.5, `\\frac{a}{b}` for a/b, `x^{2}` and `2x`
for `x**2` and `2*x`), re-spaced, and inside a sentence; each goes into `<answer>` tags. Assay's math
verifier judges the whole response against the gold; the dataset's own `score_answer` judges the tag's
text (reasoning-gym's convention), behind the task's guard. The share of (item, form) pairs where one
accepts (score 1) and the other does not is printed per dataset, with examples.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter, defaultdict
from fractions import Fraction
from typing import Any

from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer
from assay.verifiers.reasoning_gym import forms, library
from assay.verifiers.reasoning_gym.guard import refusal

MATHS = ("number", "expression", "construction")


def _latex(expr: str) -> str:
    """`2*x**10 - x` as a person types it in LaTeX: `2x^{10} - x`."""
    text = re.sub(r"\*\*(\([^()]*\)|\d+|[A-Za-z])", lambda m: "^{" + m.group(1).strip("()") + "}", expr)
    return re.sub(r"(\d)\*(?=[A-Za-z(])", r"\1", text)


def notation(gold: str, form: str) -> str:
    """The gold in another notation (exact: a decimal becomes its fraction)."""
    if form != "number":
        return _latex(gold)
    plain = gold.strip("$ ")
    if re.fullmatch(r"-?\d+", plain):
        return f"{plain}.0"
    if re.fullmatch(r"-?\d+/\d+", plain):
        top, bottom = plain.split("/")
        return f"\\frac{{{top}}}{{{bottom}}}"
    try:
        value = Fraction(plain)
    except ValueError:
        return f"${plain}$"
    return f"{value.numerator}/{value.denominator}"


def spacing(gold: str) -> str:
    squeezed = re.sub(r"\s+", "", gold)
    # spaces around the operators, never inside a number ("1e-18", "-5" at the start)
    spaced = re.sub(r"(?<=[\w)])\s*([-+*/])\s*(?=[\w(])", r" \1 ", gold)
    return squeezed if squeezed != gold else re.sub(r"(\d[eE]) - (\d)", r"\1-\2", spaced)


def written(gold: str, form: str) -> list[tuple[str, str]]:
    return [
        ("gold", gold),
        ("notation", notation(gold, form)),
        ("spacing", spacing(gold)),
        ("sentence", f"The answer is {gold}."),
    ]


def maths_family(name: str, items: int, seed: int) -> tuple[list[dict[str, Any]], list[str]] | None:
    """The dataset's entries and their golds' forms, when every gold is a number or an expression."""
    try:
        data = library.dataset(name, items, seed)
    except Exception:  # a dataset that needs a config (composite) or data it lacks
        return None
    entries, kinds = [], []
    for index in range(items):
        entry = data[index]
        gold = entry.get("answer")
        kind = forms.form_of(str(gold)) if gold is not None else "other"
        if kind not in MATHS:
            return None
        entries.append(entry)
        kinds.append(kind)
    return entries, kinds


def judge(math: MathScorer, name: str, entry: dict[str, Any], text: str) -> tuple[bool, bool]:
    """(Assay's math verdict, reasoning-gym's own) on `text` answering `entry`."""
    gold = str(entry["answer"])
    item = Item(task="math", prompt=entry["question"], response=f"<answer>{text}</answer>", reference=gold)
    assay = bool(math.score(item, MathOptions()).correct)
    wire = {**entry, "metadata": library.as_json(entry.get("metadata") or {})}
    own = refusal(text) is None and library.own_score(name, text, wire) >= 1.0
    return assay, own


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=20, help="items drawn per dataset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=2, help="disagreements to list per dataset")
    args = parser.parse_args()
    started = time.perf_counter()
    math = MathScorer(Settings())
    pairs: Counter[str] = Counter()
    differ: dict[str, list[tuple[str, str, bool, bool]]] = defaultdict(list)
    kinds: dict[str, Counter[str]] = {}
    by_form: Counter[str] = Counter()
    for name in library.names():
        found = maths_family(name, args.items, args.seed)
        if found is None:
            continue
        entries, golds = found
        kinds[name] = Counter(golds)
        for entry, kind in zip(entries, golds, strict=True):
            for label, text in written(str(entry["answer"]), kind):
                pairs[name] += 1
                assay, own = judge(math, name, entry, text)
                if assay != own:
                    differ[name].append((label, text, assay, own))
                    by_form[label] += 1
    total = sum(pairs.values())
    disagree = sum(len(v) for v in differ.values())
    print(f"{len(pairs)} datasets answer in numbers or expressions; {total} (item, form) pairs, all correct")
    print(f"Assay and reasoning-gym disagree on {disagree} ({100 * disagree / max(total, 1):.1f}%)")
    print(f"by form: {dict(sorted(by_form.items()))}")
    print(f"\n{'dataset':<28}{'golds':<34}{'pairs':>6}{'differ':>8}{'share':>8}  Assay-only / rg-only")
    for name in sorted(pairs, key=lambda n: (-len(differ[n]) / pairs[n], n)):
        rows = differ[name]
        shapes = ", ".join(f"{k} {c}" for k, c in kinds[name].most_common())
        only = (sum(a for _, _, a, _ in rows), sum(o for _, _, _, o in rows))
        share = 100 * len(rows) / pairs[name]
        print(f"{name:<28}{shapes:<34}{pairs[name]:>6}{len(rows):>8}{share:>7.1f}%  {only[0]} / {only[1]}")
        for label, text, assay, _ in sorted(rows, key=lambda r: r[2])[: args.show]:
            says = "Assay accepts, rg rejects" if assay else "rg accepts, Assay rejects"
            print(f"    {label:<9} {text[:70]!r}: {says}")
    print(f"\n{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
