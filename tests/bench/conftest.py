"""Fixtures for the bench tests: the fake verifier and baselines live in `bench_fakes`, importable by
name (worker processes load the fake task as a plugin, so tests/bench must be on sys.path)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[[Sequence[Any], str], Path]:
    def write(lines: Sequence[Any], name: str = "set.jsonl") -> Path:
        path = tmp_path / name
        path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
        return path

    return write


@pytest.fixture(autouse=True)
def _two_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    # The bench builds Settings from the environment; keep its engine small on shared 2-core machines.
    monkeypatch.setenv("ASSAY_WORKERS", "2")
