"""`/get_observation` as verl-tool's agent loop drives it, against a live server (issue 38 item 5).

verl-tool's `AgentLoop` posts one request per trajectory turn, all trajectories at once, with the
trajectory's `uuid4().hex` as its id, and a `finish` request when the trajectory ends; a request it
times out is sent again. Here more trajectories run than the server has sessions, and every first turn
is sent twice at once (a retried request): each trajectory must keep one session, see only its own tool
output, never a capacity error, and leave no session open."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from assay_testing import LiveServer
from session_testing import live_sessions

import assay.api.verl_tool as verl_tool

MAX_OPEN = 16  # fewer than the trajectories: most wait for a free session


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    yield from live_sessions(max_open=MAX_OPEN)


async def _post(
    client: httpx.AsyncClient, trajectory: str, action: str, finish: bool = False
) -> dict[str, Any]:
    body = {"trajectory_ids": [trajectory], "actions": [action], "finish": [finish], "is_last_step": [finish]}
    response = await client.post("/get_observation", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def _trajectory(client: httpx.AsyncClient, t: int) -> list[str]:
    """One trajectory: two first actions at once (a retried turn), a turn that reads both, finish."""
    trajectory = uuid.uuid4().hex
    first = await asyncio.gather(
        _post(client, trajectory, f"```python\nx = {t}\n```"),
        _post(client, trajectory, f"<python>y = {t + 1}</python>"),
    )
    second = await _post(client, trajectory, "```python\nprint(x, y)\n```")
    ended = await _post(client, trajectory, "", finish=True)
    assert ended == {"observations": [""], "dones": [True], "valids": [True]}
    return [*(f["observations"][0] for f in first), second["observations"][0]]


def _bound(server: LiveServer) -> dict[str, str]:
    """The trajectories the server holds or is opening a session for."""
    return asyncio.run(server.engine.bindings.snapshot(verl_tool.SPACE))


def _run(server: LiveServer, trajectories: int) -> None:
    async def main() -> list[list[str]]:
        limits = httpx.Limits(max_connections=trajectories * 2)
        async with httpx.AsyncClient(base_url=server.url, timeout=300, limits=limits) as client:
            return await asyncio.gather(*(_trajectory(client, t) for t in range(trajectories)))

    seen = asyncio.run(main())
    wrong = [(t, s) for t, s in enumerate(seen) if s != ["", "", f"{t} {t + 1}\n"]]
    assert not wrong, wrong[:3]
    assert server.engine.sessions.open_count == 0
    assert _bound(server) == {}


def test_each_trajectory_keeps_one_session_and_waits_for_a_free_one(server: LiveServer) -> None:
    _run(server, 64)


@pytest.mark.slow
def test_256_trajectories_keep_one_session_each(server: LiveServer) -> None:
    _run(server, 256)


def test_a_server_full_for_too_long_refuses_the_request_not_the_policy(
    server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal is an HTTP error (verl-tool fails the rollout on it), never an observation."""
    monkeypatch.setattr(verl_tool, "OPEN_WAIT_S", 0.3)
    with server.client() as client:
        held = [
            client.post("/v1/sessions", json={"item": {"task": "math"}, "tools": ["python"]})
            for _ in range(MAX_OPEN)
        ]
        try:
            body = {"trajectory_ids": ["t"], "actions": ["<python>1</python>"], "finish": [False]}
            response = client.post("/get_observation", json=body)
            assert response.status_code == 429 and response.json()["error"]["type"] == "sessions_full"
            assert "observations" not in response.json()
        finally:
            for opened in held:
                client.delete(f"/v1/sessions/{opened.json()['session_id']}")
    assert server.engine.sessions.open_count == 0
    assert _bound(server) == {}


def test_a_finish_sent_while_the_first_turn_waits_closes_the_session_once_open(server: LiveServer) -> None:
    """A finish that finds no session yet must not let the one being opened outlive the trajectory."""

    async def main() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            full = [
                (
                    await client.post("/v1/sessions", json={"item": {"task": "math"}, "tools": ["python"]})
                ).json()
                for _ in range(MAX_OPEN)
            ]
            first = asyncio.create_task(_post(client, "late", "<python>print(7)</python>"))
            while "late" not in await server.engine.bindings.snapshot(verl_tool.SPACE):
                await asyncio.sleep(0)  # the first turn is waiting for a session
            ended = asyncio.create_task(_post(client, "late", "", finish=True))
            await client.delete(f"/v1/sessions/{full[0]['session_id']}")
            assert (await ended)["dones"] == [True]
            # the turn ran before the finish closed its session, or found it closed: never another one
            assert (await first)["observations"][0] in ("7\n", "[session ended: deleted]")
            for opened in full[1:]:
                await client.delete(f"/v1/sessions/{opened['session_id']}")

    asyncio.run(main())
    assert server.engine.sessions.open_count == 0
