"""`AssayClient`: the Python client of the Assay service (sync and async), used by rl_client and users.

It splits large batches, retries 429/502/503/504 and connection failures with the shared back-off
policy (backoff.py: full jitter, `Retry-After` honoured; a server draining for a restart answers 503 +
Retry-After), and returns `Result` objects in item order. A 413 teaches it the server's limits
(`GET /v1/limits`, or by halving against servers without that endpoint) and it sends smaller batches
instead of giving up. Every failure is a `ClientError` subclass (see `assay.errors`); it never invents
rewards.

Streaming (one call per rollout, thousands at once): every request of a client passes one bounded pool
of `max_in_flight` slots, sync and async alike. httpx's connection pool degrades with many waiters (2,000
concurrent single-item calls spent 106 s of client CPU in it; capped at 16 in flight, 5.6 s; issue 31).
Concurrent small `ascore` calls are merged opportunistically by default (assay.client.coalescing): a call
goes out at once while fewer than `concurrency` batches are out, and calls that arrive meanwhile go
together when one comes back, so 2,000 single-item calls cost about what a few batches do and a lone call
never waits. `coalesce_s` sets a fixed window instead; `coalesce=False` sends every call on its own.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from assay.backoff import Backoff, parse_retry_after
from assay.client.coalescing import Coalescer
from assay.client.sessions import SessionCalls
from assay.errors import (
    ClientError,
    PayloadError,
    RequestTooLargeError,
    ResponseError,
    ServiceError,
    UnreachableError,
)
from assay.groups import GroupOutcome, group_rounds
from assay.trees import TreeOutcome
from assay.types import Item, Result

T = TypeVar("T")
PoolT = TypeVar("PoolT", httpx.Client, httpx.AsyncClient)

KEEPALIVE_S = 2.0  # seconds an idle connection is kept: under the server's keep-alive timeout
_RETRY_STATUS = frozenset({429, 502, 503, 504})
# A call that must not run twice (a session step) is retried only when the server surely did not run it.
_UNSENT_STATUS = frozenset({429, 503})
_UNSENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout)
_JSON = {"content-type": "application/json"}
_ENVELOPE_BYTES = 16  # {"items":[...]} around the items
# What a request may raise that is an outcome to judge (retry or a ClientError), not a bug of ours.
_SEND_ERRORS = (httpx.HTTPError, httpx.InvalidURL)


def _group_options(group: dict[str, Any]) -> dict[str, Any]:
    """A group's `shaping` and `rubric` options as JSON, the keys it does not carry left out."""
    return {
        key: value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        for key in ("shaping", "rubric")
        if (value := group.get(key)) is not None
    }


def _as_json(item: Any) -> Any:
    return item.model_dump(mode="json", exclude_none=True) if isinstance(item, Item) else item


def _tree_json(tree: Any) -> Any:
    """A tree with its leaves' items as JSON (an `Item` becomes its dict); anything else is sent as
    given, for the server to call `invalid`."""
    if not isinstance(tree, dict) or not isinstance(tree.get("leaves"), list):
        return tree
    leaves = [
        {**leaf, "item": _as_json(leaf["item"])} if isinstance(leaf, dict) and "item" in leaf else leaf
        for leaf in tree["leaves"]
    ]
    return {**tree, "leaves": leaves}


def _leaf_count(_: int, tree: Any) -> int:
    leaves = tree.get("leaves") if isinstance(tree, dict) else None
    return len(leaves) if isinstance(leaves, list) else 1


