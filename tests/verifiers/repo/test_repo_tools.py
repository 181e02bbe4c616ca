"""The `repo` session tool: an agent views, edits and runs the working copy; its diff is what verify
judges. Links planted by a command never lead a host read or write out of the copy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from repo_support import CALC, FAIL_TO_PASS, PASS_TO_PASS, diff

from assay.sessions import SessionLimits, SessionManager
from assay.settings import RepoSettings, Settings
from assay.types import Item
from assay.verifiers.repo import RepoOptions, RepoScorer

HIDDEN = diff("tests/test_hidden.py", None, "def test_hidden():\n    assert True\n")


@pytest.fixture
def settings(repos: Path, prefix: Path) -> Settings:
    return Settings(
        workers=1,
        repo=RepoSettings(repos=repos, python_prefix=prefix),
        sessions={"max_open": 4, "call_wall_s": 60.0, "reap_interval_s": 0.05},
    )


@pytest.fixture
def mgr(settings: Settings) -> Iterator[SessionManager]:
    manager = SessionManager(settings)
    manager.start()
    yield manager
    manager.close()


def _item() -> Item:
    return Item(
        task="repo", repo="calc", FAIL_TO_PASS=FAIL_TO_PASS, PASS_TO_PASS=PASS_TO_PASS, test_patch=HIDDEN
    )


def step(mgr: SessionManager, sid: str, **arguments: Any) -> Any:
    return mgr.step(sid, "repo", arguments)


def test_an_agent_fixes_the_bug_and_its_diff_is_rewarded(mgr: SessionManager, settings: Settings) -> None:
    sid = mgr.create(_item(), ["repo"], SessionLimits()).id
    listing = step(mgr, sid, command="view", path="tests")
    assert listing.observation.split() == ["test_calc.py"]  # the hidden tests are not there
    assert "return a * b + 1" in step(mgr, sid, command="view", path="calc/__init__.py").observation
    before = step(mgr, sid, command="run", shell="python3 -m pytest -q -p no:cacheprovider tests")
    assert "1 failed, 2 passed" in before.observation
    fixed = step(mgr, sid, command="str_replace", path="calc/__init__.py", old="a * b + 1", new="a * b")
    assert fixed.status == "ok", fixed.observation
    after = step(mgr, sid, command="run", shell="python3 -m pytest -q -p no:cacheprovider tests")
    assert "3 passed" in after.observation
    change = step(mgr, sid, command="diff").observation
    assert "-    return a * b + 1" in change and "+    return a * b" in change
    item = _item().model_copy(update={"response": change})
    assert RepoScorer(settings).score(item, RepoOptions()).reward == 1.0


def test_the_diff_of_a_new_and_an_edited_file_applies(mgr: SessionManager, settings: Settings) -> None:
    sid = mgr.create(_item(), ["repo"], SessionLimits()).id
    step(mgr, sid, command="create", path="calc/extra.py", new="VALUE = 1\n")
    step(mgr, sid, command="run", shell="sed -i 's/a \\* b + 1/a * b/' calc/__init__.py")
    change = step(mgr, sid, command="diff").observation
    assert "new file mode" in change and "calc/extra.py" in change
    item = _item().model_copy(update={"response": change})
    assert RepoScorer(settings).score(item, RepoOptions()).reward == 1.0


def test_bad_calls_are_tool_errors(mgr: SessionManager) -> None:
    sid = mgr.create(_item(), ["repo"], SessionLimits()).id
    for arguments in (
        {"command": "view", "path": "../etc/passwd"},
        {"command": "view", "path": "/etc/passwd"},
        {"command": "view", "path": "missing.py"},
        {"command": "str_replace", "path": "calc/__init__.py", "old": "return", "new": "x"},  # 3 matches
        {"command": "create", "path": ".git/hooks/post-checkout", "new": "#!/bin/sh\n"},
        {"command": "run"},
    ):
        assert step(mgr, sid, **arguments).status == "tool_error", arguments
    assert step(mgr, sid, command="view", path="calc/__init__.py").observation.count("\t") == CALC.count("\n")


def test_links_a_command_plants_do_not_lead_outside(mgr: SessionManager, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    outside = tmp_path / "outside"
    outside.mkdir()
    sid = mgr.create(_item(), ["repo"], SessionLimits()).id
    planted = step(
        mgr, sid, command="run", shell=f"ln -s {secret} calc/leak && ln -s {outside} calc/dir && ls calc"
    )
    assert "leak" in planted.observation
    assert step(mgr, sid, command="view", path="calc/leak").status == "tool_error"
    assert step(mgr, sid, command="create", path="calc/dir/planted.py", new="x").status == "tool_error"
    assert step(mgr, sid, command="str_replace", path="calc/leak", old="host", new="x").status == "tool_error"
    assert "host secret" not in step(mgr, sid, command="diff").observation
    assert secret.read_text() == "host secret" and not list(outside.iterdir())


def test_closing_the_session_removes_its_working_copy(mgr: SessionManager) -> None:
    sid = mgr.create(_item(), ["repo"], SessionLimits()).id
    session = mgr.get(sid)
    holder = session.tools["repo"][1].holder
    assert holder.is_dir()
    mgr.delete(sid)
    assert not holder.exists()


def test_a_session_on_an_item_without_a_repository_is_refused(mgr: SessionManager) -> None:
    from assay.sessions import ToolUnavailable

    with pytest.raises(ToolUnavailable):
        mgr.create(Item(task="repo", repo="nope", FAIL_TO_PASS=FAIL_TO_PASS), ["repo"], SessionLimits())
