"""Server-side micro-batching (assay.engine.microbatch): concurrent single-item requests reach the workers in
batches, each answered with its own result, and turning it off gives the same answers one by one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from assay_testing import LiveServer


def _item(n: int) -> dict[str, Any]:
    # Every third answer is wrong: a swapped result would show as a wrong reward.
    answer = n if n % 3 else n + 1
    return {"id": f"i{n}", "task": "math", "response": f"\\boxed{{{answer}}}", "reference": str(n)}


async def _concurrent_singles(url: str, n: int) -> list[dict[str, Any]]:
    limits = httpx.Limits(max_connections=n)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
        answers = await asyncio.gather(
            *(http.post("/v1/rewards", json={"items": [_item(i)]}) for i in range(n))
        )
    assert all(a.status_code == 200 for a in answers)
    return [a.json()["results"][0] for a in answers]


@pytest.mark.parametrize("enabled", [True, False])
def test_concurrent_single_item_requests_are_answered_each_with_its_own_result(
    live_server: Callable[..., LiveServer], enabled: bool
) -> None:
    server = live_server(workers=1, microbatch={"enabled": enabled, "window_ms": 20.0})
    results = asyncio.run(_concurrent_singles(server.url, 40))
    assert [r["id"] for r in results] == [f"i{n}" for n in range(40)]
    assert [r["reward"] for r in results] == [0.0 if n % 3 == 0 else 1.0 for n in range(40)]
    batcher = server.app.state.microbatcher
    if enabled:
        assert batcher.batches < 40 and batcher._coalescer.calls == 40  # merged, not one by one
    else:
        assert batcher.batches == 0


def test_a_large_request_goes_to_the_workers_in_pieces_without_waiting(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server(workers=1, microbatch={"max_items": 8, "worker_items": 4, "window_ms": 1000})
    with server.client() as http:  # a held request would take a second more: the batch counter tells
        results = http.post("/v1/rewards", json={"items": [_item(n) for n in range(10)]}).json()["results"]
    assert [r["reward"] for r in results] == [0.0 if n % 3 == 0 else 1.0 for n in range(10)]
    assert server.app.state.microbatcher.batches == 0  # not held in the window


def test_the_openrlhf_route_is_micro_batched_too(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(workers=1, microbatch={"window_ms": 20.0})

    async def main() -> list[float]:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as http:
            bodies = [
                {"query": [f"q \\boxed{{{n}}}"], "prompts": ["q "], "labels": [str(n)]} for n in range(20)
            ]
            answers = await asyncio.gather(*(http.post("/get_reward", json=b) for b in bodies))
        return [a.json()["rewards"][0] for a in answers]

    assert asyncio.run(main()) == [1.0] * 20
    assert server.app.state.microbatcher.batches < 20


@pytest.mark.slow
def test_many_connections_held_open_at_once_are_all_answered(live_server: Callable[..., LiveServer]) -> None:
    # The benchmark holds 10,000 (benchmarks/load.py stream); here a few hundred, every one answered.
    server = live_server(workers=1, queue_size=1024)
    n = 400

    async def one(index: int, all_open: asyncio.Event, opened: list[int]) -> float:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        opened.append(index)
        if len(opened) == n:
            all_open.set()
        await all_open.wait()
        body = json.dumps({"items": [_item(index)]}).encode()
        head = (
            "POST /v1/rewards HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode() + body)
        await writer.drain()
        raw = await reader.read()
        writer.close()
        assert raw.startswith(b"HTTP/1.1 200"), raw[:200]
        [result] = json.loads(raw.split(b"\r\n\r\n", 1)[1])["results"]
        assert result["id"] == f"i{index}"
        return float(result["reward"])

    async def main() -> list[float]:
        all_open: asyncio.Event = asyncio.Event()
        opened: list[int] = []
        return await asyncio.wait_for(asyncio.gather(*(one(i, all_open, opened) for i in range(n))), 300)

    assert asyncio.run(main()) == [0.0 if i % 3 == 0 else 1.0 for i in range(n)]
