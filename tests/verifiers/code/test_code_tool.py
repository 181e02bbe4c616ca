"""The `run_tests` tool: public tests only, in the code sandbox; hidden tests only in verify."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from assay_testing import bwrap_works
from session_testing import session_settings

from assay.engine.scoring import Engine
from assay.errors import ItemError
from assay.registry import Scorer
from assay.sessions import SessionLimits
from assay.types import Item, Result, TaskOptions

PUBLIC = [{"stdin": "2\n", "stdout": "4"}, {"stdin": "3\n", "stdout": "6"}]
HIDDEN = [{"stdin": "7\n", "stdout": "HIDDEN-14"}]
ITEM = Item(task="code", language="python", tests=PUBLIC, hidden_tests=HIDDEN)


class SeesHidden(Scorer[TaskOptions]):
    """Correct iff the scorer was handed the item's hidden tests and the final response."""

    name = "sees_hidden"
    runs_in = "thread"

    def score(self, item: Item, options: TaskOptions) -> Result:
        return Result.verdict(item.hidden_tests == HIDDEN and item.response == "final", "")


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    settings = session_settings().model_copy(update={"plugins": [f"{__name__}:SeesHidden"]})
    with Engine(settings) as built:
        yield built


def test_verify_hands_the_scorer_the_whole_item_hidden_tests_included(engine: Engine) -> None:
    item = ITEM.model_copy(update={"task": "sees_hidden"})
    sid = engine.sessions.manager.create(item, ["run_tests"], SessionLimits()).id
    result = asyncio.run(engine.verify_session(sid, "final"))
    assert (result.status, result.reward) == ("ok", 1.0)
    assert result.details["session"]["steps"] == 0


def test_each_public_test_is_shown_with_its_verdict(engine: Engine) -> None:
    sid = engine.sessions.manager.create(ITEM, ["run_tests"], SessionLimits()).id
    code = "n = int(input())\nprint(n * 2 if n != 3 else 0)"
    step = engine.sessions.manager.step(sid, "run_tests", {"code": code})
    assert step.status == "ok"
    assert step.observation.splitlines()[0] == "test 1: passed"
    assert step.observation.splitlines()[1].startswith("test 2: wrong_answer")
    assert step.observation.endswith("1/2 public tests passed")


def test_hidden_tests_never_reach_a_tool_call(engine: Engine) -> None:
    sid = engine.sessions.manager.create(ITEM, ["run_tests", "python"], SessionLimits()).id
    leak = "import sys\nprint(open('/proc/self/cmdline').read(), sys.argv)\nprint(int(input()) * 2)"
    step = engine.sessions.manager.step(sid, "run_tests", {"code": leak})
    assert "HIDDEN" not in step.observation and "7" not in step.observation.replace("test", "")
    probe = engine.sessions.manager.step(
        sid, "python", {"code": "import os\nprint(os.listdir('/tmp'), dict(os.environ))"}
    )
    assert "HIDDEN" not in probe.observation


def test_a_program_that_fails_to_parse_is_an_observation(engine: Engine) -> None:
    sid = engine.sessions.manager.create(ITEM, ["run_tests"], SessionLimits()).id
    step = engine.sessions.manager.step(sid, "run_tests", {"code": "def f(:\n"})
    assert step.status == "ok"
    assert "0/2 public tests passed" in step.observation or "SyntaxError" in step.observation


def test_a_code_item_without_tests_cannot_open_the_tool(engine: Engine) -> None:
    with pytest.raises(ItemError, match="public tests"):
        engine.sessions.manager.create(Item(task="code", language="python"), ["run_tests"], SessionLimits())
