"""POST /v1/groups against POST /v1/rewards on the same shape of work: 256 groups of 8 math responses.

    .venv/bin/python benchmarks/groups.py [--groups 256] [--size 8] [--rounds 4] [--workers 2]

One server (uvicorn in a thread, `--workers` scoring processes) serves both endpoints; the client is
`AssayClient` with the same batch size (256 items a request) for both. Each round builds two sets of the
same shape (same kinds of gold, same right/wrong pattern) with numbers no other set uses, so neither
endpoint finds the other's parsed expressions in the workers' caches; the sets swap endpoints every
round. They are scored in paired slices of `--slice` groups, alternating which endpoint goes first, so
both see the same load on a shared machine (whole sets run one after the other differed by up to 2x).
The golds mix fractions, surds and polynomials and the responses mix equivalent forms and wrong answers,
so the work is the math verifier's, not the HTTP layer's.

What /v1/groups saves: a group's items run as one worker task, so its gold and its repeated answers are
parsed once (the LaTeX parse dominates: about 20 ms per distinct expression here), where per-item
scheduling spreads a group over the workers and each parses them again; and one inter-process round
trip instead of G.

Target (issue 18): /v1/groups at least as fast as /v1/rewards (ratio >= 1.0).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from assay.api.local import local_service
from assay.client import AssayClient
from assay.settings import Settings


def _golds(rng: random.Random, offset: int) -> tuple[str, list[str], list[str]]:
    """(gold, equivalent answers, wrong answers) of one random problem; `offset` shifts its numbers."""
    a, b = rng.randint(2, 40) + offset, rng.randint(2, 40) + offset
    kind = rng.randrange(3)
    if kind == 0:
        gold = f"\\frac{{{a}}}{{{a + b}}}"
        return gold, [gold, f"{a}/{a + b}", f"\\frac{{{2 * a}}}{{{2 * (a + b)}}}"], [f"\\frac{{{b}}}{{{a}}}"]
    if kind == 1:
        gold = f"{a}\\sqrt{{{b + 1}}}"
        return gold, [gold, f"\\sqrt{{{b + 1}}} \\cdot {a}"], [f"{a + 1}\\sqrt{{{b + 1}}}", str(a * (b + 1))]
    gold = f"x^{{2}}+{a}x+{b}"
    return gold, [gold, f"{b}+{a}x+x^2", f"x^2+{b}+{a}x"], [f"x^2+{b}x+{a}", f"x^2-{a}x+{b}"]


def cpu_seconds() -> float:
    """CPU time of this process (client and server threads) and of its descendants (the forkserver and
    the scoring workers), read from /proc: on a shared machine it moves far less than wall time."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended while we looked
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        times[pid] = (int(fields[11]) + int(fields[12])) / tick
    mine = {os.getpid()}
    grew = True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in mine} - mine
        grew = bool(found)
        mine |= found
    return time.process_time() + sum(times.get(pid, 0.0) for pid in mine - {os.getpid()})


def make_groups(n_groups: int, size: int, seed: int, offset: int = 0) -> list[dict[str, Any]]:
    """Groups of one seed share their shape (kinds of gold, right/wrong pattern) whatever the offset."""
    rng = random.Random(seed)
    groups = []
    for g in range(n_groups):
        gold, right, wrong = _golds(rng, offset)
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
    parser.add_argument("--rounds", type=int, default=4, help="measured rounds, after one warm-up round")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256, help="items per request (whole groups)")
    parser.add_argument("--slice", type=int, default=32, help="groups per paired timing slice")
    args = parser.parse_args()
    n_items = args.groups * args.size
    times: dict[str, list[float]] = {"rewards": [], "groups": []}
    cpu: dict[str, list[float]] = {"rewards": [], "groups": []}
    with (
        local_service(Settings(workers=args.workers, queue_size=max(4096, n_items))) as url,
        AssayClient(url, batch_size=args.batch_size, concurrency=4, timeout_s=600) as client,
    ):
        client.score(make_groups(4, args.size, seed=-2)[0]["items"])  # start the workers
        for round_ in range(-1, args.rounds):  # round -1 warms both paths up and is not counted
            # the same shape of work for both, with numbers no other set used (cold caches for both)
            sets = [
                make_groups(args.groups, args.size, seed=round_, offset=100 * (2 * round_ + k + 3))
                for k in (0, 1)
            ]
            flat_set, group_set = sets if round_ % 2 == 0 else sets[::-1]
            spent = {"rewards": 0.0, "groups": 0.0}
            used = {"rewards": 0.0, "groups": 0.0}
            # Paired slices, alternating which endpoint goes first, so both see the same machine load
            # (this machine is shared; a whole-set run ahead of the other was up to 2x faster or slower).
            for index, start in enumerate(range(0, args.groups, args.slice)):
                flat = [item for g in flat_set[start : start + args.slice] for item in g["items"]]
                grouped = group_set[start : start + args.slice]
                for name in ("rewards", "groups") if index % 2 == 0 else ("groups", "rewards"):
                    started, cpu_before = time.perf_counter(), cpu_seconds()
                    if name == "rewards":
                        client.score(flat)
                    else:
                        client.score_groups(grouped)
                    spent[name] += time.perf_counter() - started
                    used[name] += cpu_seconds() - cpu_before
            label = "warm-up" if round_ < 0 else f"round {round_ + 1}"
            print(
                f"{label}: /v1/rewards {spent['rewards']:.2f}s, /v1/groups {spent['groups']:.2f}s", flush=True
            )
            if round_ >= 0:
                for name, seconds in spent.items():
                    times[name].append(seconds)
                    cpu[name].append(used[name])
        restarts = [
            line
            for line in httpx.get(url + "/metrics").text.splitlines()
            if line.startswith("assay_worker_restarts_total")
        ]
    rewards, groups = statistics.median(times["rewards"]), statistics.median(times["groups"])
    print(f"\n{args.groups} groups x {args.size} math items = {n_items} items, {args.workers} workers")
    print(f"/v1/rewards: median {rewards:.2f}s ({n_items / rewards:.0f} items/s)")
    print(f"/v1/groups:  median {groups:.2f}s ({n_items / groups:.0f} items/s), with per-group statistics")
    cpu_r, cpu_g = statistics.median(cpu["rewards"]), statistics.median(cpu["groups"])
    print(f"CPU seconds (server, client and workers): /v1/rewards {cpu_r:.2f}, /v1/groups {cpu_g:.2f}")
    print(f"CPU ratio (rewards / groups): {cpu_r / cpu_g:.2f}x")
    print(f"worker restarts (deadlines, crashes): {restarts or 'none'}")
    print(f"wall-time ratio (rewards time / groups time): {rewards / groups:.2f}x (target >= 1.0)")


if __name__ == "__main__":
    main()
