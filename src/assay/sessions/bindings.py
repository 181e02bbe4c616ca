"""Key -> session bindings for the trainer routes that name a trajectory, not a session (issue 38).

verl-tool's `/get_observation` names a trajectory id and NeMo Gym's Environment Server a
`resources_session_id`; the route opens a session on the key's first call and finds it on the next. The
binding must be one per key however the calls arrive: two parallel first calls open ONE session (the
second waits for the first's open), a finish that arrives while the open is in flight closes it once it
is open, and a key whose session ended is released. `Bindings` is that table, in one process: the
in-process engine has one, and under `assay serve --ray` with several ingress replicas one `Bindings`
lives in the `bindings` deployment, which every replica reaches through `RayBindings`
(`assay.distributed.bindings`) with these same methods, so a trajectory's calls may reach any replica.

The protocol, per key in a `space` (one per front end):

- `claim(space, keys)`: each key's state, without waiting: `held` (its value), `closed`, `opening`
  (another caller opens it: `wait` for it) or `yours` (it was absent and is now opening by the caller,
  whose claim's value is a token to `settle` it with a value or `abandon` it, however its open ends);
- `wait(space, key)`: the state once no open is in flight: `held`, `closed` or `absent` (claim again);
  an open that failed raises its error here, as it did for the opener. An open still in flight after
  `OPEN_LIMIT_S` (its opener gone without a word: a replica lost, a request cancelled before its open
  began) is given up, and its late `settle` answers False so that its opener closes the session;
- `release(space, key, close)`: the value, removed (after waiting for an open in flight); `close` keeps
  the key closed, so a late first call does not open it again; `drop`: removed without waiting.

Values are opaque to the table (under Ray they are pickled), and each space keeps at most `KEPT` held
and `KEPT` closed keys, the oldest forgotten first (their sessions end by their TTL).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from assay.errors import BackendUnavailable

KEPT = 100_000
OPEN_LIMIT_S = 3600.0 + 600.0  # an open waits at most an hour for a free session (session_open.py)

HELD, CLOSED, OPENING, YOURS, ABSENT = "held", "closed", "opening", "yours", "absent"


class BindingsUnavailable(BackendUnavailable):
    """The table did not answer (under `assay serve --ray`: its deployment's replica lost or restarting):
    the route refuses the request with a 503 and Retry-After, which a trainer's client retries; the
    trajectory never gets an infrastructure error as its observation, nor a 500."""

    retry_after_s = 1.0


class Claim(NamedTuple):
    state: str  # HELD, CLOSED, OPENING, YOURS or ABSENT
    value: Any = None


class KeyedSessions(Protocol):
    """What a front end asks of a bindings table; `Bindings` (in-process) and `RayBindings` (shared by
    the ingress replicas) both answer it."""

    async def claim(self, space: str, keys: Sequence[str]) -> list[Claim]: ...

    async def settle(self, space: str, key: str, token: int, value: Any) -> bool: ...

    async def abandon(self, space: str, key: str, token: int, error: BaseException | None = None) -> None: ...

    async def wait(self, space: str, key: str) -> Claim: ...

    async def release(self, space: str, key: str, close: bool = False) -> Any: ...

    async def drop(self, space: str, key: str) -> None: ...

    async def snapshot(self, space: str) -> dict[str, str]: ...


@dataclass
class _Space:
    held: OrderedDict[str, Any] = field(default_factory=OrderedDict)
    opening: dict[str, tuple[int, asyncio.Future[Any]]] = field(default_factory=dict)  # key -> (token, open)
    closed: OrderedDict[str, None] = field(default_factory=OrderedDict)


_NOT_OPENED = object()  # an abandoned open's result: its waiters claim again


class Bindings:
    """The table in one event loop. Every method checks and changes the table with no await in between,
    so each is atomic for the callers of that loop."""

    def __init__(self, open_limit_s: float = OPEN_LIMIT_S) -> None:
        self._spaces: dict[str, _Space] = {}
        self._tokens = itertools.count(1)
        self._open_limit_s = open_limit_s

    def _space(self, space: str) -> _Space:
        return self._spaces.setdefault(space, _Space())

    def _state(self, table: _Space, key: str) -> Claim:
        if key in table.closed:
            return Claim(CLOSED)
        if key in table.opening:
            return Claim(OPENING)
        if key in table.held:
            return Claim(HELD, table.held[key])
        return Claim(ABSENT)

    async def claim(self, space: str, keys: Sequence[str]) -> list[Claim]:
        table, claims = self._space(space), []
        for key in keys:
            state = self._state(table, key)
            if state.state == ABSENT:
                token = next(self._tokens)
                table.opening[key] = (token, asyncio.get_running_loop().create_future())
                state = Claim(YOURS, token)
            claims.append(state)
        return claims

    def _take(self, space: str, key: str, token: int) -> asyncio.Future[Any] | None:
        """The open of `key` if `token` still holds it (not given up since), removed from the table."""
        table = self._space(space)
        if table.opening.get(key, (None,))[0] != token:
            return None
        return table.opening.pop(key)[1]

    async def settle(self, space: str, key: str, token: int, value: Any) -> bool:
        """Bind `key` to `value`; False when its open was given up meanwhile (the value is not kept)."""
        opened = self._take(space, key, token)
        if opened is None:
            return False
        table = self._space(space)
        table.held[key] = value
        while len(table.held) > KEPT:
            table.held.popitem(last=False)
        opened.set_result(value)
        return True

    async def abandon(self, space: str, key: str, token: int, error: BaseException | None = None) -> None:
        """The open of `key` did not happen: its waiters get `error`, or claim again when there is none
        (no call to open it for, or the opener's request was cancelled)."""
        opened = self._take(space, key, token)
        if opened is None:
            return
        if error is None or isinstance(error, asyncio.CancelledError):
            opened.set_result(_NOT_OPENED)
        else:
            opened.set_exception(error)
            opened.exception()  # retrieved: a key no one else waits on must not warn

    async def _outcome(self, space: str, key: str) -> Any:
        """The value the open in flight of `key` binds (raising its error), or _NOT_OPENED."""
        token, opened = self._space(space).opening[key]
        done, _ = await asyncio.wait({opened}, timeout=self._open_limit_s)
        if not done:
            await self.abandon(space, key, token)  # its opener is gone: the next claim opens it
            return _NOT_OPENED
        return opened.result()

    async def wait(self, space: str, key: str) -> Claim:
        table = self._space(space)
        if key in table.opening:
            value = await self._outcome(space, key)
            if value is not _NOT_OPENED:
                return Claim(HELD, value)
        return self._state(table, key)

    async def release(self, space: str, key: str, close: bool = False) -> Any:
        """The key's value (None when it held none), after any open in flight ends; the key is then
        free (or closed, with `close`)."""
        table = self._space(space)
        if key in table.opening:
            with contextlib.suppress(Exception):  # a failed open holds nothing
                await self._outcome(space, key)
        if close:
            table.closed[key] = None
            while len(table.closed) > KEPT:
                table.closed.popitem(last=False)
        return table.held.pop(key, None)

    async def drop(self, space: str, key: str) -> None:
        self._space(space).held.pop(key, None)

    async def snapshot(self, space: str) -> dict[str, str]:
        """Each key held or being opened, and its state (what tests and operators look at)."""
        table = self._space(space)
        return {**{key: HELD for key in table.held}, **{key: OPENING for key in table.opening}}
