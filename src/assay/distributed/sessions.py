"""Sessions under `assay serve --ray`: held by session-holder actors; each call goes to its holder by name.

    ingress replica (RayEngine) ── open: round-robin over its holders
      ├── holder assay-sessions-1f2e3d4c   a SessionHost; sessions' sandboxes on the holder's node
      └── holder assay-sessions-9a8b7c6d   ...
    step / verify / DELETE of s-1f2e3d4c-<24 hex>  ->  ray.get_actor("assay-sessions-1f2e3d4c")

Why named actors and not Ray Serve's model multiplexing (keyed by session id): multiplexing is a cache of
things a replica can load again. A replica unloads the least recently used ids past
`max_num_models_per_replica`, a request for an id no replica has is sent to some replica to load, and
routing to a replica that has the id is a preference that falls back to others (Ray 2.60's
`MultiplexMixin`: the replicas with the id, then those with the fewest ids, then all). A session cannot
be loaded again from its id: its state is a live interpreter in a sandbox. So each session lives in one
named actor, the id carries the actor's name, and every call is sent to exactly that actor. A holder's
loss is then exact: a call to a dead actor raises `RayActorError`, and only the sessions it held end.

Ids are `s-<holder token>-<24 hex>`; a holder gets a fresh token (and name) whenever one is started, so
an id never reaches a replacement that does not hold it. A session whose holder is gone (the actor or its
process was killed, its node was lost) answers `session_gone` 410 with that reason; an id that is not of
this shape answers 404.

Lifetime: an ingress replica starts its holders on its first session and owns them (Ray ends an actor
with its owner), so sessions share the fate of the replica that opened them, and `aclose` ends them.
Another ingress replica reaches them by name, so a session's calls may arrive at any ingress replica.
A holder found dead when opening a session is replaced. `sessions.max_open` holds per holder.

Bounds: every call to a holder waits at most its own longest time (a step: `sessions.max_call_wall_s`
plus the interrupt's grace) plus `ray.sessions.reply_margin_s`; a holder silent past that (a node cut off
but not yet declared dead) ends the session as `session_gone`, and a close is sent to it in case it
comes back. An open that times out passes to the next holder; a holder that never answered at all (Ray
could not place it) is replaced. Nothing waits without end.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import secrets
from collections.abc import Sequence
from typing import Any

from assay.errors import ItemError
from assay.metrics import Metrics
from assay.sandbox.base import SandboxError
from assay.sessions.limits import SessionLimits
from assay.sessions.service import SessionHost, SessionInfo, StepCall, step_each
from assay.sessions.store import SessionGone, SessionsFull, StepResult, count_step
from assay.sessions.tools import ToolRegistry
from assay.settings import Settings
from assay.types import Item

log = logging.getLogger("assay.distributed")

NAMESPACE = "assay"
_ID = re.compile(r"s-([0-9a-f]{8})-[0-9a-f]{24}")
_START_S = 60.0  # a holder's process start plus a sandbox start (30 s at most), for open and record
_KEPT = 1024  # other replicas' holder handles kept
_GRACE_S = 2.0  # a cell that ignores its interrupt this long ends the session (the python tool)


def holder_name(token: str) -> str:
    return f"assay-sessions-{token}"


def holder_of(session_id: str) -> str | None:
    """The name of the actor that holds `session_id`, or None when the id is not a Ray session's."""
    match = _ID.fullmatch(session_id)
    return holder_name(match.group(1)) if match else None


