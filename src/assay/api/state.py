"""What routers share: the engine on `app.state`, and the one way a POST route admits its work.

Every POST route goes through `admitted`: a request holding more than the queue can ever take is 413
(split it), one that does not fit now is 429 with Retry-After (`QueueFullError`), the work is cancelled
when the client goes away (its waiting items never start; running math/sql workers are stopped), and the
admitted count is released however the work ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Awaitable
from typing import Any, TypeVar

from fastapi import Request

from assay.api.codes import Refusal, refuse
from assay.engine.microbatch import MicroBatcher
from assay.engine.service import Service
from assay.sessions.service import SessionInfo

T = TypeVar("T")
_TOOLS_KEPT = 100_000  # sessions whose tool schemas are remembered; the oldest are forgotten past it


def engine_of(request: Request) -> Service:
    engine: Service = request.app.state.engine
    return engine


def batcher_of(request: Request) -> MicroBatcher:
    """The engine behind the micro-batcher: small concurrent requests reach the workers in batches."""
    batcher: MicroBatcher = request.app.state.microbatcher
    return batcher


async def admitted(request: Request, count: int, work: Awaitable[T], what: str) -> T:
    """`work`'s result, with `count` items admitted to the bounded queue for as long as it runs.

    `what` names the request in the 413 message ("batch of 3 items"). `work` is a coroutine not yet
    started; it is closed unstarted when the request is refused."""
    engine = engine_of(request)
    limit = engine.settings.queue_size
    try:
        if count > limit:
            raise refuse(
                Refusal.TOO_LARGE, f"{what} exceeds the queue size {limit} (ASSAY_QUEUE_SIZE); split it"
            )
        engine.admit(count)
    except BaseException:
        _close(work)
        raise
    try:
        return await until_disconnected(request, work)
    finally:
        engine.release(count)


def _close(work: Awaitable[Any]) -> None:
    close = getattr(work, "close", None)
    if close is not None:
        close()  # a coroutine never awaited would warn (and warnings are errors in the tests)


class ClientGone(Exception):
    """The client closed the connection before its answer was ready; nobody reads what follows."""


async def until_disconnected(request: Request, work: Awaitable[T]) -> T:
    """Await `work`, cancelling it when the client goes away, so an abandoned request stops taking
    slots."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnect(request))
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:  # the server itself is stopping: let the cancellation through
        task.cancel()
        watcher.cancel()
        raise
    watcher.cancel()
    if task in done:
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    raise ClientGone


async def _disconnect(request: Request) -> None:
    # The body is read already, so the next ASGI message can only be the disconnect.
    while (await request.receive())["type"] != "http.disconnect":
        pass


def remember_tools(app: Any, info: SessionInfo) -> None:
    """Keep an opened session's tool schemas (bounded) for the front ends that list them later (/mcp).
    Sessions with the same tools share one list: a tool's schema is its class's, and a copy per session
    was most of what each of the table's 100,000 entries held (issue 38's RSS per step)."""
    table: OrderedDict[str, list[dict[str, Any]]] | None = getattr(app.state, "session_tools", None)
    if table is None:
        table = app.state.session_tools = OrderedDict()
        app.state.tool_lists = {}
    names = tuple(str(schema.get("function", {}).get("name")) for schema in info.tools)
    table[info.session_id] = app.state.tool_lists.setdefault(names, info.tools)
    while len(table) > _TOOLS_KEPT:
        table.popitem(last=False)


def tools_of(app: Any, session_id: str) -> list[dict[str, Any]] | None:
    """The tool schemas of a session this app opened; None for one it does not know."""
    table: OrderedDict[str, list[dict[str, Any]]] | None = getattr(app.state, "session_tools", None)
    return None if table is None else table.get(session_id)
