"""The trajectory -> session bindings under `assay serve --ray`: one table that every ingress replica reads.

Ray Serve's proxy does not keep a client on one ingress replica, so verl-tool's `/get_observation` and
NeMo Gym's `resources_session_id` routes keep their key -> session table (`assay.sessions.bindings`) in
the `bindings` deployment: one replica holding one `Bindings`, whose methods run on its one event loop
(so a claim is atomic across ingress replicas: two first calls of a trajectory, on two replicas, open one
session). Each ingress replica reaches it through `RayBindings`, which has the table's methods. The
sessions themselves are on the session holders; the table holds only keys and ids.

The deployment is part of the application (it ends with it). If its replica is lost, Serve starts another
with an empty table: trajectories in flight then open new sessions on their next call (their old ones
end by their TTL), as they would if the one ingress replica holding the table were lost.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

from assay.sessions.bindings import Bindings, BindingsUnavailable, Claim

FAILED = "failed"  # how the deployment returns an open's error (a raised one would arrive wrapped by Ray)


class BindingsReplica:
    """The body of the `bindings` deployment: the in-process table, its errors returned as values."""

    def __init__(self) -> None:
        self._table = Bindings()

    async def claim(self, space: str, keys: Sequence[str]) -> list[Claim]:
        return await self._table.claim(space, keys)

    async def settle(self, space: str, key: str, token: int, value: Any) -> bool:
        return await self._table.settle(space, key, token, value)

    async def abandon(self, space: str, key: str, token: int, error: BaseException | None) -> None:
        await self._table.abandon(space, key, token, error)

    async def wait(self, space: str, key: str) -> Claim:
        try:
            return await self._table.wait(space, key)
        except Exception as exc:  # the open failed: its waiters raise what its opener raised
            return Claim(FAILED, exc)

    async def release(self, space: str, key: str, close: bool) -> Any:
        return await self._table.release(space, key, close)

    async def drop(self, space: str, key: str) -> None:
        await self._table.drop(space, key)

    async def snapshot(self, space: str) -> dict[str, str]:
        return await self._table.snapshot(space)


def _portable(error: BaseException | None) -> BaseException | None:
    """`error` if it survives pickling (it travels to the table and to every waiter), else None: the
    waiters then open the key themselves and meet the error on their own."""
    if error is None:
        return None
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return None
    return error


class RayBindings:
    """`KeyedSessions` on the `bindings` deployment, through its handle (one round trip per call). A call
    Ray cannot complete (the replica lost or restarting, the application going away) raises
    `BindingsUnavailable`: the route answers 503 with Retry-After instead of a 500."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    async def _call(self, method: str, *args: Any) -> Any:
        try:
            return await getattr(self._handle, method).remote(*args)
        except Exception as exc:  # Ray's own failure: the table's errors come back as values
            raise BindingsUnavailable(
                f"the trajectory table (the `bindings` deployment) did not answer {method}: "
                f"{type(exc).__name__}"
            ) from exc

    async def claim(self, space: str, keys: Sequence[str]) -> list[Claim]:
        if not keys:
            return []
        claims: list[Claim] = await self._call("claim", space, list(keys))
        return claims

    async def settle(self, space: str, key: str, token: int, value: Any) -> bool:
        settled: bool = await self._call("settle", space, key, token, value)
        return settled

    async def abandon(self, space: str, key: str, token: int, error: BaseException | None = None) -> None:
        await self._call("abandon", space, key, token, _portable(error))

    async def wait(self, space: str, key: str) -> Claim:
        claim: Claim = await self._call("wait", space, key)
        if claim.state == FAILED:
            raise claim.value
        return claim

    async def release(self, space: str, key: str, close: bool = False) -> Any:
        return await self._call("release", space, key, close)

    async def drop(self, space: str, key: str) -> None:
        await self._call("drop", space, key)

    async def snapshot(self, space: str) -> dict[str, str]:
        held: dict[str, str] = await self._call("snapshot", space)
        return held