class SessionHolder:
    """The body of one session-holder actor (a threaded actor: calls of different sessions run at once).
    It returns Assay's own failures as values, not raised: Ray would wrap a raised one in `RayTaskError`."""

    def __init__(self, settings: Settings, token: str) -> None:
        self.host = SessionHost(settings, Metrics(), id_prefix=f"s-{token}-")  # the engine's kind of host

    def open(self, item: Item, tools: list[str], limits: SessionLimits) -> tuple[Any, int]:
        """(SessionInfo or the failure, sessions open here now)."""
        try:
            info: Any = self.host.open_now(item, tools, limits)
        except (SessionsFull, SandboxError) as exc:
            info = exc
        except ItemError as exc:  # its subclasses map to 422 alike; a plain ItemError always pickles
            info = ItemError(str(exc))
        return info, self.host.open_count

    def step(self, session_id: str, tool: str, arguments: Any) -> StepResult | SessionGone:
        try:
            return self.host.step_now(session_id, tool, arguments)
        except SessionGone as exc:
            return exc

    def record(self, session_id: str, response: str) -> tuple[dict[str, Any], dict[str, Any]] | SessionGone:
        """What verify needs: the item with the response, and the session's trace summary."""
        try:
            return self.host.record_now(session_id, response)
        except SessionGone as exc:
            return exc

    def close(self, session_id: str) -> int:
        self.host.close_now(session_id)
        return self.host.open_count

    def count(self) -> int:
        """Sessions open here now."""
        return self.host.open_count

    def where(self) -> tuple[int, str]:
        """This holder's process id and Ray node id (what a test kills or removes)."""
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def shutdown(self) -> None:
        self.host.shutdown()


