"""Issue 37, item 2: no history, no bytecode. The repository's later commit holds the fix; a change (or a
session's `run`) that reads it from git is not rewarded, because the working copy has no history. A
change that adds compiled files is refused; bytecode in the base tree never stands in for the source."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from repo_support import CALC, FAIL_TO_PASS, GOLD, PASS_TO_PASS, diff, git, item

from assay.sessions import SessionLimits, SessionManager
from assay.settings import RepoSettings, Settings
from assay.types import Item, Result, Status
from assay.verifiers.repo.workcopy import working_copy

Score = Callable[..., Result]
FIXED = CALC.replace("return a * b + 1", "return a * b")
TAG = (
    "cpython-"
    + subprocess.run(
        ["/usr/bin/python3", "-c", "import sys; print('%d%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
)


@pytest.fixture
def fixed_later(repos: Path) -> str:
    """The calc repository gains a commit that fixes mul; the task's base is the commit before it."""
    repo = repos / "calc"
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc" / "__init__.py").write_text(FIXED)
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "fix mul")
    return base


def assert_not_rewarded(result: Result) -> None:
    assert result.status is Status.OK, result
    assert result.reward == 0.0 and result.correct is False, result


# Ways a change reads the fixed file from the repository's history, as the probes did.
READERS = {
    "show_all": "['sh', '-c', 'git -C /repo show $(git -C /repo rev-list --all | head -1):calc/__init__.py']",
    "diff_parent": "['sh', '-c', 'git -C /repo diff HEAD HEAD~1 | grep \"^+ *return a [*] b$\"']",
    "packed_objects": "['sh', '-c', 'git -C /repo log --all -p | grep -m1 \"^+ *return a [*] b$\"']",
}


def history_reader(argv: str) -> str:
    """A change whose mul returns the right product only when git hands it the later commit's fix."""
    code = (
        "import subprocess\n"
        "def _from_history():\n"
        "    try:\n"
        f"        out = subprocess.run({argv}, capture_output=True, text=True).stdout\n"
        "    except OSError:\n"
        "        return False\n"
        "    return 'return a * b\\n' in out or out.strip() == '+    return a * b'\n"
    )
    text = CALC.replace("def add(a, b):", f"{code}\n\ndef add(a, b):").replace(
        "return a * b + 1", "return a * b + (0 if _from_history() else 1)"
    )
    return diff("calc/__init__.py", CALC, text)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_change_cannot_read_the_fix_from_the_history(score: Score, fixed_later: str, reader: str) -> None:
    assert_not_rewarded(score(item(history_reader(READERS[reader]), base_commit=fixed_later)))


def test_the_working_copy_is_the_base_tree_only(repos: Path, fixed_later: str) -> None:
    with working_copy(repos / "calc", fixed_later) as copy:
        assert not (copy / ".git").exists()
        assert (copy / "calc" / "__init__.py").read_text() == CALC
        assert sorted(p.name for p in copy.iterdir()) == ["calc", "tests"]
    assert (repos / "calc" / "calc" / "__init__.py").read_text() == FIXED  # the source is untouched


def _pyc(tmp_path: Path, source: str, name: str = "fixed.py") -> bytes:
    src = tmp_path / name
    src.write_text(source)
    out = tmp_path / (name + "c")
    subprocess.run(
        [
            "/usr/bin/python3",
            "-c",
            "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True,"
            " invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)",
            str(src),
            str(out),
        ],
        check=True,
    )
    return out.read_bytes()


def binary_change(repos: Path, tmp_path: Path, files: dict[str, bytes]) -> str:
    """`git diff --binary` of a change adding `files` to a scratch copy of calc."""
    scratch = tmp_path / "scratch"
    subprocess.run(["cp", "-a", str(repos / "calc"), str(scratch)], check=True)
    for path, data in files.items():
        (scratch / path).parent.mkdir(parents=True, exist_ok=True)
        (scratch / path).write_bytes(data)
    git(scratch, "add", "-A", "-f")
    return git(scratch, "diff", "--cached", "--binary")


