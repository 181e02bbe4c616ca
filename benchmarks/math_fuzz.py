"""Rule-blind generated pairs through Assay's `math` verifier: FP per mutation, FN per rendering.

    .venv/bin/python benchmarks/math_fuzz.py [--pairs 20000] [--seed 0] [--show 5]

The pairs come from tests/verifiers/math/math_pairs.py, a model of answers built on sympy that knows
nothing of the verifier's rules: rewrites of a gold (must be accepted) and near-misses (must be rejected),
inside realistic chains of thought. Targets (issue 30): near-miss FP 0, rewrite FN <= 0.5%, including the
answer styles of tests/verifiers/math/answer_styles.py (other languages, letters in prose, times,
complements, percents, decimal commas, restated prompts, corrections and checks).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "verifiers" / "math"))
from math_pairs import Pair, draw


def _rates(title: str, totals: Counter[str], errors: Counter[str]) -> None:
    print(f"\n{title}")
    for key in sorted(totals, key=lambda k: (-errors[k] / totals[k], k)):
        print(f"  {key:<34}{errors[key]:>6} / {totals[key]:<6}{100 * errors[key] / totals[key]:>7.2f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="examples of each error class to print")
    args = parser.parse_args()
    scorer, options = MathScorer(Settings(workers=1, plugins=[])), MathOptions()
    rng = random.Random(args.seed)
    totals: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
    errors: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
    examples: list[tuple[Pair, str]] = []
    not_ok = 0
    start = time.perf_counter()
    for _ in range(args.pairs):
        pair = draw(rng)
        item = Item(task="math", response=pair.response, reference=pair.gold, prompt=pair.prompt)
        result = scorer.score(item, options)
        not_ok += result.status.value != "ok"
        key = f"{pair.kind}/{pair.form}"
        for name in (key, f"wrapper:{pair.wrapper}"):
            totals[pair.label][name] += 1
        if (result.correct is True) != pair.label:
            errors[pair.label][key] += 1
            errors[pair.label][f"wrapper:{pair.wrapper}"] += 1
            if sum(1 for p, _ in examples if (p.kind, p.form) == (pair.kind, pair.form)) < args.show:
                examples.append((pair, result.reason))
    elapsed = time.perf_counter() - start
    positives = sum(v for k, v in totals[True].items() if not k.startswith("wrapper:"))
    negatives = sum(v for k, v in totals[False].items() if not k.startswith("wrapper:"))
    fn = sum(v for k, v in errors[True].items() if not k.startswith("wrapper:"))
    fp = sum(v for k, v in errors[False].items() if not k.startswith("wrapper:"))
    print(f"{args.pairs} generated pairs (seed {args.seed}) in {elapsed:.0f} s, {not_ok} not scored ok")
    print(f"rewrites:    {positives:>6}  FN {fn:>5}  ({100 * fn / max(positives, 1):.2f}%)  target <= 0.5%")
    print(f"near-misses: {negatives:>6}  FP {fp:>5}  ({100 * fp / max(negatives, 1):.2f}%)  target 0")
    _rates("FN per rendering (kind/rendering and wrapper):", totals[True], errors[True])
    _rates("FP per mutation (kind/mutation and wrapper):", totals[False], errors[False])
    if examples:
        print("\nexamples:")
        for pair, reason in examples:
            tail = pair.response[-90:].replace("\n", " ")
            print(
                f"  {'FN' if pair.label else 'FP'} {pair.kind}/{pair.form}: gold={pair.gold!r}",
                f"...{tail!r} -> {reason[:100]}",
            )


if __name__ == "__main__":
    main()
