"""The session holder's body and the ids it issues, without Ray (tests/distributed/test_ray_sessions.py
runs them on a real local Ray)."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pytest
from assay_testing import bwrap_works
from hypothesis import given
from hypothesis import strategies as st
from session_testing import session_settings

from assay.distributed.sessions import SessionHolder, holder_name, holder_of
from assay.errors import ItemError
from assay.sessions import SessionGone, SessionLimits, SessionsFull
from assay.sessions.service import SessionInfo
from assay.types import Item

MATH = Item(task="math", prompt="What is 6 * 7?", reference="42")


@pytest.fixture
def holder() -> Iterator[SessionHolder]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    body = SessionHolder(session_settings(max_open=1), "0badcafe")
    try:
        yield body
    finally:
        body.shutdown()


def test_a_holders_ids_name_it_and_its_failures_come_back_as_values(holder: SessionHolder) -> None:
    info, count = holder.open(MATH, ["python"], SessionLimits())
    assert isinstance(info, SessionInfo) and count == 1
    assert holder_of(info.session_id) == holder_name("0badcafe")
    full, _ = holder.open(MATH, ["python"], SessionLimits())
    assert isinstance(full, SessionsFull)
    bad, _ = holder.open(MATH, ["pyhton"], SessionLimits())
    assert isinstance(bad, ItemError) and 'did you mean "python"' in str(bad)
    step = holder.step(info.session_id, "python", {"code": "6 * 7"})
    assert not isinstance(step, SessionGone) and step.observation == "42\n"
    item, summary = holder.record(info.session_id, "\\boxed{42}")  # type: ignore[misc]
    assert (item["response"], item["reference"], summary["steps"]) == ("\\boxed{42}", "42", 1)
    assert holder.close(info.session_id) == 0
    gone = holder.step(info.session_id, "python", {"code": "1"})
    assert isinstance(gone, SessionGone) and (gone.ended, gone.reason) == (True, "deleted")


def test_what_a_holder_returns_survives_pickling() -> None:
    gone = pickle.loads(pickle.dumps(SessionGone("s-1", "expired", ended=True)))
    assert (gone.session_id, gone.reason, gone.ended, str(gone)) == (
        "s-1",
        "expired",
        True,
        "session s-1 is gone: expired",
    )
    full = pickle.loads(pickle.dumps(SessionsFull(3, 1.0)))
    assert (full.limit, full.retry_after_s) == (3, 1.0)


@given(st.from_regex(r"s-[0-9a-f]{8}-[0-9a-f]{24}", fullmatch=True), st.text(max_size=4))
def test_a_holder_id_names_its_holder_and_nothing_else_does(session_id: str, junk: str) -> None:
    assert holder_of(session_id) == holder_name(session_id[2:10])
    if junk:
        assert holder_of(session_id + junk) is None
        assert holder_of(junk + session_id) is None
    assert holder_of("s-" + "0" * 24) is None  # a single-process Engine's id is not a holder's
