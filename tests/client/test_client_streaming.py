"""The client at streaming load (issue 31): one bounded pool of in-flight requests per client, sync and
async, and concurrent single-item `ascore` calls coalesced into batches (by default opportunistically,
or within a window `coalesce_s`)."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from assay.client import AssayClient
from assay.errors import ServiceError


def _answer(request: httpx.Request) -> httpx.Response:
    items = json.loads(request.content)["items"]
    results = [
        {"id": i.get("id"), "status": "ok", "correct": True, "reward": 1.0, "reason": i["response"]}
        for i in items
    ]
    return httpx.Response(200, json={"results": results})


class AsyncServer:
    """A mock transport that holds each request until released, and counts requests and concurrency."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[int] = []  # items per request
        self.in_flight = 0
        self.most_in_flight = 0
        self.status = status

    async def handle(self, request: httpx.Request) -> httpx.Response:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.requests.append(len(json.loads(request.content)["items"]))
        await asyncio.sleep(0.002)  # sleep-ok: stands for the server's work, not synchronisation
        self.in_flight -= 1
        if self.status != 200:
            return httpx.Response(self.status, json={"error": {"type": "x", "message": "refused"}})
        return _answer(request)


def _items(n: int) -> list[dict[str, Any]]:
    return [{"id": str(i), "task": "math", "response": f"r{i}", "reference": "1"} for i in range(n)]


async def _concurrent_singles(client: AssayClient, n: int) -> list[str]:
    answers = await asyncio.gather(*(client.ascore([item]) for item in _items(n)))
    return [r.reason for [r] in answers]


def test_concurrent_async_calls_share_one_bound_on_requests_in_flight() -> None:
    server = AsyncServer()
    transport = httpx.MockTransport(server.handle)
    client = AssayClient("http://t", max_in_flight=5, coalesce=False, async_transport=transport)
    reasons = asyncio.run(_concurrent_singles(client, 200))
    assert reasons == [f"r{i}" for i in range(200)]
    assert server.most_in_flight == 5 and len(server.requests) == 200


def test_by_default_calls_go_at_once_until_the_batches_are_out_then_ride_together() -> None:
    """Issue 43 item 6: with no option set, the first `concurrency` calls go out alone at once (a lone
    call never waits); the 196 that arrive while those four are out go as one batch when one returns."""
    server = AsyncServer()
    client = AssayClient("http://t", async_transport=httpx.MockTransport(server.handle))
    assert client.concurrency == 4
    reasons = asyncio.run(_concurrent_singles(client, 200))
    assert reasons == [f"r{i}" for i in range(200)]  # each caller its own result
    assert server.requests == [1, 1, 1, 1, 196]
    lone = AsyncServer()
    client = AssayClient("http://t", async_transport=httpx.MockTransport(lone.handle))
    assert asyncio.run(_concurrent_singles(client, 1)) == ["r0"] and lone.requests == [1]


def test_coalescing_sends_concurrent_single_calls_as_batches() -> None:
    server = AsyncServer()
    transport = httpx.MockTransport(server.handle)
    client = AssayClient("http://t", batch_size=100, coalesce_s=0.01, async_transport=transport)
    reasons = asyncio.run(_concurrent_singles(client, 1000))
    assert reasons == [f"r{i}" for i in range(1000)]  # each caller its own result
    assert server.requests == [100] * 10


def test_a_refused_coalesced_batch_fails_each_caller_with_the_service_error() -> None:
    server = AsyncServer(status=400)
    transport = httpx.MockTransport(server.handle)
    client = AssayClient("http://t", coalesce_s=0.01, async_transport=transport)

    async def main() -> list[Any]:
        return await asyncio.gather(*(client.ascore([i]) for i in _items(5)), return_exceptions=True)

    outcomes = asyncio.run(main())
    assert all(isinstance(o, ServiceError) and o.status_code == 400 for o in outcomes)
    assert server.requests == [5]


def test_threads_share_one_bound_on_requests_in_flight() -> None:
    lock = threading.Lock()
    seen = {"now": 0, "most": 0}
    arrived = threading.Semaphore(0)
    release = threading.Event()

    def handle(request: httpx.Request) -> httpx.Response:
        with lock:
            seen["now"] += 1
            seen["most"] = max(seen["most"], seen["now"])
        arrived.release()
        release.wait(30)
        with lock:
            seen["now"] -= 1
        return _answer(request)

    client = AssayClient("http://t", max_in_flight=3, transport=httpx.MockTransport(handle))
    with ThreadPoolExecutor(12) as pool:
        futures = [pool.submit(client.score, [item]) for item in _items(12)]
        for _ in range(3):
            assert arrived.acquire(timeout=30)
        assert not arrived.acquire(timeout=0.2)  # a fourth request is held back by the bound
        release.set()
        assert [f.result(timeout=30)[0].reason for f in futures] == [f"r{i}" for i in range(12)]
    assert seen["most"] == 3


@pytest.mark.parametrize("bad", [{"max_in_flight": 0}, {"coalesce_s": -1.0}])
def test_bad_streaming_settings_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        AssayClient("http://t", **bad)
