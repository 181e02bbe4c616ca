"""What the reward hooks share: the service URL, one client (connection pool) per URL per process, and
the rule for a result that is not ok; and what the tool adapters share: `RolloutAborted` and which
session endings are the server's doing.

verl, OpenRLHF and slime have no way to say "unscored", so their adapters raise `RewardUnavailable`
rather than return a made-up 0.0 (verl and others score a reward timeout as 0: a silent bias).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import httpx

from assay.client import AssayClient
from assay.errors import RewardUnavailable, ServiceError, UnreachableError
from assay.suggest import did_you_mean
from assay.types import Result

__all__ = [
    "RolloutAborted",
    "aclose_loop_clients",
    "alisted_tasks",
    "assay_url",
    "close_shared_clients",
    "ended_by_server",
    "listed_tasks",
    "reward_or_raise",
    "session_tools",
    "shared_async_client",
    "shared_client",
    "shared_http",
    "shared_session_client",
    "shared_sync_session_client",
    "task_tools",
]

_ClientT = TypeVar("_ClientT", AssayClient, httpx.Client)

DEFAULT_URL = "http://127.0.0.1:8000"
# Seconds a per-sample async call may wait to be merged with other samples into one request: well
# under one request's cost (a few ms) and far under a rollout's.
COALESCE_S = 0.005
# Requests one process's session client keeps in flight: a trainer's tool calls are one HTTP request
# each, and a rollout worker drives hundreds of trajectories at once (a slot per request, no queue
# behind 16 slots as a scoring client has).
SESSION_IN_FLIGHT = 256
# Retries of one session call (a 429/503 honouring Retry-After, a refused connection): few, because the
# adapter itself waits for a free session as long as it is allowed to (verl_tools `open_wait_s`).
SESSION_RETRIES = 2
# Why a session ended that is the server's doing (store.py's reasons: TTL, shutdown, a Ray holder taken
# away, deleted, unknown after a restart): the rollout aborts. Any other reason is what the policy's
# program did (its step limit, its interpreter killed for memory): an observation.
_SERVER_ENDINGS = ("expired", "the server is shutting down", "the session's holder", "deleted", "no session")
_clients: dict[str, AssayClient] = {}
_http_clients: dict[str, httpx.Client] = {}
_listings: dict[str, dict[str, Any]] = {}  # GET /v1/tasks, per server URL (`listed_tasks`)
_asking: dict[str, threading.Lock] = {}  # per URL: one caller asks, the others wait for its answer
_clients_lock = threading.Lock()
# Async clients per event loop (an async connection pool belongs to one loop), then per URL; an entry
# goes with its loop.
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, AssayClient]] = (
    weakref.WeakKeyDictionary()
)


def task_tools(listed: Mapping[str, Any], task: str) -> list[str]:
    """The tools a session of `task` holds when its caller names none, from what the server lists (`GET
    /v1/tasks`): the tools the task brings, else python (the server's tool of no one task); ValueError
    for a task the server does not have."""
    tasks = {info["name"]: info for info in listed["tasks"]}
    if task not in tasks:
        raise ValueError(
            f'the Assay server has no task "{task}"{did_you_mean(task, tasks)}; its tasks: {", ".join(tasks)}'
        )
    return list(tasks[task].get("tools") or ["python"])


def session_tools(listed: Mapping[str, Any], tools: Sequence[str] | None, task: str | None) -> list[str]:
    """The tools a trajectory's session holds: `tools` when its caller names them, else those `task`
    brings (`task_tools`; math's when no task is named). One rule for every adapter, so a sql row
    gets the sql tool whichever trainer opened its session."""
    return list(tools) if tools is not None else task_tools(listed, task or "math")


def listed_tasks(url: str) -> dict[str, Any]:
    """What the server's `GET /v1/tasks` says, asked once per process and URL: trainers build one
    environment per rollout (TRL's 256 asks took 12 s on 2 cores), and a server's tasks and tools are
    fixed while it runs. The first caller asks; callers meanwhile wait for its answer rather than ask
    too. An unreachable server raises UnreachableError, an error status ServiceError, as the client's
    calls do (and the next caller asks again)."""
    with _clients_lock:
        listed = _listings.get(url)
        asking = _asking.setdefault(url, threading.Lock())
    if listed is not None:
        return listed
    with asking:
        with _clients_lock:
            listed = _listings.get(url)
        if listed is None:
            listed = _ask_tasks(url)
            with _clients_lock:
                _listings[url] = listed
    return listed


async def alisted_tasks(url: str) -> dict[str, Any]:
    """`listed_tasks` from a coroutine: at once when already asked, else on a thread (the ask is sync)."""
    with _clients_lock:
        listed = _listings.get(url)
    return listed if listed is not None else await asyncio.to_thread(listed_tasks, url)


def _ask_tasks(url: str) -> dict[str, Any]:
    try:
        response = shared_http(url).get("/v1/tasks", timeout=60.0)
    except httpx.TransportError as exc:
        raise UnreachableError(f"cannot reach Assay at {url}: {exc}") from exc
    if response.is_error:
        raise ServiceError(
            f"GET {url}/v1/tasks answered {response.status_code}: {response.text[:300]}",
            response.status_code,
        )
    return dict(response.json())


class RolloutAborted(BaseException):
    """Assay could not serve a tool call; the rollout must fail rather than train on the failure.

    A `BaseException` on purpose: verl's `ToolAgentLoop._call_tool` and TRL's `GRPOTrainer._tool_call_loop`
    catch every `Exception` and feed its text to the policy as the tool's output, so an `AssayError` would
    be trained on. Like `KeyboardInterrupt`, this one passes their handlers and fails the step with the
    reason.
    """


def ended_by_server(reason: str) -> bool:
    """Whether a session ended for a reason of the server's (the rollout aborts) rather than the policy's
    (its step limit, its program: an observation)."""
    return reason.startswith(_SERVER_ENDINGS)


def assay_url(url: str | None = None) -> str:
    """An explicit URL, else `ASSAY_URL`, else the local default."""
    return url or os.environ.get("ASSAY_URL") or DEFAULT_URL


def _kept(
    table: dict[str, _ClientT], key: str, make: Callable[[], _ClientT], at_exit: Callable[[], None]
) -> _ClientT:
    """`table[key]`, made on first use under the lock (two first calls from two threads must not build
    two, one dropped with its connection open); the table's first client registers `at_exit` (else
    their sockets are left open at exit)."""
    with _clients_lock:
        client = table.get(key)
        if client is None:
            if not table:
                atexit.register(at_exit)
            client = table[key] = make()
        return client


def _drained(table: dict[str, _ClientT]) -> list[_ClientT]:
    """The clients of `table`, which is left empty (later calls make new ones)."""
    with _clients_lock:
        clients = list(table.values())
        table.clear()
    return clients


def _session_client(url: str) -> AssayClient:
    """A client for session calls: as many requests in flight as sessions, no coalescing, few retries."""
    return AssayClient(
        url,
        max_in_flight=SESSION_IN_FLIGHT,
        concurrency=SESSION_IN_FLIGHT,
        coalesce=False,
        max_retries=SESSION_RETRIES,
    )


def shared_client(url: str) -> AssayClient:
    """One client (connection pool) per URL per process: reward hooks are called once per sample, and
    verl calls them from several threads at once (`functools.lru_cache` does not lock around the call,
    so two first calls built two clients and one was dropped with its connection open)."""
    return _kept(_clients, url, lambda: AssayClient(url), close_shared_clients)


def shared_http(url: str) -> httpx.Client:
    """One plain httpx connection pool per URL per process, closed at exit: for adapters that speak the
    session routes themselves (TRL's environments, one per generation slot, each had its own)."""
    return _kept(_http_clients, url, lambda: httpx.Client(base_url=url, timeout=300.0), _close_http)


def _close_http() -> None:
    for client in _drained(_http_clients):
        client.close()


def shared_async_client(url: str) -> AssayClient:
    """One async client per URL per event loop, coalescing concurrent per-sample calls into batches:
    what slime's and verl's async reward hooks use. A client per call (slime's adapter built one per
    sample) cost 26.5 ms each and a new connection (issue 31)."""
    loop = asyncio.get_running_loop()
    with _clients_lock:
        clients = _async_clients.setdefault(loop, {})
        client = clients.get(url)
        if client is None:
            client = clients[url] = AssayClient(url, coalesce_s=COALESCE_S)
        return client


def shared_session_client(url: str) -> AssayClient:
    """One async client per URL per event loop for session calls (open, step, verify, close): what the
    verl tool adapter uses, instead of a client per call (31 ms a call against 4-7 ms, issue 38)."""
    loop = asyncio.get_running_loop()
    key = f"sessions:{url}"
    with _clients_lock:
        clients = _async_clients.setdefault(loop, {})
        client = clients.get(key)
        if client is None:
            client = clients[key] = _session_client(url)
        return client


def shared_sync_session_client(url: str) -> AssayClient:
    """One sync client per URL per process for session calls, closed at exit: what environments that a
    trainer steps from a thread pool use (SkyRL-gym's), with as many requests in flight as sessions."""
    return _kept(_clients, f"sessions:{url}", lambda: _session_client(url), close_shared_clients)


async def aclose_loop_clients() -> None:
    """Close the running loop's async clients (their connections) before the loop itself closes: a
    client left to the garbage collector after its loop is gone closes its sockets at a random later
    moment. A trainer's loop lives as long as its process; tests and scripts that run several loops call
    this at the end of each."""
    with _clients_lock:
        clients = list(_async_clients.pop(asyncio.get_running_loop(), {}).values())
    for client in clients:
        await client.aclose()


def close_shared_clients() -> None:
    """Close every client `shared_client` made (their connections); later calls make new ones."""
    for client in _drained(_clients):
        client.close()


def reward_or_raise(result: Result) -> float:
    if result.reward is None:
        raise RewardUnavailable(f"Assay returned {result.status.value}: {result.reason}")
    return float(result.reward)
