"""Assay's `math` verifier next to math-verify called the way verl calls it, on labelled case files.

    .venv/bin/python benchmarks/math_verify.py [--cases PATH [PATH ...]] [--repeat N] [--verbose]

By default both tests/cases/math.jsonl (the development set) and tests/cases/math_wild.jsonl (a second
set written from how real models answer) are run, one table each.

Both run in this one process on one core, in the same run, so the throughput ratio is fair on a noisy
machine. verl's `math_verify` reward builds
`math_metric(gold_extraction_target=(LatexExtractionConfig(),),
             pred_extraction_target=(ExprExtractionConfig(), LatexExtractionConfig()))`
and calls it with the gold wrapped as `\\boxed{gold}`; an exception scores 0 (as in verl). math-verify
keeps its default SIGALRM timeouts here (verl's call does; this is the main thread, where they work).

A third pass runs the whole set through the real pipeline (Engine, 2 workers) to check the deadline
target: no item may take longer than its deadline plus 0.5 s.

Targets (issue 3): FN <= 2%, FP <= 1%, throughput >= 5x math-verify per core.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay.engine.scoring import Engine
from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer

CASES_DIR = Path(__file__).resolve().parents[1] / "tests" / "cases"
CASES = [CASES_DIR / "math.jsonl", CASES_DIR / "math_wild.jsonl"]


def load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def verl_math_verify() -> Callable[[str, str, str | None], bool]:
    """The reward function of verl's `verl/utils/reward_score/math_verify.py`, rebuilt from its docs."""
    # This file is named math_verify.py; as a script its folder comes first on sys.path and would shadow
    # the package.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    from math_verify.errors import TimeoutException
    from math_verify.metric import math_metric
    from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig

    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    verify = math_metric(
        gold_extraction_target=(LatexExtractionConfig(),),
        pred_extraction_target=(ExprExtractionConfig(), LatexExtractionConfig()),
    )

    def score(response: str, reference: str, prompt: str | None = None) -> bool:  # no use for a prompt
        try:
            value, _ = verify(["\\boxed{" + reference + "}"], [response])
        except (Exception, TimeoutException):
            return False
        return value >= 1.0

    return score


def assay_scorer() -> Callable[[str, str, str | None], bool]:
    scorer = MathScorer(Settings(workers=1, plugins=[]))
    options = MathOptions()

    def score(response: str, reference: str, prompt: str | None = None) -> bool:
        item = Item(task="math", response=response, reference=reference, prompt=prompt)
        return scorer.score(item, options).correct is True

    return score


def measure(
    name: str, score: Callable[[str, str, str | None], bool], cases: list[dict[str, Any]], repeat: int
) -> dict[str, Any]:
    fn: list[str] = []
    fp: list[str] = []
    slowest = 0.0
    started = time.perf_counter()
    for _ in range(repeat):
        fn.clear()
        fp.clear()
        for case in cases:
            begin = time.perf_counter()
            correct = score(case["response"], case["reference"], case.get("prompt"))
            slowest = max(slowest, time.perf_counter() - begin)
            if case["label"] and not correct:
                fn.append(case["id"])
            elif not case["label"] and correct:
                fp.append(case["id"])
    elapsed = time.perf_counter() - started
    positives = sum(1 for c in cases if c["label"])
    negatives = len(cases) - positives
    return {
        "name": name,
        "fn_rate": len(fn) / positives,
        "fp_rate": len(fp) / negatives,
        "items_per_s": repeat * len(cases) / elapsed,
        "slowest_s": slowest,
        "fn": list(fn),
        "fp": list(fp),
    }


def engine_deadline_check(cases: list[dict[str, Any]]) -> tuple[float, float, int]:
    """(slowest item in s, the deadline, items not `ok`) through the real pipeline with 2 workers."""
    settings = Settings(workers=2, plugins=[])
    items = [
        {"id": c["id"], "task": "math", "response": c["response"], "reference": c["reference"]} for c in cases
    ]
    results = []
    with Engine(settings) as engine:
        engine.score(items[:4])  # start the workers before timing
        # Batches of one item per worker: elapsed_ms then measures the item, not its wait in the queue.
        for start in range(0, len(items), settings.workers):
            results.extend(engine.score(items[start : start + settings.workers]))
    slowest = max(r.elapsed_ms for r in results) / 1000.0
    return slowest, settings.math.deadline_s, sum(1 for r in results if r.status.value != "ok")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=Path, nargs="+", default=CASES, help="JSON Lines case files")
    parser.add_argument("--repeat", type=int, default=1, help="passes over the set for Assay (timing only)")
    parser.add_argument("--verbose", action="store_true", help="list the failing ids")
    args = parser.parse_args()
    assay_score = assay_scorer()
    assay_score("warm up \\boxed{1}", "1")
    baseline = verl_math_verify()
    everything: list[dict[str, Any]] = []
    for path in args.cases:
        cases = load(path)
        everything.extend(cases)
        report(path, cases, baseline, assay_score, args.repeat, args.verbose)
    slowest, deadline, not_ok = engine_deadline_check(everything)
    verdict = "ok" if slowest <= deadline + 0.5 else "OVER"
    print(
        f"engine, 2 workers, all {len(everything)} cases: slowest item {slowest:.3f}s vs deadline"
        f" {deadline:g}s + 0.5s: {verdict}; not ok: {not_ok}"
    )


def report(
    path: Path,
    cases: list[dict[str, Any]],
    baseline: Callable[[str, str, str | None], bool],
    assay_score: Callable[[str, str, str | None], bool],
    repeat: int,
    verbose: bool,
) -> None:
    """One table: math-verify and Assay on the cases of one file, and the throughput ratio."""
    rows = [
        measure("math-verify (verl)", baseline, cases, 1),
        measure("assay", assay_score, cases, repeat),
    ]
    print(f"\n{len(cases)} cases from {path}")
    print(f"{'verifier':<20} {'FN rate':>8} {'FP rate':>8} {'items/s':>9} {'slowest s':>10}")
    for row in rows:
        print(
            f"{row['name']:<20} {row['fn_rate']:>8.1%} {row['fp_rate']:>8.1%} "
            f"{row['items_per_s']:>9.1f} {row['slowest_s']:>10.3f}"
        )
        if verbose:
            print(f"  FN: {row['fn']}\n  FP: {row['fp']}")
    ratio = rows[1]["items_per_s"] / rows[0]["items_per_s"]
    print(f"throughput ratio assay / math-verify (one core, same run): {ratio:.1f}x (target >= 5x)")


if __name__ == "__main__":
    main()