def compiled_variants(pyc: bytes) -> dict[str, dict[str, bytes]]:
    return {
        "pycache": {f"calc/__pycache__/__init__.{TAG}.pyc": pyc},
        "sourceless_pyc": {"calc/fast.pyc": pyc},
        "extension_module": {f"calc/__init__.{TAG}-x86_64-linux-gnu.so": b"\x7fELF" + bytes(64)},
        "binary_blob": {"calc/table.bin": bytes(range(256))},
        "legacy_pyo": {"calc/__init__.pyo": pyc},
    }


@pytest.mark.parametrize(
    "variant", ["pycache", "sourceless_pyc", "extension_module", "binary_blob", "legacy_pyo"]
)
def test_a_change_with_compiled_or_binary_files_is_refused(
    score: Score, repos: Path, tmp_path: Path, variant: str
) -> None:
    change = binary_change(repos, tmp_path, compiled_variants(_pyc(tmp_path, FIXED))[variant])
    result = score(item(change))
    assert_not_rewarded(result)
    assert "compiled or binary" in result.reason
    assert any(f.startswith(("compiled_file:", "binary_patch:")) for f in result.details["flags"])


def test_allowed_bytecode_still_never_shadows_the_source(score: Score, repos: Path, tmp_path: Path) -> None:
    change = binary_change(repos, tmp_path, compiled_variants(_pyc(tmp_path, FIXED))["pycache"])
    result = score(item(change, options={"allow_compiled": True}))
    assert_not_rewarded(result)
    assert result.details["not_passed"] == {FAIL_TO_PASS[0]: "failed"}


def test_stale_bytecode_in_the_base_tree_is_not_loaded(score: Score, repos: Path, tmp_path: Path) -> None:
    repo = repos / "calc"
    (repo / "calc" / "__pycache__").mkdir()
    (repo / "calc" / "__pycache__" / f"__init__.{TAG}.pyc").write_bytes(_pyc(tmp_path, FIXED))
    git(repo, "add", "-A", "-f")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "bytecode")
    assert_not_rewarded(score(item("")))
    assert score(item(GOLD)).reward == 1.0


@pytest.fixture
def mgr(repos: Path, prefix: Path) -> Iterator[SessionManager]:
    settings = Settings(
        workers=1,
        repo=RepoSettings(repos=repos, python_prefix=prefix),
        sessions={"max_open": 2, "call_wall_s": 60.0, "reap_interval_s": 0.05},
    )
    manager = SessionManager(settings)
    manager.start()
    yield manager
    manager.close()


def test_a_session_cannot_recover_the_fix_from_git(mgr: SessionManager, fixed_later: str) -> None:
    task = Item(
        task="repo",
        repo="calc",
        FAIL_TO_PASS=FAIL_TO_PASS,
        PASS_TO_PASS=PASS_TO_PASS,
        base_commit=fixed_later,
    )
    sid = mgr.create(task, ["repo"], SessionLimits()).id

    def run(shell: str) -> Any:
        return mgr.step(sid, "repo", {"command": "run", "shell": shell}).observation

    log = run("git log --all --oneline | wc -l; git diff HEAD HEAD~1; git rev-list --all | wc -l")
    assert log.split()[:1] == ["1"], log  # one commit: the base tree
    everything = run("git log --all -p; git fsck --lost-found 2>&1; cat .git/packed-refs 2>&1")
    assert "return a * b\n" not in everything.replace("return a * b + 1", "")
    assert "a * b + 1" in run("git show HEAD:calc/__init__.py")


def test_the_run_tool_reports_output_it_cut(mgr: SessionManager) -> None:
    task = Item(task="repo", repo="calc", FAIL_TO_PASS=FAIL_TO_PASS, PASS_TO_PASS=PASS_TO_PASS)
    sid = mgr.create(task, ["repo"], SessionLimits(output_bytes=4096)).id
    flood = mgr.step(sid, "repo", {"command": "run", "shell": "head -c 5000000 /dev/zero | tr '\\0' x"})
    assert flood.truncated > 0 and "output cut" in flood.observation
    quiet = mgr.step(sid, "repo", {"command": "run", "shell": "echo fine"})
    assert quiet.truncated == 0
