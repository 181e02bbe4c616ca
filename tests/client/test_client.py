"""AssayClient: batching, retries honouring Retry-After, errors that never become rewards."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from assay.client import AssayClient
from assay.errors import (
    ClientError,
    PayloadError,
    RequestTooLargeError,
    ResponseError,
    ServiceError,
    UnreachableError,
)
from assay.types import Item, Result, Status

MATH_OK = {"task": "math", "response": "\\boxed{2}", "reference": "2"}


def _echo_results(request: httpx.Request) -> httpx.Response:
    items = json.loads(request.content)["items"]
    results = [Result.verdict(True, id=i.get("id")).model_dump(mode="json") for i in items]
    return httpx.Response(200, json={"results": results})


def test_results_come_back_as_result_objects_across_batches() -> None:
    sizes: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sizes.append(len(json.loads(request.content)["items"]))
        return _echo_results(request)

    with AssayClient(batch_size=2, transport=httpx.MockTransport(handler)) as client:
        results = client.score([{**MATH_OK, "id": str(i)} for i in range(5)])
    assert sizes == [2, 2, 1]
    assert [r.id for r in results] == ["0", "1", "2", "3", "4"]
    assert all(isinstance(r, Result) for r in results)


def test_items_may_be_item_objects() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.extend(json.loads(request.content)["items"])
        return _echo_results(request)

    with AssayClient(transport=httpx.MockTransport(handler)) as client:
        client.score([Item(task="math", response="1", reference="1")])
    assert seen == [{"task": "math", "response": "1", "reference": "1", "options": {}}]


def test_429_is_retried_after_the_servers_retry_after() -> None:
    answers = iter(
        [
            httpx.Response(
                429, headers={"Retry-After": "7"}, json={"error": {"type": "queue_full", "message": "x"}}
            ),
            httpx.Response(503, json={"error": {"type": "unavailable", "message": "y"}}),
        ]
    )
    waits: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or _echo_results(request)

    client = AssayClient(transport=httpx.MockTransport(handler), sleep=waits.append, backoff_s=0.5)
    assert client.score([MATH_OK])[0].status is Status.OK
    assert 7.0 <= waits[0] <= 7.5  # Retry-After plus a jitter below min(backoff_s, 1 s)
    assert 0.0 <= waits[1] <= 1.0  # jittered back-off for attempt 1: uniform(0, 0.5 * 2)


def test_the_client_gives_up_with_a_clear_error_after_its_retries() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(503, json={"error": {"type": "unavailable", "message": "down for repairs"}})

    client = AssayClient(transport=httpx.MockTransport(handler), sleep=lambda s: None, max_retries=3)
    with pytest.raises(ServiceError, match="503: down for repairs") as caught:
        client.score([MATH_OK])
    assert calls == 4 and caught.value.status_code == 503


def test_a_client_error_is_not_retried() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(422, json={"error": {"type": "validation_error", "message": "not items"}})

    with pytest.raises(ServiceError, match="not items"):
        AssayClient(transport=httpx.MockTransport(handler), sleep=lambda s: None).score([MATH_OK])
    assert calls == 1


def test_a_413_splits_the_batch_with_the_servers_limits() -> None:
    sizes: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/limits":
            return httpx.Response(200, json={"max_batch_items": 3, "max_body_bytes": 10**6})
        items = json.loads(request.content)["items"]
        sizes.append(len(items))
        if len(items) > 3:
            return httpx.Response(413, json={"error": {"type": "payload_too_large", "message": "split"}})
        return _echo_results(request)

    with AssayClient(batch_size=8, transport=httpx.MockTransport(handler)) as client:
        results = client.score([{**MATH_OK, "id": str(i)} for i in range(10)])
        assert [r.id for r in results] == [str(i) for i in range(10)]
        assert sizes == [8, 3, 3, 2, 2]  # one 413, then batches the server accepts
        client.score([MATH_OK] * 7)  # once learned, no more 413s
    assert sizes[5:] == [3, 3, 1]


def test_a_413_from_a_server_without_limits_halves_until_it_fits() -> None:
    sizes: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/limits":
            return httpx.Response(404, json={"error": {"type": "not_found", "message": "no"}})
        items = json.loads(request.content)["items"]
        sizes.append(len(items))
        if len(request.content) > 200:
            return httpx.Response(413, json={"error": {"type": "payload_too_large", "message": "body"}})
        return _echo_results(request)

    with AssayClient(transport=httpx.MockTransport(handler)) as client:
        results = client.score([{**MATH_OK, "id": str(i)} for i in range(6)])
    assert [r.id for r in results] == [str(i) for i in range(6)]
    assert sizes[0] == 6 and max(sizes[1:]) < 6


def test_a_single_item_over_the_limit_is_request_too_large() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/limits":
            return httpx.Response(200, json={"max_batch_items": 4, "max_body_bytes": 100})
        return httpx.Response(413, json={"error": {"type": "payload_too_large", "message": "too big"}})

    with pytest.raises(RequestTooLargeError, match="too big"):
        AssayClient(transport=httpx.MockTransport(handler)).score([{**MATH_OK, "response": "x" * 500}])


def test_a_lone_surrogate_is_sent_escaped_not_raised() -> None:
    bodies: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        return _echo_results(request)

    with AssayClient(transport=httpx.MockTransport(handler)) as client:
        client.score([{**MATH_OK, "response": "a\ud800b", "id": "é"}])
    assert b"\\ud800" in bodies[0]
    assert json.loads(bodies[0])["items"][0]["response"] == "a\ud800b"


def test_nan_is_a_payload_error() -> None:
    client = AssayClient(transport=httpx.MockTransport(_echo_results))
    with pytest.raises(PayloadError, match="JSON"):
        client.score([{**MATH_OK, "options": {"x": float("nan")}}])


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, text="not json"),
        httpx.Response(200, json={"results": [{"status": "ok"}]}),  # ok without a reward
        httpx.Response(200, json={"results": []}),
        httpx.Response(200, json={"nothing": 1}),
    ],
)
def test_an_answer_off_the_contract_is_a_response_error(answer: httpx.Response) -> None:
    client = AssayClient(transport=httpx.MockTransport(lambda request: answer))
    with pytest.raises(ResponseError):
        client.score([MATH_OK])


def test_every_client_failure_is_a_client_error() -> None:
    for cls in (UnreachableError, ServiceError, RequestTooLargeError, ResponseError, PayloadError):
        assert issubclass(cls, ClientError)


def test_an_unreachable_server_is_a_client_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = AssayClient(transport=httpx.MockTransport(handler), sleep=lambda s: None, max_retries=2)
    with pytest.raises(UnreachableError, match="cannot reach Assay"):
        client.score([MATH_OK])


def _score_one(mode: str, handler: Callable[[httpx.Request], httpx.Response], **options: Any) -> Result:
    """MATH_OK scored through the sync or the async path (no waits: zero back-off)."""
    transport = httpx.MockTransport(handler)
    if mode == "sync":
        with AssayClient(transport=transport, sleep=lambda s: None, backoff_s=0.0, **options) as client:
            return client.score([MATH_OK])[0]

    async def run() -> list[Result]:
        async with AssayClient(async_transport=transport, backoff_s=0.0, **options) as aclient:
            return await aclient.ascore([MATH_OK])

    return asyncio.run(run())[0]


def _scripted(*answers: httpx.Response | Exception) -> tuple[list[int], Callable[..., httpx.Response]]:
    """A handler giving `answers` in turn (an exception is raised), then results; and its call count."""
    calls = [0]

    def handler(request: httpx.Request) -> httpx.Response:
        calls[0] += 1
        answer = answers[calls[0] - 1] if calls[0] <= len(answers) else _echo_results(request)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return calls, handler


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_sync_and_async_retry_alike(mode: str) -> None:
    calls, handler = _scripted(
        httpx.Response(503, json={"error": {"type": "unavailable", "message": "x"}}),
        httpx.ConnectError("refused"),
        httpx.Response(
            429, headers={"Retry-After": "0"}, json={"error": {"type": "queue_full", "message": "y"}}
        ),
    )
    assert _score_one(mode, handler, max_retries=3).status is Status.OK
    assert calls == [4]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_sync_and_async_give_up_alike(mode: str) -> None:
    calls, handler = _scripted(*[httpx.ConnectError("refused")] * 3)
    with pytest.raises(UnreachableError, match="cannot reach Assay"):
        _score_one(mode, handler, max_retries=2)
    assert calls == [3]
    # A Retry-After beyond max_backoff_s ends the retries: the 503 itself is the answer.
    calls, handler = _scripted(
        httpx.Response(
            503, headers={"Retry-After": "100"}, json={"error": {"type": "draining", "message": "z"}}
        )
    )
    with pytest.raises(ServiceError, match="503: z"):
        _score_one(mode, handler, max_backoff_s=1.0)
    assert calls == [1]
    # A failure that is not the network's is not retried.
    calls, handler = _scripted(httpx.InvalidURL("bad url"))
    with pytest.raises(ClientError, match="failed: bad url") as caught:
        _score_one(mode, handler)
    assert calls == [1] and not isinstance(caught.value, UnreachableError)


def test_backoff_is_capped_and_jittered() -> None:
    client = AssayClient(backoff_s=1.0, max_backoff_s=4.0)
    delays = [client.retry_delay(7, None) for _ in range(50)]  # attempt 7 of 8: 2**7 s, capped at 4
    assert all(d is not None and 0.0 <= d <= 4.0 for d in delays) and len(set(delays)) > 1
    assert client.retry_delay(0, "100") is None  # asked for longer than max_backoff_s: stop, do not cut short


def test_async_scoring_against_a_live_server(live_server: Callable[..., Any]) -> None:
    server = live_server()
    items = [{**MATH_OK, "id": str(i)} for i in range(6)] + [{"task": "nope", "id": "bad"}]

    async def run() -> list[Result]:
        async with AssayClient(server.url, batch_size=2, concurrency=3) as client:
            return await client.ascore(items)

    results = asyncio.run(run())
    assert [r.id for r in results] == [*map(str, range(6)), "bad"]
    assert [r.status for r in results] == [Status.OK] * 6 + [Status.INVALID]


def test_sync_scoring_and_task_listing_against_a_live_server(live_server: Callable[..., Any]) -> None:
    server = live_server()
    with AssayClient(server.url) as client:
        (result,) = client.score([MATH_OK])
        names = [t["name"] for t in client.tasks()]
    assert result.correct is True
    assert "math" in names


def test_the_default_batch_fits_a_server_with_a_small_queue(live_server: Callable[..., Any]) -> None:
    server = live_server(queue_size=3)
    items = [{**MATH_OK, "id": str(i)} for i in range(10)] + [{**MATH_OK, "id": "s", "response": "\ud800"}]
    with AssayClient(server.url) as client:
        results = client.score(items)
        assert (client.max_batch_items, client.max_body_bytes) == (3, server.engine.settings.max_body_bytes)

    async def run() -> list[Result]:
        async with AssayClient(server.url, concurrency=1) as aclient:
            return await aclient.ascore(items)

    for got in (results, asyncio.run(run())):
        assert [r.id for r in got] == [*map(str, range(10)), "s"]
        assert [r.status for r in got] == [Status.OK] * 10 + [Status.INVALID]


def test_one_connection_pool_when_threads_first_call_at_once() -> None:
    # verl calls one shared client from its reward loop's threads: two pools meant one leaked socket.
    client = AssayClient(transport=httpx.MockTransport(_echo_results))
    start = threading.Barrier(8)

    def first_use(_: int) -> httpx.Client:
        start.wait()
        return client._client()

    with ThreadPoolExecutor(8) as pool:
        pools = list(pool.map(first_use, range(8)))
    assert all(p is pools[0] for p in pools)
    client.close()
