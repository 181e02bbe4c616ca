"""`python benchmarks/load.py stream`: per-rollout streaming against one `assay serve`, side by side
(issue 31). Every mode scores the same small math items (a distinct correct answer each, so a lost or
swapped result shows) on the same server, in one run:

- batched: the items in `--batch`-sized `ascore` calls, all at once (the baseline);
- single: one `ascore` per item, all concurrent, with the default client (bounded in-flight pool,
  opportunistic merging: calls that arrive while `concurrency` batches are out go together);
- single, no merge: the same with `AssayClient(coalesce=False)` (every call its own request: the default
  before issue 43);
- single+coalesce: the same with `AssayClient(coalesce_s=...)` (a fixed merging window);
- slime: the slime adapter's `reward(args, sample)` per item, all concurrent;
- connections: `--connections` raw sockets to the server, all open at once, then one single-item
  request each: 200s, errors, lost results, and the server's RSS before, at peak and after.

Ratios are against the batched wall time of the same run (targets: single within 1.5x, slime within 2x).
With `--microbatch off` the server runs without micro-batching (for comparison).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import threading
import time
from types import SimpleNamespace
from typing import Any

from load import Server, _rss_mb

from assay.client import AssayClient
from assay.integrations import slime


def _items(n: int, offset: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"i{offset + k}",
            "task": "math",
            "response": f"\\boxed{{{offset + k}}}",
            "reference": str(offset + k),
        }
        for k in range(n)
    ]


def _check(items: list[dict[str, Any]], rewards: list[Any]) -> int:
    """Items whose answer is missing or wrong (every item is correct, so anything but 1.0 is lost)."""
    return sum(r != 1.0 for r in rewards) + max(0, len(items) - len(rewards))


async def _batched(url: str, items: list[dict[str, Any]], batch: int) -> tuple[float, int]:
    async with AssayClient(url, batch_size=batch, concurrency=64) as client:
        began = time.perf_counter()
        parts = [items[i : i + batch] for i in range(0, len(items), batch)]
        answers = await asyncio.gather(*(client.ascore(p) for p in parts))
        took = time.perf_counter() - began
    ids_ok = all(
        r.id == i["id"] for p, a in zip(parts, answers, strict=True) for i, r in zip(p, a, strict=True)
    )
    rewards = [r.reward for a in answers for r in a]
    return took, _check(items, rewards) + (0 if ids_ok else 1)


async def _singles(url: str, items: list[dict[str, Any]], **options: Any) -> tuple[float, int]:
    async with AssayClient(url, **options) as client:
        began = time.perf_counter()
        answers = await asyncio.gather(*(client.ascore([i]) for i in items))
        took = time.perf_counter() - began
    bad = sum(r.id != i["id"] for i, [r] in zip(items, answers, strict=True))
    return took, _check(items, [r.reward for [r] in answers]) + bad


async def _slime(url: str, items: list[dict[str, Any]]) -> tuple[float, int]:
    args = SimpleNamespace(assay_url=url)
    samples = [SimpleNamespace(prompt="", response=i["response"], label=i["reference"]) for i in items]
    began = time.perf_counter()
    rewards = await asyncio.gather(*(slime.reward(args, s) for s in samples))
    return time.perf_counter() - began, _check(items, list(rewards))


async def _one_connection(
    port: int,
    item: dict[str, Any],
    opened: asyncio.Semaphore,
    all_open: asyncio.Event,
    counts: dict[str, int],
) -> None:
    body = json.dumps({"items": [item]}).encode()
    head = (
        f"POST /v1/rewards HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    try:
        async with opened:  # at most this many connects in flight (the kernel's SYN backlog)
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 60)
        counts["open"] += 1
        await all_open.wait()  # every connection is held open before any request goes
        writer.write(head + body)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), 600)
        writer.close()
    except (OSError, TimeoutError) as exc:
        counts[f"error:{type(exc).__name__}"] = counts.get(f"error:{type(exc).__name__}", 0) + 1
        return
    status = raw.split(b" ", 2)[1].decode() if raw.startswith(b"HTTP/") else "none"
    counts[status] = counts.get(status, 0) + 1
    if status == "200":
        [result] = json.loads(raw.split(b"\r\n\r\n", 1)[1])["results"]
        counts["lost"] += result["id"] != item["id"] or result["reward"] != 1.0


async def _connections(server: Server, n: int) -> dict[str, Any]:
    items = _items(n, 10_000_000)
    counts: dict[str, int] = {"open": 0, "lost": 0}
    opened, all_open = asyncio.Semaphore(512), asyncio.Event()
    before = _rss_mb(server.proc.pid)
    peak = [before]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            peak[0] = max(peak[0], _rss_mb(server.proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    began = time.perf_counter()
    tasks = [asyncio.ensure_future(_one_connection(server.port, i, opened, all_open, counts)) for i in items]
    while counts["open"] + sum(v for k, v in counts.items() if k.startswith("error")) < n:
        await asyncio.sleep(0.05)
    held = counts["open"]
    all_open.set()
    await asyncio.gather(*tasks)
    took = time.perf_counter() - began
    stop.set()
    sampler.join()
    after = _rss_mb(server.proc.pid)
    errors = sum(v for k, v in counts.items() if k not in {"open", "lost", "200"})
    return {
        "held_open": held, "ok_200": counts.get("200", 0), "errors": errors, "lost": counts["lost"],
        "detail": {k: v for k, v in counts.items() if k not in {"open", "lost", "200"}},
        "wall_s": round(took, 1), "rss_before_mb": round(before), "rss_peak_mb": round(peak[0]),
        "rss_after_mb": round(after),
    }  # fmt: skip


async def _run(args: argparse.Namespace, server: Server) -> None:
    url = server.url
    warm = _items(args.batch, 20_000_000)
    await _batched(url, warm, args.batch)  # workers warm, math caches hot, before anything is timed
    rows: list[tuple[str, float, int]] = []
    for round_ in range(args.rounds):
        base = 1_000_000 * (round_ + 1)
        rows.append(("batched", *await _batched(url, _items(args.items, base), args.batch)))
        rows.append(("single", *await _singles(url, _items(args.items, base + 100_000))))
        rows.append(
            ("single, no merge", *await _singles(url, _items(args.items, base + 400_000), coalesce=False))
        )
        rows.append(
            ("single+coalesce", *await _singles(url, _items(args.items, base + 200_000), coalesce_s=0.005))
        )
        rows.append(("slime", *await _slime(url, _items(args.items, base + 300_000))))
    batched = min(t for name, t, _ in rows if name == "batched")
    print(f"stream: {args.items} items per mode, {args.rounds} round(s), micro-batching {args.microbatch}")
    print(f"  {'mode':<16} {'best wall s':>11} {'x batched':>10} {'lost':>5}")
    for name in dict.fromkeys(n for n, _, _ in rows):
        times = [t for n, t, _ in rows if n == name]
        lost = sum(b for n, _, b in rows if n == name)
        print(f"  {name:<16} {min(times):>11.2f} {min(times) / batched:>10.2f} {lost:>5}")
    if args.connections:
        print(f"  connections: {json.dumps(await _connections(server, args.connections))}")


def stream(args: argparse.Namespace) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # one file per held connection
    env = {
        "ASSAY_WORKERS": str(args.workers),
        "ASSAY_QUEUE_SIZE": str(max(args.connections, args.items) + 1024),
        "ASSAY_MICROBATCH__ENABLED": "true" if args.microbatch == "on" else "false",
    }
    server = Server(**env)
    try:
        asyncio.run(_run(args, server))
    finally:
        server.stop()
    print(f"  machine load average at the end {__import__('os').getloadavg()[0]:.1f}")