def encode_json(payload: Any) -> bytes:
    """UTF-8 JSON. Text with a lone surrogate (not encodable as UTF-8) goes out \\u-escaped, so the
    server answers that one item `invalid` instead of the client failing the batch; NaN, infinity or
    a value JSON has no type for is a PayloadError."""
    try:
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError) as exc:
        raise PayloadError(f"items cannot be sent as JSON: {exc}") from exc
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(payload, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode()


def _error_message(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:500]


def _answer(response: httpx.Response, key: str, parse: Callable[[Any], T]) -> T:
    """`parse` of the `key` field of a 200 answer: ServiceError for an error status, ResponseError for
    an answer that does not follow the contract."""
    if response.status_code != 200:
        raise ServiceError(
            f"Assay answered {response.status_code}: {_error_message(response)}", response.status_code
        )
    try:
        return parse(response.json()[key])
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        raise ResponseError(f"Assay's answer does not follow the contract: {exc}") from exc


class AssayClient(SessionCalls):
    """Talks to `assay serve`. Use as a context manager (sync or async) or call `close()`/`aclose()`.
    The session calls (open_session, step, step_many, verify_session, close_session and their `a`
    forms) come from `assay.client.sessions`."""

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
        max_in_flight: int = 16,
        coalesce_s: float | None = None,
        coalesce: bool = True,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if batch_size <= 0 or concurrency <= 0 or max_in_flight <= 0 or max_retries < 0:
            raise ValueError(
                "batch_size, concurrency and max_in_flight must be positive, max_retries non-negative"
            )
        if coalesce_s is not None and coalesce_s < 0:
            raise ValueError(
                "coalesce_s is seconds a call may wait to be merged: >= 0, or None (merge opportunistically)"
            )
        self.base_url = base_url.rstrip("/")
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.concurrency = concurrency
        self.max_in_flight = max_in_flight
        self.coalesce_s = coalesce_s
        self.coalesce = coalesce
        # One connection per slot, kept alive: no pool waiters beyond the slots, no reconnect churn. An
        # idle one is dropped before uvicorn's 5 s keep-alive timeout closes it: a request sent on a
        # connection the server is closing is lost (a ReadError), and a session step is not retried.
        self._limits = httpx.Limits(
            max_connections=max_in_flight,
            max_keepalive_connections=max_in_flight,
            keepalive_expiry=KEEPALIVE_S,
        )
        self._sync_slots = threading.BoundedSemaphore(max_in_flight)
        self._async_slots: asyncio.Semaphore | None = None
        self._coalescer: Coalescer[Any, Result] | None = None
        self._backoff = Backoff(max_retries, backoff_s, max_backoff_s)
        self._timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
        self._transport = transport
        self._async_transport = async_transport
        self._sleep = sleep
        self._sync: httpx.Client | None = None
        self._sync_lock = threading.Lock()  # trainers (verl) call one client from many threads
        self._async: httpx.AsyncClient | None = None
        # The server's limits, learned after its first 413 (None: not known).
        self.max_batch_items: int | None = None
        self.max_body_bytes: int | None = None
        self._limits_asked = False

    # -- retry policy ----------------------------------------------------------------------------
    def retry_delay(self, attempt: int, retry_after: str | None) -> float | None:
        """Seconds to wait before retry number `attempt` (0-based), or None: stop (see backoff.py)."""
        return self._backoff.delay(attempt, parse_retry_after(retry_after))

    def _outcome(
        self, attempt: int, sent: httpx.Response | Exception, idempotent: bool = True
    ) -> httpx.Response | float:
        """What attempt number `attempt` (0-based) came to: the final response, or the seconds to wait
        before the next attempt; a ClientError when giving up. Pure policy, no I/O: the sync and async
        loops share it and differ only in how they send and sleep. A non-`idempotent` call is retried
        only after a refused connection or a 429/503 (the server did not run it)."""
        if isinstance(sent, httpx.TransportError):
            last = attempt == self.max_retries or not (idempotent or isinstance(sent, _UNSENT_ERRORS))
            delay = None if last else self.retry_delay(attempt, None)
            if delay is None:
                raise UnreachableError(f"cannot reach Assay at {self.base_url}: {sent}") from sent
            return delay
        if isinstance(sent, Exception):
            raise ClientError(f"request to Assay at {self.base_url} failed: {sent}") from sent
        retried = _RETRY_STATUS if idempotent else _UNSENT_STATUS
        if sent.status_code not in retried or attempt == self.max_retries:
            return sent
        delay = self.retry_delay(attempt, sent.headers.get("retry-after"))
        return sent if delay is None else delay

    # -- answers and batches ---------------------------------------------------------------------
    def _parse(self, response: httpx.Response, expected: int) -> list[Result]:
        results = _answer(response, "results", lambda raw: [Result.model_validate(r) for r in raw])
        if len(results) != expected:
            raise ResponseError(f"Assay returned {len(results)} results for {expected} items")
        return results

    def _pack(self, items: Sequence[Any]) -> list[list[Any]]:
        """Consecutive batches within the batch size and the server's known limits."""
        most = min(self.batch_size, self.max_batch_items or self.batch_size)
        room = (self.max_body_bytes or 0) - _ENVELOPE_BYTES
        batches: list[list[Any]] = []
        current: list[Any] = []
        used = 0
        for item in items:
            size = len(encode_json(item)) + 1 if room > 0 else 0
            if current and (len(current) >= most or used + size > room > 0):
                batches.append(current)
                current, used = [], 0
            current.append(item)
            used += size
        if current:
            batches.append(current)
        return batches

    def _parse_groups(self, response: httpx.Response, sent: list[dict[str, Any]]) -> list[GroupOutcome]:
        outcomes = _answer(response, "groups", lambda raw: [GroupOutcome.model_validate(g) for g in raw])
        if [len(o.results) for o in outcomes] != [len(g["items"]) for g in sent]:
            raise ResponseError(
                f"Assay returned {len(outcomes)} groups that do not match the {len(sent)} sent"
            )
        return outcomes

    def group_chunks(self, groups: Iterable[Any]) -> list[list[dict[str, Any]]]:
        """Whole groups per request, at most `batch_size` items each (a larger group goes alone); cut by
        `assay.groups.group_rounds`, the one chunker of groups. A group's `shaping` or `rubric` (a dict
        or its model) goes with it."""
        wire = [
            {"id": group.get("id"), "items": [_as_json(i) for i in group["items"]]}
            | _group_options(group)
            | ({"self_consistency": True} if group.get("self_consistency") is True else {})
            if isinstance(group, dict)
            else {"id": None, "items": [_as_json(i) for i in group]}
            for group in groups
        ]
        limit = min(self.batch_size, self.max_batch_items or self.batch_size)
        return list(group_rounds(wire, limit))

    def _parse_trees(self, response: httpx.Response, sent: list[dict[str, Any]]) -> list[TreeOutcome]:
        outcomes = _answer(response, "trees", lambda raw: [TreeOutcome.model_validate(t) for t in raw])
        if len(outcomes) != len(sent):
            raise ResponseError(f"Assay returned {len(outcomes)} trees for the {len(sent)} sent")
        return outcomes

    def tree_chunks(self, trees: Iterable[Any]) -> list[list[dict[str, Any]]]:
        """Whole trees per request, at most `batch_size` leaves each (a larger tree goes alone)."""
        wire = [_tree_json(tree) for tree in trees]
        limit = min(self.batch_size, self.max_batch_items or self.batch_size)
        return list(group_rounds(wire, limit, _leaf_count))

    def _chunks(self, items: Iterable[Any]) -> list[list[Any]]:
        return self._pack([_as_json(i) for i in items])

    def _learn_limits(self, response: httpx.Response | None) -> None:
        self._limits_asked = True
        if response is None or response.status_code != 200:
            return  # an older server: halving will find the size
        try:
            body = response.json()
            self.max_batch_items = max(1, int(body["max_batch_items"]))
            self.max_body_bytes = max(1, int(body["max_body_bytes"]))
        except (ValueError, KeyError, TypeError):
            return

    def _split(self, chunk: list[Any], response: httpx.Response) -> list[list[Any]]:
        """After a 413: the smaller batches to send instead."""
        if len(chunk) == 1:
            raise RequestTooLargeError(
                f"Assay refused a single item as too large (413): {_error_message(response)}", 413
            )
        parts = self._pack(chunk)
        if len(parts) == 1:
            half = (len(chunk) + 1) // 2
            parts = [chunk[:half], chunk[half:]]
        return parts

    def _pool(self, kind: type[PoolT], transport: Any) -> PoolT:
        """A connection pool of `kind` (sync or async) with this client's URL, timeout and limits."""
        return kind(base_url=self.base_url, timeout=self._timeout, transport=transport, limits=self._limits)

    # -- sync ------------------------------------------------------------------------------------
    def _client(self) -> httpx.Client:
        with self._sync_lock:  # two first calls at once built two pools and leaked one's connection
            if self._sync is None:
                self._sync = self._pool(httpx.Client, self._transport)
            return self._sync

    def _request(self, method: str, path: str, content: bytes | None) -> httpx.Response | Exception:
        try:
            with self._sync_slots:
                return self._client().request(method, path, content=content, headers=_JSON)
        except _SEND_ERRORS as exc:
            return exc

    def _send(
        self, method: str, path: str, payload: Any = None, *, idempotent: bool = True
    ) -> httpx.Response:
        content = None if payload is None else encode_json(payload)
        attempt = 0
        while True:
            outcome = self._outcome(attempt, self._request(method, path, content), idempotent)
            if isinstance(outcome, httpx.Response):
                return outcome
            self._sleep(outcome)
            attempt += 1

    def _score_chunk(self, chunk: list[Any]) -> list[Result]:
        response = self._send("POST", "/v1/rewards", {"items": chunk})
        if response.status_code != 413:
            return self._parse(response, len(chunk))
        if not self._limits_asked:
            try:
                self._learn_limits(self._send("GET", "/v1/limits"))
            except ClientError:
                self._learn_limits(None)
        return [r for part in self._split(chunk, response) for r in self._score_chunk(part)]

    def score(self, items: Iterable[Any]) -> list[Result]:
        """Score items (dicts or `Item`s); one Result per item, in order."""
        return [r for chunk in self._chunks(items) for r in self._score_chunk(chunk)]

    def score_groups(self, groups: Iterable[Any]) -> list[GroupOutcome]:
        """Score groups (`{"id", "items"}` or lists of items) through POST /v1/groups; one outcome per
        group, in order, each with its results and statistics (assay.groups.GroupStats)."""
        outcomes: list[GroupOutcome] = []
        for chunk in self.group_chunks(groups):
            outcomes.extend(self._parse_groups(self._send("POST", "/v1/groups", {"groups": chunk}), chunk))
        return outcomes

    def score_trees(self, trees: Iterable[Any]) -> list[TreeOutcome]:
        """Score tree rollouts through POST /v1/trees (docs/trees.md); one outcome per tree, in order,
        with its leaf results and every node's value and advantage."""
        outcomes: list[TreeOutcome] = []
        for chunk in self.tree_chunks(trees):
            outcomes.extend(self._parse_trees(self._send("POST", "/v1/trees", {"trees": chunk}), chunk))
        return outcomes

    def tasks(self) -> list[dict[str, Any]]:
        return _answer(self._send("GET", "/v1/tasks"), "tasks", list)

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
            self._async = self._pool(httpx.AsyncClient, self._async_transport)
            self._async_slots = asyncio.Semaphore(self.max_in_flight)  # of the same event loop
        return self._async

    async def _arequest(self, method: str, path: str, content: bytes | None) -> httpx.Response | Exception:
        client = self._aclient()
        assert self._async_slots is not None
        try:
            async with self._async_slots:
                return await client.request(method, path, content=content, headers=_JSON)
        except _SEND_ERRORS as exc:
            return exc

    async def _asend(
        self, method: str, path: str, payload: Any = None, *, idempotent: bool = True
    ) -> httpx.Response:
        content = None if payload is None else encode_json(payload)
        attempt = 0
        while True:
            outcome = self._outcome(attempt, await self._arequest(method, path, content), idempotent)
            if isinstance(outcome, httpx.Response):
                return outcome
            await asyncio.sleep(outcome)
            attempt += 1

    async def _ascore_chunk(self, chunk: list[Any]) -> list[Result]:
        response = await self._asend("POST", "/v1/rewards", {"items": chunk})
        if response.status_code != 413:
            return self._parse(response, len(chunk))
        if not self._limits_asked:
            try:
                self._learn_limits(await self._asend("GET", "/v1/limits"))
            except ClientError:
                self._learn_limits(None)
        return [r for part in self._split(chunk, response) for r in await self._ascore_chunk(part)]

    async def ascore(self, items: Iterable[Any]) -> list[Result]:
        """Async `score`: chunks go out concurrently (at most `concurrency` at once). A call of fewer
        than `batch_size` items may go out with other concurrent calls (see the module docstring): at
        once while fewer than `concurrency` batches are out, else with the next batch; with
        `coalesce_s`, after at most that window; with `coalesce=False`, always alone."""
        wire = [_as_json(i) for i in items]
        if not self.coalesce or len(wire) >= self.batch_size:
            return await self._ascore_wire(wire)
        if self._coalescer is None:
            self._coalescer = Coalescer(
                self._ascore_wire,
                window_s=self.coalesce_s,
                max_items=self.batch_size,
                in_flight=self.concurrency,
            )
        return await self._coalescer.submit(wire)

    async def _ascore_wire(self, wire: list[Any]) -> list[Result]:
        return await self._concurrently(self._pack(wire), self._ascore_chunk)

    async def ascore_groups(self, groups: Iterable[Any]) -> list[GroupOutcome]:
        """Async `score_groups`: requests go out concurrently (at most `concurrency` at once)."""

        async def send(chunk: list[dict[str, Any]]) -> list[GroupOutcome]:
            return self._parse_groups(await self._asend("POST", "/v1/groups", {"groups": chunk}), chunk)

        return await self._concurrently(self.group_chunks(groups), send)

    async def ascore_trees(self, trees: Iterable[Any]) -> list[TreeOutcome]:
        """Async `score_trees`: requests go out concurrently (at most `concurrency` at once)."""

        async def send(chunk: list[dict[str, Any]]) -> list[TreeOutcome]:
            return self._parse_trees(await self._asend("POST", "/v1/trees", {"trees": chunk}), chunk)

        return await self._concurrently(self.tree_chunks(trees), send)

    async def _concurrently(
        self, chunks: Iterable[list[Any]], send: Callable[[list[Any]], Awaitable[list[T]]]
    ) -> list[T]:
        """`send` of each chunk, at most `concurrency` at once; the answers in chunk order, joined."""
        gate = asyncio.Semaphore(self.concurrency)

        async def one(chunk: list[Any]) -> list[T]:
            async with gate:
                return await send(chunk)

        parts = await asyncio.gather(*(one(c) for c in chunks))
        return [answer for part in parts for answer in part]

    async def aclose(self) -> None:
        if self._coalescer is not None:
            await self._coalescer.drain()
            self._coalescer = None
        if self._async is not None:
            await self._async.aclose()
            self._async = None
            self._async_slots = None

    async def __aenter__(self) -> AssayClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
        self.close()
