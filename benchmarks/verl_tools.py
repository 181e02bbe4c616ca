"""verl 0.9.1's own `ToolAgentLoop` on Assay sessions at scale (issue 38's targets).

    PYTHONPATH=src .venv/bin/python benchmarks/verl_tools.py [--trajectories 4096] [--max-open 512]
        [--combos 1:off 1:on 2:off 2:on] [--steps 2] [--trace]

For `max_parallel_calls` 1 and 2 and `full_determinism` off and on, two steps each of N trajectories
(scripted LLM, two tool calls per trajectory, tests/integrations/verl_loop.py), against a uvicorn
server in this process (the session limit `--max-open`, below N, so most trajectories wait for a free
session). Per step it prints: trajectories whose observations were not the right ones, tool responses
that were an infrastructure error (verl's "Error executing tool"), sessions open after the step, the
sandbox processes and this process's RSS against where they started. Then the p50 of one tool call
through verl's `_call_tool` and of a raw step on the shared client, interleaved in the same run.

`--steps K` runs K steps per combination (a leak grows with every step; a high-water mark stops
growing). `--trace` also traces this process's Python allocations (tracemalloc, which slows it down) and
prints, after the last step, what grew most between the end of the second step and the end of the last.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "integrations")]


def _sandboxes() -> int:
    import psutil

    return sum(
        any(p.name() == "bwrap" for p in [c, *c.parents()]) for c in psutil.Process().children(recursive=True)
    )


def _rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 2**20


async def _combo(
    live: Any, tok: Any, tools: Path, n: int, parallel: int, det: bool, steps: int, trace: bool
) -> None:
    import verl_loop as V

    from assay.integrations.clients import aclose_loop_clients

    loop = V.agent_loop(tok, tools, parallel, det)
    tool = loop.tools["python"]
    warm = None
    for step in range(1, steps + 1):
        started, sandboxes, rss = time.perf_counter(), _sandboxes(), _rss_mb()
        outputs = await V.run_step(loop, step, n)
        wrong = sum(V.observations(tok, o) != V.expected(step, t) for t, o in enumerate(outputs))
        shown = sum(tok.decode(o.response_ids).count("Error executing tool") for o in outputs)
        del outputs
        await tool.wait_closed()
        print(
            f"parallel={parallel} determinism={det!s:5} step={step}: {n} trajectories in "
            f"{time.perf_counter() - started:.1f} s, wrong observations {wrong}, errors shown {shown}, "
            f"sessions open after {live.engine.sessions.open_count}, sandboxes {sandboxes} -> "
            f"{_sandboxes()}, RSS {rss:.0f} -> {_rss_mb():.0f} MB",
            flush=True,
        )
        if trace and step == 2:
            warm = tracemalloc.take_snapshot()
    if warm is not None and steps > 2:
        grown = tracemalloc.take_snapshot().compare_to(warm, "lineno")
        print(f"Python allocations grown from the end of step 2 to the end of step {steps} (top 10):")
        for stat in grown[:10]:
            print(f"  {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks  {stat.traceback}")
        print(f"  all: {sum(s.size_diff for s in grown) / 1024:+.1f} KiB")
    await aclose_loop_clients()


async def _overhead(live: Any, tok: Any, tools: Path, calls: int) -> None:
    import verl_loop as V
    from verl.experimental.agent_loop.tool_agent_loop import AgentData
    from verl.experimental.agent_loop.tool_parser import FunctionCall

    from assay.integrations.clients import aclose_loop_clients, shared_session_client

    loop = V.agent_loop(tok, tools, 1, False)
    client = shared_session_client(live.url)
    kwargs = {"python": {"create_kwargs": {"item": {"task": "math"}}}}
    limits = {"max_steps": 1024}
    raw = (await client.aopen_session({"task": "math"}, ["python"], limits)).session_id
    through, direct = [], []
    for _ in range(calls // 500 + 1):
        agent_data = AgentData([], [], [], None, None, {}, "r", kwargs)
        call = FunctionCall(name="python", arguments='{"code": "x = 1"}')
        for _ in range(min(calls, 500)):
            t0 = time.perf_counter()
            await loop._call_tool(call, kwargs, agent_data)
            through.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await client.astep(raw, "python", {"code": "x = 1"})
            direct.append(time.perf_counter() - t0)
    await client.aclose_session(raw)
    await aclose_loop_clients()
    p50_through, p50_direct = statistics.median(through) * 1e3, statistics.median(direct) * 1e3
    print(
        f"tool call through verl's _call_tool p50 {p50_through:.2f} ms, raw step on the shared client "
        f"p50 {p50_direct:.2f} ms: {p50_through / p50_direct:.2f}x ({len(through)} calls each, interleaved)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trajectories", type=int, default=4096)
    parser.add_argument("--max-open", type=int, default=512)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--steps", type=int, default=2, help="steps per combination (at least 1)")
    parser.add_argument("--trace", action="store_true", help="trace Python allocations (slower)")
    parser.add_argument(
        "--combos",
        nargs="+",
        default=["1:off", "1:on", "2:off", "2:on"],
        help="max_parallel_calls:full_determinism pairs to run (each for --steps steps)",
    )
    args = parser.parse_args()
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    combos = []
    for combo in args.combos:
        parallel, _, det = combo.partition(":")
        if parallel not in ("1", "2") or det not in ("on", "off"):
            parser.error(f"--combos takes PARALLEL:DETERMINISM, 1 or 2 and on or off, not {combo!r}")
        combos.append((int(parallel), det == "on"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import verl.experimental.agent_loop.tool_agent_loop  # noqa: F401
    import verl_loop as V
    from assay_testing import LiveServer
    from session_testing import session_settings

    live = LiveServer(session_settings(max_open=args.max_open, ttl_s=3600))
    live.keep_connections_as_served().start()
    try:
        directory = Path(tempfile.mkdtemp())
        tok = V.tokenizer(directory)
        tools = V.tools_yaml(directory, live.url, limits={"max_steps": 1024})
        if args.trace:
            tracemalloc.start()
        for parallel, det in combos:
            run = _combo(live, tok, tools, args.trajectories, parallel, det, args.steps, args.trace)
            asyncio.run(run)
        asyncio.run(_overhead(live, tok, tools, args.calls))
    finally:
        live.stop()


if __name__ == "__main__":
    main()
