"""A tiny project written at test time, its task, and helpers to build changes against it."""

from __future__ import annotations

import difflib
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]

CALC = '''"""A tiny calculator (the repo tests' project)."""


def add(a, b):
    return a + b


def mul(a, b):
    return a * b + 1


def clamp(x, low, high):
    return max(low, min(x, high))
'''

TESTS = """from calc import add, clamp, mul


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(3, 4) == 12


def test_clamp():
    assert clamp(5, 0, 3) == 3
    assert clamp(-1, 0, 3) == 0
"""

FAIL_TO_PASS = ["tests/test_calc.py::test_mul"]
PASS_TO_PASS = ["tests/test_calc.py::test_add", "tests/test_calc.py::test_clamp"]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout


def make_repo(root: Path, name: str = "calc", files: dict[str, str] | None = None) -> Path:
    """A git repository `root/name` holding the buggy calculator (or `files`), one commit."""
    repo = root / name
    for path, text in (files or {"calc/__init__.py": CALC, "tests/test_calc.py": TESTS}).items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    return repo


def diff(path: str, old: str | None, new: str | None) -> str:
    """A unified diff (git style) turning `old` into `new` at `path` (None: the file is absent)."""
    before = (old or "").splitlines(keepends=True)
    after = (new or "").splitlines(keepends=True)
    head = [f"diff --git a/{path} b/{path}\n"]
    if old is None:
        head.append("new file mode 100644\n")
    if new is None:
        head.append("deleted file mode 100644\n")
    lines = difflib.unified_diff(
        before,
        after,
        "/dev/null" if old is None else f"a/{path}",
        "/dev/null" if new is None else f"b/{path}",
    )
    return "".join(head) + "".join(lines)


def calc_change(replace: str, by: str) -> str:
    """A diff of calc/__init__.py replacing one text by another."""
    assert replace in CALC
    return diff("calc/__init__.py", CALC, CALC.replace(replace, by))


GOLD = calc_change("return a * b + 1", "return a * b")


def item(response: str, **fields: Any) -> dict[str, Any]:
    return {
        "task": "repo",
        "repo": "calc",
        "response": response,
        "FAIL_TO_PASS": FAIL_TO_PASS,
        "PASS_TO_PASS": PASS_TO_PASS,
        **fields,
    }


def runtime_prefix() -> Path:
    """A package prefix with pytest for the sandbox: the built runtime if it has pytest, else one built
    once under the system tmp (pip install --target, for the sandbox's /usr/bin/python3)."""
    built = ROOT / ".sandbox-runtime" / "python"
    if (built / "_pytest").is_dir():
        return built
    cached = Path(tempfile.gettempdir()) / "assay-test-repo-runtime" / "python"
    if not (cached / ".built").exists():
        version = subprocess.run(
            ["/usr/bin/python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        pip = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-warn-script-location",
            "--only-binary=:all:",
        ]
        pip += ["--python-version", version, "--target", str(cached), "pytest"]
        subprocess.run(pip, check=True, capture_output=True, timeout=600)
        (cached / ".built").touch()
    return cached


def swe_row(**fields: Any) -> dict[str, Any]:
    """A task as a SWE-bench row: gold in `patch`, test lists as JSON text, fields Assay does not read."""
    row = {
        "instance_id": "calc__calc-1",
        "repo": "calc",
        "patch": GOLD,
        "FAIL_TO_PASS": json.dumps(FAIL_TO_PASS),
        "PASS_TO_PASS": json.dumps(PASS_TO_PASS),
        "problem_statement": "mul is off by one",
        "version": "1.0",
    }
    return {**row, **fields}


def canary_seed(folder: Path, meets_the_bug: bool) -> int:
    """A seed for the scorer's canaries (its `secrets.randbits`) under which a canary of `test_mul`
    expects 13, what the unfixed `mul(3, 4)` returns (`meets_the_bug`), or under which none does. A
    canary's value is one digit off the real one and drawn per item, so about one item in ten has a
    canary the bug passes; a test whose verdict depends on that pins the draw."""
    from assay.verifiers.repo.canary import plant

    (folder / "tests").mkdir(exist_ok=True)
    tests = (*FAIL_TO_PASS, *PASS_TO_PASS)
    for seed in range(200):
        (folder / "tests" / "test_calc.py").write_text(TESTS)
        plant(folder, tests, tuple(FAIL_TO_PASS), random.Random(seed))
        if ("assert mul(3, 4) == 13" in (folder / "tests" / "test_calc.py").read_text()) is meets_the_bug:
            return seed
    raise AssertionError("no such seed in 200")
