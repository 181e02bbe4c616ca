"""Assay sessions over MCP (`/mcp`), driven by the official SDK's own client (`mcp.client.streamable_http`
and `ClientSession`, the 1.x installed in .venv) against a live server; one test runs the 2.3.0 server
and client in .venv-mcp. Attacks that no SDK client would send go over plain HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from assay_testing import LiveServer, bwrap_works
from fastapi.testclient import TestClient
from session_testing import SQL, session_settings, sql_session_settings

from assay.api import create_app

pytestmark = pytest.mark.requires_mcp
ROOT = Path(__file__).resolve().parents[2]
MAX_OPEN = 64
ROLLOUTS = 64


def _math(reference: str = "42") -> dict[str, Any]:
    return {"id": "q1", "task": "math", "prompt": "What is 6 * 7?", "reference": reference}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    live = LiveServer(sql_session_settings(tmp_path_factory.mktemp("mcp_sql"), max_open=MAX_OPEN))
    live.start()
    yield live
    live.stop()


@pytest.fixture(autouse=True)
def no_session_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test ends with every session closed (an MCP session's end closes the session it opened;
    the server does it after answering the client's DELETE, hence the bounded wait)."""
    yield
    if "server" in request.fixturenames:
        live = request.getfixturevalue("server")
        _until(lambda: live.engine.sessions.open_count == 0, "a session outlived its MCP session")


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline, pause = time.monotonic() + 10, threading.Event()
    while not condition():
        assert time.monotonic() < deadline, what
        pause.wait(0.02)


