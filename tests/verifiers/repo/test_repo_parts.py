"""The repo task's parts without a sandbox: finding the diff, checking its paths, the item's fields,
the hygiene scan, the signed report. Hypothesis feeds them inputs that know nothing of the rules."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from repo_support import CALC, GOLD, diff, make_repo

from assay.types import Item
from assay.verifiers.repo.patch import PatchRejected, apply_diff, check_path, extract_diff, inspect_diff
from assay.verifiers.repo.pytest_config import ask_pytest, config_flags
from assay.verifiers.repo.run import parse_report
from assay.verifiers.repo.task import TaskInvalid, node_ids, parse_task, pytest_args
from assay.verifiers.repo.workcopy import hygiene_flags, is_test_path, resolve_repo


def test_a_bare_diff_and_a_fenced_one_are_the_same_change() -> None:
    assert extract_diff(GOLD) == GOLD
    assert extract_diff(f"Here:\n```diff\n{GOLD}```\nDone.") == GOLD
    assert extract_diff(f"```patch\n{GOLD}```") == GOLD


def test_the_last_fence_with_a_diff_wins_and_prose_is_no_diff() -> None:
    first = diff("a.py", "x = 1\n", "x = 2\n")
    assert extract_diff(f"```diff\n{first}```\nbetter:\n```diff\n{GOLD}```") == GOLD
    assert extract_diff("no change needed") == ""
    assert extract_diff("```python\nprint(1)\n```") == ""


@given(st.text())
def test_extract_diff_is_total(text: str) -> None:
    found = extract_diff(text)
    assert found == "" or found.endswith("\n")


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../x", "leaves"),
        ("/etc/passwd", "absolute"),
        ("a/.git/config", ".git"),
        ("", "empty"),
        ("a/../../b", "leaves"),
    ],
)
def test_paths_a_diff_may_not_write(tmp_path: Path, path: str, why: str) -> None:
    problem = check_path(tmp_path, path)
    assert problem is not None and why in problem


def test_a_path_through_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert check_path(tmp_path, "real/x.py") is None
    assert "symbolic link" in (check_path(tmp_path, "link/x.py") or "")


def test_apply_writes_only_what_the_diff_names(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    info = apply_diff(repo, GOLD)
    assert info.paths == ("calc/__init__.py",)
    assert (repo / "calc/__init__.py").read_text() == CALC.replace("a * b + 1", "a * b")


def test_a_rename_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    rename = (
        "diff --git a/calc/__init__.py b/../gone.py\nsimilarity index 100%\nrename from calc/__init__.py\n"
    )
    rename += "rename to ../gone.py\n"
    with pytest.raises(PatchRejected):
        inspect_diff(repo, rename)
    assert (repo / "calc/__init__.py").exists() and not (tmp_path / "gone.py").exists()


@settings(deadline=None, max_examples=60)  # each example runs git twice: seconds on a loaded machine
@given(st.text(max_size=300))
def test_inspect_diff_refuses_or_lists_paths_never_raises_anything_else(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        try:
            info = inspect_diff(Path(tmp), extract_diff(text) or text)
        except PatchRejected:
            return
        assert all(check_path(Path(tmp), p) is None for p in info.paths)


def test_node_ids_from_lists_and_json_text() -> None:
    assert node_ids(["t.py::a"], "F") == ("t.py::a",)
    assert node_ids('["t.py::a", "t.py::b"]', "F") == ("t.py::a", "t.py::b")
    assert node_ids("", "F") == () and node_ids(None, "F") == ()
    for bad in ("{", '{"a": 1}', "[1]", '[""]', '["/abs.py::t"]'):
        with pytest.raises(TaskInvalid):
            node_ids(bad, "F")


@given(st.one_of(st.text(), st.lists(st.text())))
def test_node_ids_is_total(value: str | list[str]) -> None:
    with contextlib.suppress(TaskInvalid):
        assert all(isinstance(n, str) for n in node_ids(value, "F"))


def test_test_cmd_must_be_pytest() -> None:
    assert pytest_args("pytest -rA -x") == ("-rA", "-x")
    assert pytest_args("python -m pytest -o addopts=") == ("-o", "addopts=")
    assert pytest_args(None) == ()
    for bad in ("tox -e py", "bash -c 'pytest'", "pytest 'unclosed"):
        with pytest.raises(TaskInvalid):
            pytest_args(bad)


def test_a_swe_bench_instance_parses() -> None:
    item = Item(
        task="repo",
        repo="calc",
        instance_id="calc-1",
        base_commit="abc123",
        patch=GOLD,
        test_patch="",
        FAIL_TO_PASS='["tests/test_calc.py::test_mul"]',
        PASS_TO_PASS="[]",
    )
    task = parse_task(item)
    assert task.fail_to_pass == ("tests/test_calc.py::test_mul",) and task.gold_patch == GOLD
    assert task.test_files == ("tests/test_calc.py",)


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("tests/test_x.py", True),
        ("pkg/test_x.py", True),
        ("pkg/x_test.py", True),
        ("pkg/tests/helpers.py", True),
        ("conftest.py", True),
        ("pytest.ini", False),  # configuration files: pytest says (pytest_config)
        ("pkg/core.py", False),
        ("pkg/testing.py", False),
        ("pkg/contest.py", False),
    ],
)
def test_which_paths_are_tests(path: str, test: bool) -> None:
    assert is_test_path(path) is test


def test_a_pytest_section_change_is_flagged_other_config_is_not(tmp_path: Path, prefix: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    paths = ["setup.cfg", "pyproject.toml"]
    before = ask_pytest(tmp_path, [], paths, str(prefix))
    assert before.inifile == "setup.cfg"
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = y\n[tool:pytest]\naddopts = -q\n")
    after = ask_pytest(tmp_path, [], paths, str(prefix))
    assert hygiene_flags(["setup.cfg"], set(), config_flags(before, after, ["setup.cfg"])) == []
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n[tool.pytest.ini_options]\nx = 1\n")
    after = ask_pytest(tmp_path, [], paths, str(prefix))
    flags = config_flags(before, after, ["pyproject.toml"])
    assert hygiene_flags(["pyproject.toml"], set(), flags) == ["edits_test_config:pyproject.toml"]


def test_repo_names_stay_under_the_root(tmp_path: Path) -> None:
    (tmp_path / "root" / "a").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root" / "sneaky").symlink_to(tmp_path / "elsewhere")
    assert resolve_repo(tmp_path / "root", "a") == tmp_path / "root" / "a"
    from assay.verifiers.repo.workcopy import RepoNotFound

    for bad in ("../elsewhere", "/tmp", "sneaky", "a/../../elsewhere", "missing", ""):
        with pytest.raises(RepoNotFound):
            resolve_repo(tmp_path / "root", bad)


def _line(key: bytes, seq: int, record: dict[str, object]) -> str:
    body = json.dumps(record, sort_keys=True)
    return hmac.new(key, f"{seq}:{body}".encode(), hashlib.sha256).hexdigest() + " " + body + "\n"


def test_the_report_is_read_only_when_every_line_is_signed_in_order() -> None:
    key = b"k" * 32
    passed = {"setup": "passed", "call": "passed", "teardown": "passed"}
    lines = [_line(key, 0, {"hello": True}), _line(key, 1, {"test": "t.py::a", "phases": passed})]
    report = parse_report("".join(lines).encode(), key)
    assert report.started and report.passed("t.py::a") and report.tampered is None
    swapped = parse_report("".join(reversed(lines)).encode(), key)
    assert swapped.tampered is not None and not swapped.passed("t.py::a")
    wrong_key = parse_report("".join(lines).encode(), b"x" * 32)
    assert wrong_key.tampered is not None


@pytest.mark.parametrize(
    ("phases", "outcome"),
    [
        ({"setup": "passed", "call": "passed", "teardown": "failed"}, "error"),
        ({"setup": "failed", "teardown": "passed"}, "error"),
        ({"setup": "skipped", "teardown": "passed"}, "skipped"),
        ({"setup": "passed", "call": "xfailed", "teardown": "passed"}, "xfailed"),
        ({"setup": "passed", "teardown": "passed"}, "missing"),
    ],
)
def test_a_test_passes_only_when_every_phase_did(phases: dict[str, str], outcome: str) -> None:
    key = b"k" * 32
    report = parse_report(_line(key, 0, {"test": "t", "phases": phases}).encode(), key)
    assert report.outcomes["t"] == outcome
