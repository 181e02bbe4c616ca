"""Fixtures of the PRM tests: tiny checkpoints built once per session, and settings pointing at them.

The checkpoints live in a directory of their own (not pytest's basetemp): pytest prunes old basetemp
directories when another session starts, and several sessions share this machine, so a long test (a vLLM
server reading the model) must not depend on one.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.settings import PrmSettings


@pytest.fixture(scope="session")
def prm_root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="assay-prm-tests-") as root:
        yield Path(root)


@pytest.fixture(scope="session")
def qwen_prm_dir(prm_root: Path) -> Path:
    from tiny_prm import build_qwen_prm

    return build_qwen_prm(prm_root / "qwen-prm")


@pytest.fixture(scope="session")
def shepherd_dir(prm_root: Path) -> Path:
    from tiny_prm import build_shepherd

    return build_shepherd(prm_root / "shepherd")


@pytest.fixture(scope="session")
def classifier_dir(prm_root: Path) -> Path:
    from tiny_prm import build_classifier

    return build_classifier(prm_root / "classifier")


@pytest.fixture
def prm_settings(qwen_prm_dir: Path) -> Callable[..., PrmSettings]:
    """PrmSettings for the tiny Qwen PRM on CPU in float32; override per test."""

    def make(**overrides: Any) -> PrmSettings:
        values: dict[str, Any] = {"model": str(qwen_prm_dir), "device": "cpu", "dtype": "float32"}
        values.update(overrides)
        return PrmSettings(**values)

    return make
