"""POST /v1/groups against POST /v1/rewards on the same shape of work: 256 groups of 8 math responses.

    .venv/bin/python benchmarks/groups.py [--groups 256] [--size 8] [--rounds 3] [--workers 2]

One server (uvicorn in a thread, `--workers` scoring processes) serves both endpoints; the client is
`AssayClient` with the same batch size (256 items a request) and concurrency for both. Each round builds
two fresh sets of the same shape (new random golds, so neither endpoint finds the other's parsed golds in
the workers' caches), scores one through each endpoint, and alternates which goes first. The golds mix
fractions, surds and polynomials (parsed with sympy) and the responses mix equivalent forms and wrong
answers, so the work per item is the math verifier's, not the HTTP layer's.

Target (issue 18): /v1/groups at least as fast as /v1/rewards (ratio >= 1.0).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from assay.client import AssayClient
from assay.rl_client.service import local_service
from assay.settings import Settings


def _golds(rng: random.Random) -> tuple[str, list[str], list[str]]:
    """(gold, equivalent answers, wrong answers) of one random problem."""
    a, b = rng.randint(2, 40), rng.randint(2, 40)
    kind = rng.randrange(3)
    if kind == 0:
        gold = f"\\frac{{{a}}}{{{a + b}}}"
        return gold, [gold, f"{a}/{a + b}", f"\\frac{{{2 * a}}}{{{2 * (a + b)}}}"], [f"\\frac{{{b}}}{{{a}}}"]
    if kind == 1:
        gold = f"{a}\\sqrt{{{b + 1}}}"
        return gold, [gold, f"\\sqrt{{{b + 1}}} \\cdot {a}"], [f"{a + 1}\\sqrt{{{b + 1}}}", str(a * (b + 1))]
    gold = f"x^{{2}}+{a}x+{b}"
    return gold, [gold, f"{b}+{a}x+x^2", f"x^2+{b}+{a}x"], [f"x^2+{b}x+{a}", f"x^2-{a}x+{b}"]


def make_groups(n_groups: int, size: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    groups = []
    for g in range(n_groups):
        gold, right, wrong = _golds(rng)
        items = []
        for s in range(size):
            answer = rng.choice(right if rng.random() < 0.5 else wrong)
            response = f"Working through it step by step, the result is $\\boxed{{{answer}}}$."
            items.append({"id": f"{g}/{s}", "task": "math", "response": response, "reference": gold})
        groups.append({"id": str(g), "items": items})
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=256)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    n_items = args.groups * args.size
    times: dict[str, list[float]] = {"rewards": [], "groups": []}
    with (
        local_service(Settings(workers=args.workers, queue_size=max(4096, n_items))) as url,
        AssayClient(url, batch_size=256, concurrency=4, timeout_s=600) as client,
    ):
        client.score(make_groups(4, args.size, seed=-1)[0]["items"])  # start the workers
        for round_ in range(args.rounds):
            flat_set = make_groups(args.groups, args.size, seed=2 * round_)
            group_set = make_groups(args.groups, args.size, seed=2 * round_ + 1)
            flat = [item for g in flat_set for item in g["items"]]
            order = ["rewards", "groups"] if round_ % 2 == 0 else ["groups", "rewards"]
            for name in order:
                started = time.perf_counter()
                if name == "rewards":
                    client.score(flat)
                else:
                    client.score_groups(group_set)
                times[name].append(time.perf_counter() - started)
            last = {name: f"{seconds[-1]:.2f}s" for name, seconds in times.items()}
            print(
                f"round {round_ + 1}: /v1/rewards {last['rewards']}, /v1/groups {last['groups']}", flush=True
            )
    rewards, groups = statistics.median(times["rewards"]), statistics.median(times["groups"])
    print(f"\n{args.groups} groups x {args.size} math items = {n_items} items, {args.workers} workers")
    print(f"/v1/rewards: median {rewards:.2f}s ({n_items / rewards:.0f} items/s)")
    print(f"/v1/groups:  median {groups:.2f}s ({n_items / groups:.0f} items/s), with per-group statistics")
    print(f"ratio (rewards time / groups time): {rewards / groups:.2f}x (target >= 1.0)")


if __name__ == "__main__":
    main()
