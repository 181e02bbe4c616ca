"""Every math Result over fixed inputs, one JSON line each, to compare two versions of the verifier.

    .venv/bin/python benchmarks/math_verdicts.py OUT.jsonl [--pairs 3000] [--seeds 0 1]
    .venv/bin/python benchmarks/math_verdicts.py --diff BEFORE.jsonl AFTER.jsonl

A change meant only to make the verifier faster must leave every Result as it was. The inputs: the
(gold, prediction) pairs of math-verify 0.9.0's own test suite (read at run time, as
benchmarks/mathverify_suite.py reads them), `--pairs` pairs of the rule-blind generator
(tests/verifiers/math/math_pairs.py) for each seed, and the case files tests/cases/math*.jsonl. Run it
with the old tree on PYTHONPATH, then the new, then `--diff`: it prints the number of differences (the
target is 0) and the first few. `elapsed_ms` is left out (it differs on every run).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.settings import Settings
from assay.types import Item
from assay.verifiers.math import MathOptions, MathScorer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "verifiers" / "math"))
from math_pairs import draw  # noqa: E402


def inputs(pairs: int, seeds: list[int], cache: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, item fields) in a fixed order."""
    from mathverify_suite import fetch, rows_of

    count = 0
    for path in sorted(fetch(cache).glob("test_*.py")):
        for row in rows_of(path)[0]:
            yield f"math-verify:{count}", {"response": row.pred, "reference": row.gold}
            count += 1
    for seed in seeds:
        rng = random.Random(seed)
        for index in range(pairs):
            pair = draw(rng)
            fields = {"response": pair.response, "reference": pair.gold, "prompt": pair.prompt}
            yield f"generated:{seed}:{index}", fields
    for path in sorted((ROOT / "tests" / "cases").glob("math*.jsonl")):
        for index, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if line.strip():
                case = json.loads(line)
                fields = {k: case.get(k) for k in ("response", "reference", "prompt")}
                yield f"{path.name}:{index}", fields


def dump(out: Path, pairs: int, seeds: list[int], cache: Path) -> None:
    scorer, options = MathScorer(Settings(workers=1, plugins=[])), MathOptions()
    with out.open("w", encoding="utf-8") as handle:
        for key, fields in inputs(pairs, seeds, cache):
            result = scorer.score(Item(task="math", **fields), options).model_dump(mode="json")
            result.pop("elapsed_ms", None)
            handle.write(json.dumps({"key": key, "result": result}, sort_keys=True) + "\n")


def diff(before: Path, after: Path, show: int = 10) -> int:
    old = [json.loads(line) for line in before.read_text(encoding="utf-8").splitlines()]
    new = [json.loads(line) for line in after.read_text(encoding="utf-8").splitlines()]
    if [r["key"] for r in old] != [r["key"] for r in new]:
        print("the two files hold different inputs")
        return 2
    changed = [(a["key"], a["result"], b["result"]) for a, b in zip(old, new, strict=True) if a != b]
    print(f"{len(old)} inputs, {len(changed)} differences")
    for key, was, now in changed[:show]:
        print(f"  {key}\n    before {json.dumps(was)[:300]}\n    after  {json.dumps(now)[:300]}")
    return 1 if changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--diff", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--pairs", type=int, default=3000, help="generated pairs per seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "assay-mathverify-suite")
    args = parser.parse_args()
    if args.diff:
        return diff(*args.diff)
    if args.out is None:
        parser.error("give OUT.jsonl or --diff BEFORE AFTER")
    dump(args.out, args.pairs, args.seeds, args.cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
