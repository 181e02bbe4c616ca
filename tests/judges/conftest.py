"""Fixtures of the judge tests: the scripted judge server, a harness that runs scorers on one event loop,
and (for the slow test) a real vLLM server for a tiny model built on the fly."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from tiny_models import build_chat_model

from judges.judge_harness import Harness, VllmServer
from judges.scripted_server import ScriptedJudges

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
VLLM_START_S = 150.0  # bounded wait for /health (13-30 s measured idle, ~60 s with 2 cores under load)


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
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Bounded polling of /health; fails with the server's log tail if it dies or never answers."""
    with httpx.Client(timeout=2.0) as client:
        for _ in range(int(VLLM_START_S / 0.5)):
            if process.poll() is not None:
                pytest.fail(f"vLLM exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if client.get(f"{url}/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.5)  # the poll interval, ended early if the server dies
    pytest.fail(f"vLLM did not answer /health within {VLLM_START_S:g}s:\n{log.read_text()[-3000:]}")


@contextlib.contextmanager
def serve_vllm(model_dir: Path, tmp: Path, *extra: str) -> Iterator[VllmServer]:
    """A real vLLM OpenAI server for `model_dir`, stopped with SIGTERM on exit."""
    port = _free_port()
    env = {
        **os.environ,
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_CACHE_ROOT": str(tmp / "vllm-cache"),
    }
    command = [
        str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
        "--enforce-eager", "--distributed-executor-backend", "uni",
        "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "4096", *extra,
    ]  # fmt: skip
    log = tmp / "vllm.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_healthy(process, f"http://127.0.0.1:{port}", log)
        yield VllmServer(f"http://127.0.0.1:{port}/v1", str(model_dir))
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def vllm_server() -> Iterator[VllmServer]:
    """A real vLLM OpenAI server for a tiny random Qwen2 chat model, stopped with SIGTERM at the end."""
    if not VLLM_PYTHON.exists():
        pytest.fail(f"{VLLM_PYTHON} is missing: run scripts/setup_vllm_venv.sh")
    with tempfile.TemporaryDirectory(prefix="assay-vllm-") as tmp:
        model_dir = build_chat_model(VLLM_PYTHON, Path(tmp) / "tiny-chat")
        with serve_vllm(model_dir, Path(tmp)) as server:
            yield server
