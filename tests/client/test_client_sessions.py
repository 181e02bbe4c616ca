"""AssayClient's session calls (issue 26): wire shapes, gone sessions, retries that never run a step
twice, and the whole cycle against a real server with a python session."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from assay_testing import LiveServer, bwrap_works
from session_testing import session_settings

from assay.client import AssayClient
from assay.client.sessions import SessionStep, ToolCall
from assay.errors import ResponseError, ServiceError, SessionGoneError, UnreachableError
from assay.types import Item

ITEM = {"id": "q1", "task": "math", "prompt": "What is 6 * 7?", "reference": "42"}


def _step(session_id: str, n: int = 1, status: str = "ok", observation: str = "42\n") -> dict[str, Any]:
    return {"session_id": session_id, "observation": observation, "status": status, "step": n,
            "elapsed_ms": 1.0, "reason": None, "truncated": 0}  # fmt: skip


def _gone(session_id: str, code: int, reason: str) -> httpx.Response:
    body = {"error": {"type": "session_gone", "message": f"session {session_id} is gone: {reason}",
                      "reason": reason}}  # fmt: skip
    return httpx.Response(code, json=body)


def _client(handler: Callable[[httpx.Request], httpx.Response], **kw: Any) -> AssayClient:
    return AssayClient(transport=httpx.MockTransport(handler), sleep=lambda _: None, **kw)


def test_create_sends_the_item_without_none_fields_and_parses_the_answer() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        assert (request.method, request.url.path) == ("POST", "/v1/sessions")
        return httpx.Response(201, json={"session_id": "s-1", "tools": [{"type": "function"}],
                                         "expires_at": 10.0, "limits": {"max_steps": 4}})  # fmt: skip

    with _client(handler) as client:
        opened = client.open_session(Item(task="math", reference="42"), ["python"], {"max_steps": 4})
    assert opened.session_id == "s-1" and opened.limits == {"max_steps": 4}
    assert seen == [{"item": {"task": "math", "reference": "42", "options": {}}, "tools": ["python"],
                     "limits": {"max_steps": 4}}]  # fmt: skip


def test_a_gone_session_is_a_session_gone_error_with_the_reason() -> None:
    reply = _gone("s-1", 410, "expired (600 s after its last call)")
    with _client(lambda r: reply) as client, pytest.raises(SessionGoneError) as caught:
        client.step("s-1", "python", {"code": "1"})
    assert caught.value.status_code == 410 and caught.value.reason.startswith("expired")
    assert caught.value.session_id == "s-1"
    assert isinstance(caught.value, ServiceError)  # callers catching ServiceError still see it


def test_a_422_is_a_service_error_not_a_gone_session() -> None:
    reply = httpx.Response(422, json={"error": {"type": "invalid_request", "message": "tool sql needs"}})
    with _client(lambda r: reply) as client, pytest.raises(ServiceError) as caught:
        client.open_session(ITEM, ["sql"])
    assert not isinstance(caught.value, SessionGoneError) and caught.value.status_code == 422


def test_batch_step_keeps_order_and_puts_gone_sessions_in_their_place() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        calls = json.loads(request.content)["calls"]
        assert [c["session_id"] for c in calls] == ["a", "b", "c"]
        gone = {"session_id": "b", "error": {"type": "session_gone", "message": "gone", "reason": "deleted"}}
        return httpx.Response(200, json={"results": [_step("a"), gone, _step("c", 3)]})

    calls = [ToolCall(session_id="a", tool="python", arguments={"code": "1"}),
             {"session_id": "b", "tool": "python", "arguments": {"code": "2"}},
             ToolCall(session_id="c", tool="python", arguments='{"code": "3"}')]  # fmt: skip
    with _client(handler) as client:
        out = client.step_many(calls)
    assert isinstance(out[0], SessionStep) and isinstance(out[2], SessionStep) and out[2].step == 3
    assert isinstance(out[1], SessionGoneError) and out[1].reason == "deleted" and out[1].session_id == "b"


def test_a_batch_answer_of_the_wrong_length_is_a_response_error() -> None:
    reply = httpx.Response(200, json={"results": [_step("a")]})
    calls = [{"session_id": s, "tool": "python", "arguments": {}} for s in "ab"]
    with _client(lambda r: reply) as client, pytest.raises(ResponseError):
        client.step_many(calls)


def test_a_step_is_not_resent_after_a_read_failure_but_create_is() -> None:
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.path)
        raise httpx.ReadTimeout("the server took the request and did not answer", request=request)

    with _client(handler, max_retries=3) as client:
        with pytest.raises(UnreachableError):
            client.step("s-1", "python", {"code": "x += 1"})
        assert sent == ["/v1/sessions/s-1/step"]  # the cell may have run: never twice
        with pytest.raises(UnreachableError):
            client.step_many([{"session_id": "s-1", "tool": "python", "arguments": {}}])
        assert sent[1:] == ["/v1/sessions/step"]
        sent.clear()
        with pytest.raises(UnreachableError):
            client.open_session(ITEM, ["python"])
        assert len(sent) == 4  # creating is retried like scoring


def test_a_step_is_retried_after_a_refused_connection_and_a_503() -> None:
    answers: list[Any] = ["refuse", httpx.Response(503, headers={"Retry-After": "0"}), "ok"]

    def handler(request: httpx.Request) -> httpx.Response:
        answer = answers.pop(0)
        if answer == "refuse":
            raise httpx.ConnectError("refused", request=request)
        return answer if isinstance(answer, httpx.Response) else httpx.Response(200, json=_step("s-1"))

    with _client(handler) as client:
        assert client.step("s-1", "python", {"code": "1"}).status == "ok"
    assert answers == []


def test_a_step_answered_502_is_not_resent() -> None:
    sent: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(1)
        return httpx.Response(502, text="bad gateway")

    with _client(handler) as client, pytest.raises(ServiceError):
        client.step("s-1", "python", {"code": "1"})
    assert len(sent) == 1


def test_async_calls_share_the_wire_and_delete_is_idempotent() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "DELETE":
            return httpx.Response(204)
        if path == "/v1/sessions":
            return httpx.Response(201, json={"session_id": "s-9", "expires_at": 1.0})
        if path.endswith("/verify"):
            return httpx.Response(200, json={"status": "ok", "reward": 1.0, "correct": True})
        if path == "/v1/sessions/step":
            return httpx.Response(200, json={"results": [_step("s-9")]})
        return httpx.Response(200, json=_step("s-9"))

    async def main() -> None:
        async with AssayClient(async_transport=httpx.MockTransport(handler)) as client:
            opened = await client.aopen_session(ITEM, ["python"])
            step = await client.astep(opened.session_id, "python", {"code": "6*7"})
            many = await client.astep_many([{"session_id": "s-9", "tool": "python", "arguments": {}}])
            result = await client.averify_session(opened.session_id, "\\boxed{42}")
            await client.aclose_session(opened.session_id)
            assert (step.status, len(many), result.reward) == ("ok", 1, 1.0)

    asyncio.run(main())


# -- against a real server ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    live = LiveServer(session_settings(max_open=4))
    live.start()
    yield live
    live.stop()


def test_the_whole_cycle_against_a_live_server(server: LiveServer) -> None:
    with AssayClient(server.url) as client:
        a = client.open_session(ITEM, ["python"], {"max_steps": 3})
        b = client.open_session(ITEM, ["python"])
        assert a.limits["max_steps"] == 3 and a.tools[0]["function"]["name"] == "python"
        assert client.step(a.session_id, "python", {"code": "x = 6 * 7\nx"}).observation.strip() == "42"
        client.close_session(b.session_id)
        out = client.step_many(
            [
                {"session_id": a.session_id, "tool": "python", "arguments": {"code": "print(x + 1)"}},
                {"session_id": b.session_id, "tool": "python", "arguments": {"code": "1"}},
                {"session_id": a.session_id, "tool": "python", "arguments": {"code": "1/0"}},
            ]
        )
        assert isinstance(out[0], SessionStep) and out[0].observation.strip() == "43"
        assert isinstance(out[1], SessionGoneError) and out[1].session_id == b.session_id
        assert isinstance(out[2], SessionStep) and out[2].status == "tool_error"
        ended = client.step(a.session_id, "python", {"code": "1"})
        assert (ended.status, ended.reason) == ("session_ended", "max_steps")
        result = client.verify_session(a.session_id, "The answer is \\boxed{42}.")
        assert (result.status, result.reward) == ("ok", 1.0)
        assert result.details["session"]["steps"] == 3
        client.close_session(a.session_id)
        client.close_session(a.session_id)  # idempotent
        with pytest.raises(SessionGoneError) as caught:
            client.verify_session(a.session_id, "\\boxed{42}")
        assert caught.value.status_code == 410
        with pytest.raises(SessionGoneError) as never:
            client.step("s-never-seen", "python", {"code": "1"})
        assert never.value.status_code == 404


def test_async_cycle_against_a_live_server(server: LiveServer) -> None:
    async def main() -> None:
        async with AssayClient(server.url) as client:
            opened = await asyncio.gather(*(client.aopen_session(ITEM, ["python"]) for _ in range(2)))
            ids = [o.session_id for o in opened]
            steps = await client.astep_many(
                [
                    {"session_id": s, "tool": "python", "arguments": {"code": f"v = {i}"}}
                    for i, s in enumerate(ids)
                ]
            )
            assert all(isinstance(s, SessionStep) and s.status == "ok" for s in steps)
            # each session kept its own state
            seen = [await client.astep(s, "python", {"code": "v"}) for s in ids]
            assert [s.observation.strip() for s in seen] == ["0", "1"]
            wrong = await client.averify_session(ids[0], "\\boxed{41}")
            assert (wrong.status, wrong.reward) == ("ok", 0.0)
            for s in ids:
                await client.aclose_session(s)

    asyncio.run(main())
