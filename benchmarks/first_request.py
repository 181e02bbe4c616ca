"""First request vs tenth request after `assay serve` starts, with and without waiting for /readyz.

    .venv/bin/python benchmarks/first_request.py [--workers 2] [--requests 10]

Starts `assay serve` twice on a free loopback port. Baseline: send requests as soon as /healthz
answers (the process is up, the workers may still be starting). Ready: send them once /readyz says
ready (workers started, sympy and the LaTeX parser warmed). Each request is one math item on the
symbolic path, each with a new gold. Prints the latency of request 1 and request N, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx


def _item(k: int) -> dict[str, str]:
    """A math item on the symbolic path; a new gold each time, so no request hits the gold cache."""
    return {
        "task": "math",
        "response": f"so x = \\boxed{{\\frac{{\\sqrt{{{4 * k}}}}}{{2}}}}",
        "reference": f"\\sqrt{{{k}}}",
    }


SRC = Path(__file__).resolve().parents[1] / "src"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _latencies(route: str, workers: int, requests: int) -> list[float]:
    port = _free_port()
    env = {**os.environ, "ASSAY_WORKERS": str(workers), "ASSAY_LOG_LEVEL": "warning"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    server = subprocess.Popen([sys.executable, "-m", "assay.cli", "serve", "--port", str(port)], env=env)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            for _ in range(1200):  # bounded: 120 s to come up
                try:
                    if http.get(route).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
            out = []
            for k in range(5, requests + 5):  # golds unlike the warm-up set (symbolic.py)
                started = time.perf_counter()
                answer = http.post("/v1/rewards", json={"items": [_item(k)]})
                out.append((time.perf_counter() - started) * 1000)
                assert answer.json()["results"][0]["reward"] == 1.0, answer.text
            return out
    finally:
        server.terminate()
        server.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--requests", type=int, default=10)
    args = parser.parse_args()
    print(f"{'waited for':<12}{'request 1 ms':>14}{f'request {args.requests} ms':>16}{'1st / last':>12}")
    for label, route in (("/healthz", "/healthz"), ("/readyz", "/readyz")):
        times = _latencies(route, args.workers, args.requests)
        print(f"{label:<12}{times[0]:>14.1f}{times[-1]:>16.1f}{times[0] / times[-1]:>12.1f}x")


if __name__ == "__main__":
    main()
