"""The key -> session table of the trainer routes (`assay.sessions.bindings.Bindings`): one open per key
however many calls claim it at once, waiters get the opener's session (or its error), a release waits for
an open in flight, a closed key stays closed, and an open whose opener vanished is given up."""

from __future__ import annotations

import asyncio
import pickle

import pytest
from session_testing import ServeHandle

from assay.distributed.bindings import BindingsReplica, RayBindings
from assay.sessions import SessionsFull
from assay.sessions.bindings import (
    ABSENT,
    CLOSED,
    HELD,
    OPENING,
    YOURS,
    Bindings,
    BindingsUnavailable,
    Claim,
)


def test_parallel_claims_of_one_key_open_it_once_and_the_others_get_its_session() -> None:
    async def main() -> None:
        table = Bindings()
        first, second, other = await table.claim("t", ["a", "a", "b"])
        assert (first.state, second.state, other.state) == (YOURS, OPENING, YOURS)
        waiting = asyncio.create_task(table.wait("t", "a"))
        assert await table.snapshot("t") == {"a": OPENING, "b": OPENING}
        assert await table.settle("t", "a", first.value, "s-1")
        assert await waiting == Claim(HELD, "s-1")
        assert await table.claim("t", ["a"]) == [Claim(HELD, "s-1")]
        await table.abandon("t", "b", other.value)  # no call to open it for: the key is free again
        assert (await table.claim("t", ["b"]))[0].state == YOURS

    asyncio.run(main())


def test_a_failed_open_raises_its_error_for_the_waiters_and_leaves_the_key_free() -> None:
    async def main() -> None:
        table = Bindings()
        (mine,) = await table.claim("t", ["a"])
        waiting = asyncio.create_task(table.wait("t", "a"))
        releasing = asyncio.create_task(table.release("t", "a"))
        await asyncio.sleep(0)  # both wait on the open
        await table.abandon("t", "a", mine.value, SessionsFull(4, 1.0))
        with pytest.raises(SessionsFull):
            await waiting
        assert await releasing is None  # a failed open bound nothing to close
        assert await table.snapshot("t") == {}

    asyncio.run(main())


def test_a_release_waits_for_the_open_in_flight_and_close_keeps_the_key_closed() -> None:
    async def main() -> None:
        table = Bindings()
        (mine,) = await table.claim("t", ["a"])
        releasing = asyncio.create_task(table.release("t", "a", close=True))
        await asyncio.sleep(0)
        assert not releasing.done()
        assert await table.settle("t", "a", mine.value, "s-1")
        assert await releasing == "s-1"  # the session the finish must close
        assert await table.claim("t", ["a"]) == [Claim(CLOSED)]
        assert await table.wait("t", "a") == Claim(CLOSED)
        assert await table.release("t", "a") is None  # idempotent

    asyncio.run(main())


def test_a_cancelled_opener_lets_a_waiter_open_the_key_itself() -> None:
    async def main() -> None:
        table = Bindings()
        (mine,) = await table.claim("t", ["a"])
        waiting = asyncio.create_task(table.wait("t", "a"))
        await asyncio.sleep(0)
        await table.abandon("t", "a", mine.value, asyncio.CancelledError())
        assert await waiting == Claim(ABSENT)
        assert (await table.claim("t", ["a"]))[0].state == YOURS

    asyncio.run(main())


def test_an_open_whose_opener_vanished_is_given_up_and_its_late_settle_refused() -> None:
    async def main() -> None:
        table = Bindings(open_limit_s=0.01)
        (lost,) = await table.claim("t", ["a"])
        assert await table.wait("t", "a") == Claim(ABSENT)  # given up: the waiter claims it now
        (mine,) = await table.claim("t", ["a"])
        assert mine.state == YOURS and mine.value != lost.value
        assert not await table.settle("t", "a", lost.value, "s-late")  # its opener closes s-late
        assert await table.settle("t", "a", mine.value, "s-2")
        assert await table.claim("t", ["a"]) == [Claim(HELD, "s-2")]

    asyncio.run(main())


def test_spaces_are_apart_and_a_dropped_key_opens_again() -> None:
    async def main() -> None:
        table = Bindings()
        (mine,) = await table.claim("verl_tool", ["a"])
        assert (await table.claim("nemo_gym", ["a"]))[0].state == YOURS
        await table.settle("verl_tool", "a", mine.value, "s-1")
        await table.drop("verl_tool", "a")  # its session ended
        assert (await table.claim("verl_tool", ["a"]))[0].state == YOURS

    asyncio.run(main())


def test_the_ray_replica_returns_an_opens_error_as_a_value_that_pickles() -> None:
    """Under Ray the error travels to the waiter on another ingress replica, pickled."""

    async def main() -> Claim:
        replica = BindingsReplica()
        (mine,) = await replica.claim("t", ["a"])
        waiting = asyncio.create_task(replica.wait("t", "a"))
        await asyncio.sleep(0)
        await replica.abandon("t", "a", mine.value, SessionsFull(4, 1.0))
        return await waiting

    claim = pickle.loads(pickle.dumps(asyncio.run(main())))
    assert claim.state == "failed" and isinstance(claim.value, SessionsFull) and claim.value.limit == 4


def test_a_table_ray_cannot_reach_is_unavailable_and_an_opens_own_error_stays_its_own() -> None:
    async def main() -> None:
        handle = ServeHandle()
        table = RayBindings(handle)
        (mine,) = await table.claim("t", ["a"])
        waiting = asyncio.create_task(table.wait("t", "a"))
        await asyncio.sleep(0)
        await table.abandon("t", "a", mine.value, SessionsFull(4, 1.0))
        with pytest.raises(SessionsFull):  # the open's error, as the opener met it: not the table's
            await waiting
        handle.lost = True
        for call in (table.claim("t", ["b"]), table.wait("t", "b"), table.release("t", "b", close=True)):
            with pytest.raises(BindingsUnavailable, match="did not answer"):
                await call

    asyncio.run(main())