class RaySessions:
    """The ingress side: this replica's holders, and the routing of every session call to its holder."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings, self.metrics = settings, metrics
        self.config = settings.ray.sessions
        self.tools = ToolRegistry.from_settings(settings)
        self._holders: list[tuple[str, Any]] = []  # this replica's holders: (name, actor handle)
        self._open: dict[int, int] = {}  # holder slot -> sessions open there, as it last said
        self._answered: set[str] = set()  # own holders that have answered once (they started)
        self._known: dict[str, Any] = {}  # other replicas' holders by name (a name is never reused)
        self._turn = itertools.count()
        self._lock = asyncio.Lock()

    # -- holders ----------------------------------------------------------------------------------
    def _start_holder(self) -> tuple[str, Any]:
        import ray

        remote: Any = ray.remote(SessionHolder)
        token = secrets.token_hex(4)
        return holder_name(token), remote.options(
            name=holder_name(token),
            namespace=NAMESPACE,
            num_cpus=self.config.num_cpus,
            resources=dict(self.config.resources),
            max_concurrency=self.config.max_concurrency,
            max_restarts=0,  # a restarted holder would hold none of its sessions
            scheduling_strategy="SPREAD",  # holders on different nodes: a node loss ends fewer sessions
        ).remote(self.settings, token)

    async def _own(self) -> list[tuple[str, Any]]:
        async with self._lock:
            if not self._holders:
                self._holders = await asyncio.to_thread(
                    lambda: [self._start_holder() for _ in range(self.config.holders)]
                )
            return self._holders

    async def _replace(self, slot: int, dead: Any) -> None:
        """A new holder (a new name) in a dead one's slot. The old one is ended first: one that never
        answered (Ray could not place it) must not stay pending as well."""
        import ray

        async with self._lock:
            if self._holders[slot][1] is dead:
                ray.kill(dead)
                self._holders[slot] = await asyncio.to_thread(self._start_holder)
                self._set_open(slot, 0)

    def _set_open(self, slot: int, count: int) -> None:
        self._open[slot] = count
        self.metrics.sessions_open.set(sum(self._open.values()))

    async def _lookup(self, name: str) -> Any | None:
        """The holder by that name: this replica's own, or found by name (and kept: a name is never
        given to another holder, so a kept handle of a dead one fails as the dead one)."""
        own = next((handle for held, handle in self._holders if held == name), None)
        if own is not None or name in self._known:
            return own if own is not None else self._known[name]
        import ray

        try:
            found = await asyncio.to_thread(ray.get_actor, name, NAMESPACE)
        except ValueError:  # no live actor by that name
            return None
        if len(self._known) >= _KEPT:
            self._known.clear()
        self._known[name] = found
        return found

    # -- the protocol's session methods ---------------------------------------------------------
    async def open(self, item: Item, tools: list[str], limits: SessionLimits) -> SessionInfo:
        """On this replica's next holder in turn; a full or dead holder passes to the next."""
        from ray.exceptions import RayActorError

        holders = await self._own()
        full: SessionsFull | None = None
        start = next(self._turn)
        for offset in range(len(holders)):
            slot = (start + offset) % len(holders)
            holder = holders[slot][1]
            try:
                info, count = await asyncio.wait_for(
                    holder.open.remote(item, tools, limits), _START_S + self.config.reply_margin_s
                )
            except RayActorError as exc:
                log.warning("session holder %s lost (%s); starting another", holders[slot][0], exc)
                await self._replace(slot, holder)
                continue
            except TimeoutError:  # slow, or never placed: only one that never answered is given up
                if holders[slot][0] not in self._answered:
                    log.warning("session holder %s never started; starting another", holders[slot][0])
                    await self._replace(slot, holder)
                continue
            self._answered.add(holders[slot][0])
            self._set_open(slot, count)
            if isinstance(info, SessionsFull):
                full = info
                continue
            if isinstance(info, BaseException):
                raise info
            return info
        if full is not None:
            raise SessionsFull(self.settings.sessions.max_open * len(holders), full.retry_after_s)
        raise SandboxError("no session holder answered (each was lost); try again")

    async def _on_holder(self, session_id: str, method: str, args: Sequence[Any], timeout_s: float) -> Any:
        """Call `method` on the holder of `session_id`; SessionGone when the holder is not there."""
        from ray.exceptions import RayActorError

        name = holder_of(session_id)
        if name is None:
            raise SessionGone(
                session_id, "no session with this id (never created, or ended long ago)", ended=False
            )
        lost = f"its holder ({name}) was lost: the actor, its process or its node is gone"
        holder = await self._lookup(name)
        if holder is None:
            raise SessionGone(session_id, lost, ended=True)
        try:
            return await asyncio.wait_for(getattr(holder, method).remote(*args), timeout_s)
        except RayActorError:
            raise SessionGone(session_id, lost, ended=True) from None
        except TimeoutError:
            holder.close.remote(session_id)  # in case it comes back: the session is over either way
            reason = f"its holder ({name}) did not answer within {timeout_s:g} s"
            raise SessionGone(session_id, reason, ended=True) from None

    async def step(self, session_id: str, tool: str, arguments: Any) -> StepResult:
        wait = self.settings.sessions.max_call_wall_s + _GRACE_S + self.config.reply_margin_s
        result = await self._on_holder(session_id, "step", (session_id, tool, arguments), wait)
        if isinstance(result, SessionGone):
            raise result
        count_step(self.metrics, tool, result.status, result.reason)
        return result

    async def steps(self, calls: Sequence[StepCall]) -> list[StepResult | SessionGone]:
        return await step_each(self.step, calls)

    async def record(self, session_id: str, response: str) -> tuple[dict[str, Any], dict[str, Any]]:
        wait = _START_S + self.config.reply_margin_s
        answer = await self._on_holder(session_id, "record", (session_id, response), wait)
        if isinstance(answer, SessionGone):
            raise answer
        return answer

    async def close(self, session_id: str) -> None:
        """Idempotent: an unknown id, or one whose holder is gone, is already closed."""
        try:
            count = await self._on_holder(session_id, "close", (session_id,), self.config.reply_margin_s)
        except SessionGone:
            return
        name = holder_of(session_id)
        slot = next((i for i, (held, _) in enumerate(self._holders) if held == name), None)
        if slot is not None:  # one of this replica's holders: its count is this replica's to show
            self._set_open(slot, count)

    async def aclose(self) -> None:
        """End this replica's holders: their sessions close (sandboxes killed), then the actors go."""
        import ray

        holders, self._holders = self._holders, []
        if not holders:
            return
        await asyncio.gather(
            *(asyncio.wait_for(h.shutdown.remote(), 10.0) for _, h in holders), return_exceptions=True
        )
        for _, holder in holders:
            ray.kill(holder)
