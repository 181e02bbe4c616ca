"""The house style is checked, not hoped for: ruff (lint and format) and mypy stay clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["src", "tests", "benchmarks", "scripts"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


def test_ruff_lint_is_clean() -> None:
    done = _run("ruff", "check", *PATHS)
    assert done.returncode == 0, done.stdout[-4000:]


def test_ruff_format_is_clean() -> None:
    done = _run("ruff", "format", "--check", *PATHS)
    assert done.returncode == 0, done.stdout[-4000:]


@pytest.mark.slow
def test_mypy_is_clean_on_src() -> None:
    done = _run("mypy")
    assert done.returncode == 0, done.stdout[-4000:]
