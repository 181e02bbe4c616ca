"""`AssayClient`: the Python client of the Assay service (sync and async), used by rl_client and users.

It splits large batches, retries 429/502/503/504 and connection failures with the shared back-off
policy (backoff.py: full jitter, `Retry-After` honoured), and returns `Result` objects in item order.
When the service keeps failing it raises `ClientError`: it never invents rewards.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import httpx

from assay.backoff import Backoff, parse_retry_after
from assay.errors import ClientError
from assay.types import Item, Result

_RETRY_STATUS = frozenset({429, 502, 503, 504})


def _as_json(item: Any) -> Any:
    return item.model_dump(mode="json", exclude_none=True) if isinstance(item, Item) else item


def _error_message(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:500]


class AssayClient:
    """Talks to `assay serve`. Use as a context manager (sync or async) or call `close()`/`aclose()`."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        timeout_s: float = 300.0,
        batch_size: int = 256,
        max_retries: int = 8,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        concurrency: int = 4,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if batch_size <= 0 or concurrency <= 0 or max_retries < 0:
            raise ValueError("batch_size and concurrency must be positive, max_retries non-negative")
        self.base_url = base_url.rstrip("/")
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.concurrency = concurrency
        self._backoff = Backoff(max_retries, backoff_s, max_backoff_s)
        self._timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
        self._transport = transport
        self._async_transport = async_transport
        self._sleep = sleep
        self._sync: httpx.Client | None = None
        self._sync_lock = threading.Lock()  # trainers (verl) call one client from many threads
        self._async: httpx.AsyncClient | None = None

    # -- retry policy ----------------------------------------------------------------------------
    def retry_delay(self, attempt: int, retry_after: str | None) -> float | None:
        """Seconds to wait before retry number `attempt` (0-based), or None: stop (see backoff.py)."""
        return self._backoff.delay(attempt, parse_retry_after(retry_after))

    def _parse(self, response: httpx.Response, expected: int) -> list[Result]:
        if response.status_code != 200:
            raise ClientError(
                f"Assay answered {response.status_code}: {_error_message(response)}", response.status_code
            )
        results = [Result.model_validate(r) for r in response.json()["results"]]
        if len(results) != expected:
            raise ClientError(f"Assay returned {len(results)} results for {expected} items")
        return results

    def _chunks(self, items: Iterable[Any]) -> list[list[Any]]:
        flat = [_as_json(i) for i in items]
        return [flat[i : i + self.batch_size] for i in range(0, len(flat), self.batch_size)]

    # -- sync ------------------------------------------------------------------------------------
    def _client(self) -> httpx.Client:
        with self._sync_lock:  # two first calls at once built two pools and leaked one's connection
            if self._sync is None:
                self._sync = httpx.Client(
                    base_url=self.base_url, timeout=self._timeout, transport=self._transport
                )
            return self._sync

    def _post(self, path: str, payload: dict[str, Any]) -> httpx.Response:
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client().post(path, json=payload)
            except httpx.TransportError as exc:
                delay = self.retry_delay(attempt, None)
                if delay is None:
                    raise ClientError(f"cannot reach Assay at {self.base_url}: {exc}") from exc
                self._sleep(delay)
                continue
            if response.status_code not in _RETRY_STATUS:
                return response
            delay = self.retry_delay(attempt, response.headers.get("retry-after"))
            if delay is None:
                return response
            self._sleep(delay)
        raise AssertionError("unreachable")

    def score(self, items: Iterable[Any]) -> list[Result]:
        """Score items (dicts or `Item`s); one Result per item, in order."""
        results: list[Result] = []
        for chunk in self._chunks(items):
            results.extend(self._parse(self._post("/v1/rewards", {"items": chunk}), len(chunk)))
        return results

    def tasks(self) -> list[dict[str, Any]]:
        response = self._client().get("/v1/tasks")
        if response.status_code != 200:
            raise ClientError(f"Assay answered {response.status_code}: {_error_message(response)}")
        tasks: list[dict[str, Any]] = response.json()["tasks"]
        return tasks

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
            self._sync = None

    def __enter__(self) -> AssayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- async -----------------------------------------------------------------------------------
    def _aclient(self) -> httpx.AsyncClient:
        if self._async is None:
            self._async = httpx.AsyncClient(
                base_url=self.base_url, timeout=self._timeout, transport=self._async_transport
            )
        return self._async

    async def _apost(self, path: str, payload: dict[str, Any]) -> httpx.Response:
        for attempt in range(self.max_retries + 1):
            try:
                response = await self._aclient().post(path, json=payload)
            except httpx.TransportError as exc:
                delay = self.retry_delay(attempt, None)
                if delay is None:
                    raise ClientError(f"cannot reach Assay at {self.base_url}: {exc}") from exc
                await asyncio.sleep(delay)
                continue
            if response.status_code not in _RETRY_STATUS:
                return response
            delay = self.retry_delay(attempt, response.headers.get("retry-after"))
            if delay is None:
                return response
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def ascore(self, items: Iterable[Any]) -> list[Result]:
        """Async `score`: chunks go out concurrently (at most `concurrency` at once)."""
        gate = asyncio.Semaphore(self.concurrency)

        async def one(chunk: Sequence[Any]) -> list[Result]:
            async with gate:
                return self._parse(await self._apost("/v1/rewards", {"items": list(chunk)}), len(chunk))

        parts = await asyncio.gather(*(one(c) for c in self._chunks(items)))
        return [r for part in parts for r in part]

    async def aclose(self) -> None:
        if self._async is not None:
            await self._async.aclose()
            self._async = None

    async def __aenter__(self) -> AssayClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
        self.close()