@contextlib.asynccontextmanager
async def mcp_client(server: LiveServer, session_id: str | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """An initialized SDK `ClientSession` on /mcp (bound to `session_id` by its header), and the HTTP
    client under it (whose headers a test may change)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"X-Assay-Session": session_id} if session_id else {}
    async with (
        httpx.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{server.url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session, http


def _create(server: LiveServer, item: dict[str, Any], tools: list[str]) -> str:
    with server.client() as http:
        created = http.post("/v1/sessions", json={"item": item, "tools": tools})
    assert created.status_code == 201, created.text
    return str(created.json()["session_id"])


def _text(result: Any) -> str:
    return str(result.content[0].text)


def test_the_tools_are_the_sessions_own_with_the_schemas_v1_tasks_lists(server: LiveServer) -> None:
    session_id = _create(server, SQL, ["python", "sql"])

    async def listed() -> tuple[list[Any], list[Any]]:
        async with mcp_client(server, session_id) as (bound, _), mcp_client(server) as (unbound, _):
            return (await bound.list_tools()).tools, (await unbound.list_tools()).tools

    bound, unbound = asyncio.run(listed())
    with server.client() as http:
        offered = {t["function"]["name"]: t["function"] for t in http.get("/v1/tasks").json()["tools"]}
        http.delete(f"/v1/sessions/{session_id}")
    assert [t.name for t in bound] == ["python", "sql", "verify", "close_session"]
    for tool in bound[:2]:
        function = offered[tool.name]
        assert (tool.description, tool.inputSchema) == (function["description"], function["parameters"])
    assert all(tool.meta == {"assay/lifecycle": True} for tool in bound[2:])
    assert [t.name for t in unbound] == ["open_session"]


def test_python_state_persists_across_three_calls(server: LiveServer) -> None:
    session_id = _create(server, _math(), ["python"])

    async def rollout() -> list[Any]:
        async with mcp_client(server, session_id) as (session, _):
            codes = ("x = 6", "x = x * 7", "print(x)")
            return [await session.call_tool("python", {"code": code}) for code in codes]

    calls = asyncio.run(rollout())
    assert [(c.isError, _text(c)) for c in calls] == [(False, ""), (False, ""), (False, "42\n")]
    assert [c.structuredContent["step"] for c in calls] == [1, 2, 3]
    with server.client() as http:
        http.delete(f"/v1/sessions/{session_id}")


def test_sql_and_run_tests_answer_through_mcp(server: LiveServer) -> None:
    code_item = {"task": "code", "tests": [{"stdin": "2\n", "stdout": "4"}, {"stdin": "3\n", "stdout": "6"}]}
    sql_id, code_id = _create(server, SQL, ["sql"]), _create(server, code_item, ["run_tests"])

    async def calls() -> tuple[Any, Any, Any]:
        async with mcp_client(server, sql_id) as (sql, _), mcp_client(server, code_id) as (code, _):
            counted = await sql.call_tool("sql", {"query": "SELECT count(*) FROM students"})
            refused = await sql.call_tool("sql", {"query": "DROP TABLE students"})
            tested = await code.call_tool("run_tests", {"code": "print(int(input()) * 2)"})
            return counted, refused, tested

    counted, refused, tested = asyncio.run(calls())
    with server.client() as http:
        expected = http.post(
            f"/v1/sessions/{_create(server, SQL, ['sql'])}/step",
            json={"tool": "sql", "arguments": {"query": "SELECT count(*) FROM students"}},
        )
        for session_id in (sql_id, code_id, expected.json()["session_id"]):
            http.delete(f"/v1/sessions/{session_id}")
    assert (counted.isError, _text(counted)) == (False, expected.json()["observation"])
    assert refused.isError and refused.structuredContent["status"] == "tool_error"
    assert not tested.isError and _text(tested).endswith("2/2 public tests passed")


def test_verify_answers_the_result_v1_sessions_verify_answers(server: LiveServer) -> None:
    session_id = _create(server, _math(), ["python"])
    response = "So the answer is \\boxed{42}."

    async def verified() -> tuple[Any, Any]:
        async with mcp_client(server, session_id) as (session, _):
            await session.call_tool("python", {"code": "6 * 7"})
            first = await session.call_tool("verify", {"response": response})
            again = await session.call_tool("verify", {"response": "\\boxed{41}"})
            return first, again

    first, again = asyncio.run(verified())
    with server.client() as http:
        rest = http.post(f"/v1/sessions/{session_id}/verify", json={"response": response}).json()
        http.delete(f"/v1/sessions/{session_id}")
    mcp_result = first.structuredContent
    assert not first.isError and json.loads(_text(first)) == mcp_result
    for key in ("id", "task", "status", "correct", "reward", "reason", "extracted"):
        assert mcp_result[key] == rest[key], key
    assert mcp_result["reward"] == 1.0 and mcp_result["details"]["session"]["steps"] == 1
    # one verify per MCP session: it is not an oracle for trying answers
    assert again.isError and again.structuredContent["error"]["type"] == "verified"


def test_a_tool_printing_a_reward_does_not_change_the_verdict(server: LiveServer) -> None:
    session_id = _create(server, _math(), ["python"])

    async def rollout() -> Any:
        async with mcp_client(server, session_id) as (session, _):
            printed = await session.call_tool(
                "python", {"code": "print('reward: 1.0')\nprint('\\\\boxed{42}')"}
            )
            assert _text(printed) == "reward: 1.0\n\\boxed{42}\n"
            return await session.call_tool("verify", {"response": "reward: 1.0 (the tool said so)"})

    verdict = asyncio.run(rollout()).structuredContent
    with server.client() as http:
        http.delete(f"/v1/sessions/{session_id}")
    assert (verdict["status"], verdict["correct"], verdict["reward"]) == ("ok", False, 0.0)


def test_policy_mistakes_and_gone_sessions_are_tool_errors(server: LiveServer) -> None:
    session_id = _create(server, _math(), ["python"])

    async def mistakes() -> dict[str, Any]:
        async with mcp_client(server, session_id) as (session, _):
            found = {
                "unknown": await session.call_tool("shell", {"cmd": "ls"}),
                "bad_args": await session.call_tool("python", {"source": "1"}),
                "not_json_object": await session.call_tool("python", {"code": 5}),
                "traceback": await session.call_tool("python", {"code": "1 / 0"}),
                "close": await session.call_tool("close_session", {}),
            }
            found["after_close"] = await session.call_tool("python", {"code": "1"})
            found["verify_after_close"] = await session.call_tool("verify", {"response": "\\boxed{42}"})
            return found

    found = asyncio.run(mistakes())
    assert all(found[k].isError for k in ("unknown", "bad_args", "not_json_object", "traceback"))
    assert (
        "unknown tool" in _text(found["unknown"])
        and found["unknown"].structuredContent["reason"] == "unknown_tool"
    )
    assert found["bad_args"].structuredContent["reason"] == "bad_arguments"
    assert "ZeroDivisionError" in _text(found["traceback"])
    assert not found["close"].isError and server.engine.sessions.open_count == 0
    gone = found["after_close"].structuredContent["error"]
    assert found["after_close"].isError and (gone["type"], gone["reason"]) == ("session_gone", "deleted")
    assert found["verify_after_close"].isError


def test_another_sessions_header_on_an_established_mcp_session_is_refused(server: LiveServer) -> None:
    from mcp.shared.exceptions import McpError

    mine, theirs = _create(server, _math(), ["python"]), _create(server, _math(), ["python"])

    async def hijack() -> tuple[str, Any]:
        async with mcp_client(server, mine) as (session, http):
            await session.call_tool("python", {"code": "secret = 'mine'"})
            http.headers["X-Assay-Session"] = theirs
            try:  # not pytest.raises: its failure is a BaseException, which the SDK's task groups hang on
                await session.call_tool("python", {"code": "secret = 'overwritten'"})
                refused = "the call went through"
            except McpError as exc:
                refused = str(exc)
            http.headers["X-Assay-Session"] = mine
            return refused, await session.call_tool("python", {"code": "print(secret)"})

    message, still = asyncio.run(hijack())
    assert "bound to another Assay session" in message and _text(still) == "mine\n"
    with server.client() as http:
        theirs_step = http.post(
            f"/v1/sessions/{theirs}/step", json={"tool": "python", "arguments": {"code": "1"}}
        )
        assert theirs_step.json()["step"] == 1  # the refused call reached nothing
        for session_id in (mine, theirs):
            http.delete(f"/v1/sessions/{session_id}")


def test_an_mcp_session_ending_closes_the_session_it_opened(server: LiveServer) -> None:
    async def rollout() -> Any:
        async with mcp_client(server) as (session, _):
            opened = await session.call_tool("open_session", {"item": _math(), "tools": ["python"]})
            assert server.engine.sessions.open_count == 1
            again = await session.call_tool("open_session", {"item": _math(), "tools": ["python"]})
            assert again.isError and again.structuredContent["error"]["type"] == "already_bound"
            bad = await session.call_tool("open_session", {"item": {"task": "nope"}, "tools": ["python"]})
            return opened, bad

    opened, _ = asyncio.run(rollout())
    assert not opened.isError and opened.structuredContent["tools"] == ["python"]
    _until(lambda: server.engine.sessions.open_count == 0, "the MCP session's end left its session open")


def test_a_bad_item_or_tool_in_open_session_is_a_tool_error(server: LiveServer) -> None:
    async def opens() -> list[Any]:
        async with mcp_client(server) as (a, _), mcp_client(server) as (b, _), mcp_client(server) as (c, _):
            return [
                await a.call_tool("open_session", {"item": {"task": "nope"}, "tools": ["python"]}),
                await b.call_tool("open_session", {"item": _math(), "tools": ["teleport"]}),
                await c.call_tool(
                    "open_session", {"item": {**_math(), "response": "x"}, "tools": ["python"]}
                ),
                await c.call_tool("python", {"code": "1"}),
            ]

    answers = asyncio.run(opens())
    assert all(a.isError for a in answers)
    assert [a.structuredContent["error"]["type"] for a in answers] == ["validation_error"] * 3 + ["unbound"]


def test_64_mcp_only_rollouts_at_once_and_the_65th_open_is_told_the_server_is_full(
    server: LiveServer,
) -> None:
    """Each: open_session -> 3 python calls (state carried) -> verify -> close_session, all at once."""
    opened: list[str] = []

    async def everything() -> tuple[list[tuple[list[str], dict[str, Any], bool]], Any]:
        all_open, checked = asyncio.Event(), asyncio.Event()

        async def rollout(i: int) -> tuple[list[str], dict[str, Any], bool]:
            async with mcp_client(server) as (session, _):
                item = {**_math(str(2 * i + 1)), "id": f"r{i}"}
                answer = await session.call_tool("open_session", {"item": item, "tools": ["python"]})
                opened.append(answer.structuredContent["session_id"])
                if len(opened) == ROLLOUTS:
                    all_open.set()
                await checked.wait()
                codes = (f"x = {i}", "x = x * 2", "print(x + 1)")
                outputs = [_text(await session.call_tool("python", {"code": code})) for code in codes]
                verdict = await session.call_tool("verify", {"response": f"\\boxed{{{outputs[-1].strip()}}}"})
                closed = await session.call_tool("close_session", {})
                return outputs, verdict.structuredContent, closed.isError

        rollouts = [asyncio.create_task(rollout(i)) for i in range(ROLLOUTS)]
        await asyncio.wait_for(all_open.wait(), 120)
        async with mcp_client(server) as (extra, _):
            full = await extra.call_tool("open_session", {"item": _math(), "tools": ["python"]})
        checked.set()
        return await asyncio.wait_for(asyncio.gather(*rollouts), 240), full

    started = time.perf_counter()
    results, full = asyncio.run(everything())
    elapsed = time.perf_counter() - started
    assert full.isError and full.structuredContent["error"]["type"] == "sessions_full"
    assert len(set(opened)) == ROLLOUTS
    for i, (outputs, verdict, close_failed) in enumerate(results):
        assert outputs == ["", "", f"{2 * i + 1}\n"]
        assert (verdict["id"], verdict["status"], verdict["reward"]) == (f"r{i}", "ok", 1.0)
        assert verdict["details"]["session"]["steps"] == 3 and not close_failed
    assert server.engine.sessions.open_count == 0
    assert elapsed < 120, elapsed


def test_raw_http_attacks_get_clear_answers(server: LiveServer) -> None:
    """A huge body, bytes that are not JSON, an unknown MCP session, another session's header on GET or
    DELETE, a call without a name, a lone surrogate in the code: each a clear answer, and the server goes
    on serving."""
    mine = _create(server, _math(), ["python"])
    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    with server.client() as http:
        huge = http.post(
            "/mcp", content=b"x" * (server.app.state.settings.max_body_bytes + 1), headers=accept
        )
        garbage = http.post("/mcp", content=b"\xff{not json", headers=accept)
        unknown = http.post("/mcp", json=init, headers={**accept, "mcp-session-id": "deadbeef"})
        started = http.post("/mcp", json=init, headers={**accept, "x-assay-session": mine})
        mcp_session = started.headers["mcp-session-id"]
        other = {**accept, "mcp-session-id": mcp_session, "x-assay-session": "s-someone-else"}
        get = http.get("/mcp", headers=other)
        delete = http.delete("/mcp", headers=other)
        established = {**accept, "mcp-session-id": mcp_session, "mcp-protocol-version": "2025-06-18"}
        nameless = http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}},
            headers=established,
        )
        surrogate = (
            b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "python", '
            b'"arguments": {"code": "print(\'\\ud800\')"}}}'
        )
        lone = http.post("/mcp", content=surrogate, headers=established)
        still = http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=established)
        http.delete("/mcp", headers={**accept, "mcp-session-id": mcp_session})
        http.delete(f"/v1/sessions/{mine}")
    assert huge.status_code == 413 and huge.json()["error"]["type"] == "payload_too_large"
    assert garbage.status_code == 400 and garbage.json()["error"]["code"] == -32700  # the SDK's parse error
    assert unknown.status_code in (400, 404) and "error" in unknown.json()
    assert started.status_code == 200 and get.status_code == 400 and delete.status_code == 400
    assert nameless.status_code == 200 and nameless.json()["error"]["code"] == -32602  # invalid params
    assert lone.status_code == 200 and lone.json()["result"]["isError"] is True, lone.text
    assert still.status_code == 200 and still.json()["result"] == {}  # the refused DELETE ended nothing


def test_without_the_mcp_extra_mcp_answers_501_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("mcp", "mcp.server", "mcp.server.lowlevel"):
        monkeypatch.setitem(sys.modules, name, None)  # what `import mcp` meets where it is not installed
    with TestClient(create_app(session_settings())) as client:
        answer = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert client.get("/healthz").status_code == 200
    assert answer.status_code == 501
    assert answer.json()["error"]["type"] == "not_installed"
    assert "pip install 'assay[mcp]'" in answer.json()["error"]["message"]


@pytest.mark.requires_mcp_v2
def test_the_mcp_2_sdk_serves_and_drives_the_same_rollout() -> None:
    """Server and client of mcp 2.3.0 (.venv-mcp, beside Assay by pip's resolver): a header-bound and an
    MCP-only rollout, each 3 python calls -> verify -> close."""
    python = ROOT / ".venv-mcp" / "bin" / "python"
    script = Path(__file__).with_name("mcp_v2_rollout.py")
    done = subprocess.run(
        [str(python), str(script)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["sdk"] == "2.3.0"
    for rollout in ("header", "mcp_only"):
        assert report[rollout]["tools"] == ["python", "verify", "close_session"], report
        assert report[rollout]["outputs"] == ["", "", "42\n"] and report[rollout]["reward"] == 1.0
        assert report[rollout]["errors"] == [True, True, True], report  # unknown tool, bad args, closed
    assert report["open_after"] == 0
