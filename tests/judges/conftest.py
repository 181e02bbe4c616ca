"""Fixtures of the judge tests: the scripted judge server, a harness that runs scorers on one event loop,
and (for the slow test) a real vLLM server for a tiny model built on the fly."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from tiny_models import build_chat_model
from vllm_process import VLLM_PYTHON, VllmProcess

from judges.judge_harness import Harness, VllmServer
from judges.scripted_server import ScriptedJudges

T = TypeVar("T")

# Bounded wait for /health: 13-30 s measured idle, ~60 s with 2 cores under load, and 150-240 s with
# the 2 cores at a load average of 20 (eight engineers' test runs).
VLLM_START_S = 300.0


@pytest.fixture(scope="session")
def judges() -> Iterator[ScriptedJudges]:
    server = ScriptedJudges().start()
    yield server
    server.stop()


@pytest.fixture
def harness(judges: ScriptedJudges, tmp_path: Path) -> Iterator[Harness]:
    judges.reset()
    harness = Harness(judges, tmp_path)
    yield harness
    harness.close()


# -- real vLLM ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def serve_vllm(model_dir: Path, tmp: Path, *extra: str) -> Iterator[VllmServer]:
    """A real vLLM OpenAI server for `model_dir`, stopped with SIGTERM on exit."""
    server = VllmProcess(model_dir, tmp / "vllm.log", "--max-model-len", "4096", *extra)
    try:
        try:
            server.wait_healthy(VLLM_START_S)
        except RuntimeError as exc:
            pytest.fail(str(exc))
        yield VllmServer(f"{server.url}/v1", str(model_dir))
    finally:
        server.stop()


@pytest.fixture(scope="session")
def vllm_server() -> Iterator[VllmServer]:
    """A real vLLM OpenAI server for a tiny random Qwen2 chat model, stopped with SIGTERM at the end."""
    if not VLLM_PYTHON.exists():
        pytest.fail(f"{VLLM_PYTHON} is missing: run scripts/setup_vllm_venv.sh")
    with tempfile.TemporaryDirectory(prefix="assay-vllm-") as tmp:
        model_dir = build_chat_model(VLLM_PYTHON, Path(tmp) / "tiny-chat")
        with serve_vllm(model_dir, Path(tmp)) as server:
            yield server
