"""Items/s against replica count on Ray Serve: latency-bound work (a judge) and CPU-bound work (math).

    .venv/bin/python benchmarks/scale_out.py [--replicas 1 2 4 8] [--latency 0.5] [--rounds 10]

Latency-bound: judge items against a scripted OpenAI-compatible server on loopback that answers every
request after a fixed delay (`--latency`; real LLM judges take seconds). Each judge replica keeps
`judge.concurrency` (4) requests in flight, so one replica does at most 4 / latency items/s and N
replicas should do N times that. Each measurement sends `rounds` x N x 4 items, so every replica count
runs for about the same time (rounds x latency) and pays the same ramp-up and tail.
CPU-bound: math items of uniform cost (a fraction against its decimal) on CPU-scorer replicas with one
worker process each; on a 2-core machine they cannot scale past 2, which the table shows.

Everything runs in one local Ray instance in this run; the baseline of each efficiency figure is the
1-replica throughput measured in the same run (efficiency = items/s at N / (N x items/s at 1)).
Target (issue 17): latency-bound efficiency >= 80% from 1 to 8 replicas.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "judges"))

from scripted_server import ScriptedJudges  # noqa: E402

from assay.settings import Settings  # noqa: E402
from assay.types import Status  # noqa: E402


class FixedLatencyJudges(ScriptedJudges):
    """The scripted judges, each answer held back by a fixed latency (a remote model's response time)."""

    def __init__(self, latency_s: float) -> None:
        super().__init__()
        self.latency_s = latency_s

    async def _answer(self, request_line: str, headers: dict[str, str], raw: bytes) -> Any:
        await asyncio.sleep(self.latency_s)
        answer = await super()._answer(request_line, headers, raw)
        self.requests.clear()  # the benchmark sends thousands; keep memory flat
        return answer


def judge_items(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"j{i}",
            "task": "judge",
            "prompt": f"Question {i}?",
            "response": f"Answer {i}.",
            "options": {},
        }
        for i in range(n)
    ]


def math_items(n: int) -> list[dict[str, Any]]:
    """Items of the same cost each (a case file mixes millisecond items with ones that hit the deadline)."""
    return [
        {
            "id": f"m{i}",
            "task": "math",
            "response": f"Dividing, the answer is \\boxed{{\\frac{{{i + 1}}}{{{2 * i + 4}}}}}.",
            "reference": str((i + 1) / (2 * i + 4)),
        }
        for i in range(n)
    ]


def settings_for(kind: str, replicas: int, judge_url: str) -> Settings:
    light = {"num_cpus": 0, "max_ongoing_requests": 2}
    return Settings(
        workers=1,
        judge={"base_url": judge_url, "model": "fixed-4", "concurrency": 4, "top_logprobs": 0, "retries": 0},
        ray={
            "app_name": "assay-bench",
            "chunk_size": 4,
            "scorers": {**light, "replicas": replicas if kind == "math" else 1, "workers": 1},
            "judge": {**light, "replicas": replicas if kind == "judge" else 1},
            "code": {**light, "replicas": 1},
            "prm": {**light, "replicas": 1},
        },
    )


def measure(settings: Settings, items: list[dict[str, Any]]) -> float:
    """Deploy (or rescale) the app, warm it up, then time one batch; items/s."""
    from assay.distributed import reward_handle

    handle = reward_handle(settings)
    if settings.ray.app_name in _deployed:
        from assay.distributed.deployments import deploy

        deploy(settings, http=False)  # an in-place update of replica counts
    _deployed.add(settings.ray.app_name)
    handle(items[: 4 * settings.ray.chunk_size])  # warm-up: replicas up, pools started
    started = time.perf_counter()
    results = handle(items)
    elapsed = time.perf_counter() - started
    bad = [r for r in results if r.status is not Status.OK]
    if bad:
        raise SystemExit(f"{len(bad)} items not ok, first: {bad[0].status.value}: {bad[0].reason}")
    return len(items) / elapsed


_deployed: set[str] = set()


def table(kind: str, rows: list[tuple[int, float]]) -> None:
    base = rows[0][1]
    print(f"\n{kind}: {'replicas':>8} {'items/s':>9} {'speed-up':>9} {'efficiency':>11}")
    for replicas, rate in rows:
        speedup = rate / base
        print(f"{'':{len(kind)}}  {replicas:>8} {rate:>9.1f} {speedup:>8.2f}x {speedup / replicas:>10.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--cpu-replicas", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--latency", type=float, default=0.5, help="judge answer latency, seconds")
    parser.add_argument("--rounds", type=int, default=10, help="judge items per measurement: rounds x N x 4")
    parser.add_argument("--math-items", type=int, default=400, help="math items per measurement")
    args = parser.parse_args()

    import ray
    from ray import serve

    server = FixedLatencyJudges(args.latency).start()
    ray.init(num_cpus=16, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        judge_rows = [
            (n, measure(settings_for("judge", n, server.base_url), judge_items(args.rounds * n * 4)))
            for n in args.replicas
        ]
        table("latency-bound (judge)", judge_rows)
        per_replica = 4 / args.latency
        print(f"ideal per replica: concurrency 4 / latency {args.latency}s = {per_replica:.1f} items/s")
        math_rows = [
            (n, measure(settings_for("math", n, server.base_url), math_items(args.math_items)))
            for n in args.cpu_replicas
        ]
        table("CPU-bound (math)", math_rows)
        last, rate = judge_rows[-1]
        efficiency = rate / (last * judge_rows[0][1])
        verdict = "met" if efficiency >= 0.8 else "NOT met"
        print(f"\nlatency-bound efficiency at {last} replicas: {efficiency:.0%} (target >= 80%: {verdict})")
    finally:
        serve.shutdown()
        ray.shutdown()
        server.stop()


if __name__ == "__main__":
    main()
