"""The session store: limits, the cap on open sessions, TTL reaping, step limits, plugin tools."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import Field
from session_testing import MATH, session_settings

from assay.errors import ItemError
from assay.metrics import Metrics
from assay.sessions import (
    Observation,
    SessionContext,
    SessionGone,
    SessionLimits,
    SessionManager,
    SessionsFull,
    Tool,
    ToolArguments,
)
from assay.sessions.tools import ToolRegistry

CLOSED: list[str] = []


class EchoArguments(ToolArguments):
    text: str = Field(description="What to repeat.")


class Echo(Tool[EchoArguments]):
    """A plugin tool, as another package would write one (no sandbox: it keeps a counter)."""

    name = "echo"
    description = "Repeat the text, numbered."
    Arguments = EchoArguments

    def open(self, session: SessionContext) -> dict[str, Any]:
        return {"calls": 0, "id": session.session_id}

    def call(self, session: SessionContext, state: Any, arguments: EchoArguments) -> Observation:
        state["calls"] += 1
        if arguments.text == "fail":
            return Observation("no", "tool_error", "refused")
        return Observation(f"{state['calls']}: {arguments.text}")

    def close(self, state: Any) -> None:
        CLOSED.append(state["id"])


@pytest.fixture
def mgr() -> Iterator[SessionManager]:
    settings = session_settings(plugins=[f"{__name__}:Echo"], max_open=3, ttl_s=60, max_steps=4)
    manager = SessionManager(settings, Metrics())
    yield manager
    manager.close()


def echo(mgr: SessionManager, **limits: Any) -> str:
    return mgr.create(MATH, ["echo"], SessionLimits(**limits)).id


def test_a_plugin_tool_is_registered_and_described() -> None:
    registry = ToolRegistry.from_settings(session_settings(plugins=[f"{__name__}:Echo"]))
    assert {"python", "echo"} <= set(registry)
    schema = registry["echo"].schema()
    assert schema == {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Repeat the text, numbered.",
            "parameters": {
                "additionalProperties": False,
                "properties": {"text": {"description": "What to repeat.", "type": "string"}},
                "required": ["text"],
                "type": "object",
            },
        },
    }


def test_state_is_the_tools_and_steps_are_counted(mgr: SessionManager) -> None:
    sid = echo(mgr)
    assert mgr.step(sid, "echo", {"text": "a"}).observation == "1: a"
    second = mgr.step(sid, "echo", {"text": "b"})
    assert (second.observation, second.step, second.status) == ("2: b", 2, "ok")


def test_the_policys_mistakes_are_observations(mgr: SessionManager) -> None:
    sid = echo(mgr, max_steps=16)
    unknown = mgr.step(sid, "pyton", {"code": "1"})
    assert (unknown.status, unknown.reason) == ("invalid_call", "unknown_tool")
    assert "echo" in unknown.observation
    bad = mgr.step(sid, "echo", {"txt": "a"})
    assert (bad.status, bad.reason) == ("invalid_call", "bad_arguments")
    assert "text: Field required" in bad.observation
    assert mgr.step(sid, "echo", None).status == "invalid_call"
    assert mgr.step(sid, "echo", '{"text": ').status == "invalid_call"
    assert mgr.step(sid, "echo", '{"text": "json"}').observation.endswith(": json")
    failed = mgr.step(sid, "echo", {"text": "fail"})
    assert (failed.status, failed.reason) == ("tool_error", "refused")


def test_the_step_limit_ends_the_session_but_verify_still_finds_it(mgr: SessionManager) -> None:
    sid = echo(mgr, max_steps=2)
    mgr.step(sid, "echo", {"text": "a"})
    mgr.step(sid, "echo", {"text": "b"})
    refused = mgr.step(sid, "echo", {"text": "c"})
    assert (refused.status, refused.reason, refused.step) == ("session_ended", "max_steps", 2)
    assert sid in CLOSED
    with pytest.raises(SessionGone) as gone:
        mgr.step(sid, "echo", {"text": "d"})
    assert gone.value.ended
    assert mgr.get(sid).summary()["steps"] == 2


def test_limits_past_the_servers_maximum_are_refused(mgr: SessionManager) -> None:
    with pytest.raises(ItemError, match=r"limits.ttl_s 99999 exceeds this server's maximum 3600"):
        echo(mgr, ttl_s=99999)


def test_an_unknown_tool_at_create_says_what_exists(mgr: SessionManager) -> None:
    with pytest.raises(ItemError, match=r'unknown tool "ecko".*did you mean "echo"'):
        mgr.create(MATH, ["ecko"], SessionLimits())


def test_beyond_the_cap_creation_is_refused_until_one_ends(mgr: SessionManager) -> None:
    ids = [echo(mgr) for _ in range(3)]
    with pytest.raises(SessionsFull) as full:
        echo(mgr)
    assert full.value.retry_after_s >= 1
    mgr.delete(ids[0])
    assert echo(mgr)


def test_delete_is_idempotent_and_then_gone(mgr: SessionManager) -> None:
    sid = echo(mgr)
    mgr.delete(sid)
    mgr.delete(sid)
    mgr.delete("s-never")
    with pytest.raises(SessionGone) as gone:
        mgr.step(sid, "echo", {"text": "a"})
    assert (gone.value.ended, gone.value.reason) == (True, "deleted")
    with pytest.raises(SessionGone) as unknown:
        mgr.get("s-never")
    assert not unknown.value.ended


def test_an_idle_session_is_reaped_at_its_ttl(mgr: SessionManager) -> None:
    sid = echo(mgr, ttl_s=0.2)
    kept = echo(mgr)
    deadline = time.monotonic() + 10
    while mgr.open_count > 1 and time.monotonic() < deadline:  # the reaper thread or this call ends it
        mgr.reap()
        threading.Event().wait(0.05)
    with pytest.raises(SessionGone) as gone:
        mgr.get(sid)
    assert gone.value.ended and gone.value.reason.startswith("expired")
    assert sid in CLOSED and mgr.get(kept)
    assert mgr.open_count == 1


def test_metrics_count_open_sessions_steps_and_tool_errors(mgr: SessionManager) -> None:
    sid = echo(mgr)
    mgr.step(sid, "echo", {"text": "a"})
    mgr.step(sid, "echo", {"text": "fail"})
    text = mgr.metrics.render().decode() if mgr.metrics else ""
    assert "assay_sessions_open 1.0" in text
    assert 'assay_session_steps_total{status="ok",tool="echo"} 1.0' in text
    assert 'assay_session_tool_errors_total{reason="refused",tool="echo"} 1.0' in text
    mgr.delete(sid)
    text = mgr.metrics.render().decode() if mgr.metrics else ""
    assert "assay_sessions_open 0.0" in text and 'assay_sessions_ended_total{cause="deleted"} 1.0' in text


def test_closing_the_manager_ends_every_session(mgr: SessionManager) -> None:
    ids = [echo(mgr) for _ in range(2)]
    mgr.close()
    assert set(ids) <= set(CLOSED)
    with pytest.raises(SessionGone):
        mgr.get(ids[0])
    with pytest.raises(SessionsFull):
        echo(mgr)
