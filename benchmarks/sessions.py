"""Python sessions: Assay's sandboxed interpreters vs Jupyter kernels (jupyter_client), in the same run.

    .venv/bin/python benchmarks/sessions.py [--sessions 512] [--kernels 8] [--steps 2000] [--http]
    .venv/bin/python benchmarks/sessions.py --cycles 10000   # create/step/delete, then RSS and processes

Opens N python sessions at once, each in its own bubblewrap sandbox with every isolation layer on (own
uid, no network, read-only /usr, seccomp, cgroups, the runtime's packages), and measures:
- memory per idle session: the proportional set size (PSS: shared pages split between their users) of
  every process of the sessions, and the cgroup's charge, divided by N;
- step latency of a trivial cell (`x = 1`), one caller, round-robin over the open sessions: through
  `SessionManager.step` directly, and with `--http` also through `POST /v1/sessions/{id}/step` on a
  uvicorn server on 127.0.0.1.

The baseline is the stateful interpreter SandboxFusion's `/run_jupyter` and NeMo-Skills build on: an
IPython kernel (`ipykernel`) driven by `jupyter_client` (`execute_interactive`, which waits for the
reply and the kernel's idle status), on the same cell; K kernels (each costs tens of MB, so K is smaller
than N; memory is reported per kernel). Kernels run with no isolation at all. Target (issue 25): Assay's
p50 at least 3x lower than the kernel's.

`--cycles C` runs C create/step/delete cycles instead and prints RSS of this process and the number of
session processes before and after (both should come back to where they started).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PREFIX = ROOT / ".sandbox-runtime" / "python"
CELL = "x = 1"


def settings(max_open: int) -> Any:
    from assay.settings import Settings

    prefix = PREFIX if PREFIX.is_dir() else None
    return Settings(
        workers=1,
        code={"python_prefix": prefix, "tmpfs_mb": 16},
        sessions={"max_open": max_open, "memory_mb": 256, "ttl_s": 3600},
    )


def session_processes(pid: int) -> list[int]:
    mark = f"/assay/sessions-{pid}/".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if mark in Path(f"/proc/{entry}/cgroup").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def pss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def open_sessions(manager: Any, count: int) -> list[str]:
    from assay.sessions import SessionLimits
    from assay.types import Item

    item = Item(task="math", reference="1")
    ids = []
    started = time.perf_counter()
    for index in range(count):
        ids.append(manager.create(item, ["python"], SessionLimits()).id)
        if (index + 1) % 64 == 0:
            print(f"  {index + 1} sessions open ({time.perf_counter() - started:.0f} s)", flush=True)
    return ids


def assay_direct(manager: Any, ids: list[str], steps: int) -> list[float]:
    for sid in ids:  # every session has run a cell: idle, not fresh
        manager.step(sid, "python", {"code": CELL})
    samples = []
    for index in range(steps):
        sid = ids[index % len(ids)]
        started = time.perf_counter()
        result = manager.step(sid, "python", {"code": CELL})
        samples.append((time.perf_counter() - started) * 1000)
        assert result.status == "ok", result
    return samples


def assay_memory(manager: Any, ids: list[str]) -> tuple[float, float]:
    pids = session_processes(os.getpid())
    charged = 0
    for sid in ids:
        interp = manager.get(sid).tools["python"][1]
        charged += interp.memory_bytes() or 0
    return pss_kb(pids) / 1024 / len(ids), charged / 2**20 / len(ids)


def assay_http(ids_count: int, steps: int) -> list[float]:
    """The same cell through the HTTP route, on a uvicorn server in this process (127.0.0.1)."""
    import httpx
    import uvicorn

    from assay.api import create_app

    app = create_app(settings(ids_count))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    item = {"task": "math", "reference": "1"}
    samples = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        ids = []
        for _ in range(ids_count):
            response = client.post("/v1/sessions", json={"item": item, "tools": ["python"]})
            ids.append(response.json()["session_id"])
        for index in range(steps + len(ids)):
            sid = ids[index % len(ids)]
            started = time.perf_counter()
            response = client.post(
                f"/v1/sessions/{sid}/step", json={"tool": "python", "arguments": {"code": CELL}}
            )
            if index >= len(ids):
                samples.append((time.perf_counter() - started) * 1000)
            assert response.json()["status"] == "ok", response.text
        for sid in ids:
            client.delete(f"/v1/sessions/{sid}")
    server.should_exit = True
    thread.join(timeout=30)
    return samples


def jupyter(kernels: int, steps: int) -> tuple[list[float], float]:
    from jupyter_client.manager import start_new_kernel

    started = [start_new_kernel(kernel_name="python3") for _ in range(kernels)]
    try:
        clients = [client for _, client in started]
        for client in clients:
            client.execute_interactive(CELL, timeout=60, output_hook=lambda msg: None)
        samples = []
        for index in range(steps):
            client = clients[index % len(clients)]
            begin = time.perf_counter()
            reply = client.execute_interactive(CELL, timeout=60, output_hook=lambda msg: None)
            samples.append((time.perf_counter() - begin) * 1000)
            assert reply["content"]["status"] == "ok", reply
        pids = [manager.provisioner.pid for manager, _ in started]  # type: ignore[union-attr]
        memory = pss_kb([p for p in pids if p]) / 1024 / kernels
    finally:
        for manager, client in started:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    return samples, memory


def cycles(count: int) -> None:
    from assay.sessions import SessionLimits, SessionManager
    from assay.types import Item

    manager = SessionManager(settings(8))
    item = Item(task="math", reference="1")

    def one() -> None:
        sid = manager.create(item, ["python"], SessionLimits()).id
        assert manager.step(sid, "python", {"code": "x = 1; x"}).observation == "1\n"
        manager.delete(sid)

    for _ in range(20):  # warm: lazy imports, caches
        one()
    gc.collect()
    rss0, procs0, fds0 = rss_kb(), len(session_processes(os.getpid())), len(os.listdir("/proc/self/fd"))
    started = time.perf_counter()
    for index in range(count):
        one()
        if (index + 1) % 1000 == 0:
            print(
                f"  {index + 1} cycles ({time.perf_counter() - started:.0f} s), RSS {rss_kb() / 1024:.1f} MB"
            )
    gc.collect()
    rss1, procs1, fds1 = rss_kb(), len(session_processes(os.getpid())), len(os.listdir("/proc/self/fd"))
    manager.close()
    print(f"cycles: {count} in {time.perf_counter() - started:.0f} s")
    print(f"RSS of the server process: {rss0 / 1024:.1f} MB before, {rss1 / 1024:.1f} MB after")
    print(f"session processes: {procs0} before, {procs1} after; open fds: {fds0} before, {fds1} after")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=512)
    parser.add_argument("--kernels", type=int, default=8)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--http", action="store_true", help="also step through the HTTP route")
    parser.add_argument("--cycles", type=int, default=0, help="run create/step/delete cycles instead")
    args = parser.parse_args()
    if args.cycles:
        cycles(args.cycles)
        return
    from assay.sessions import SessionManager

    print(f"opening {args.sessions} python sessions (isolation on) ...", flush=True)
    manager = SessionManager(settings(args.sessions))
    try:
        ids = open_sessions(manager, args.sessions)
        direct = assay_direct(manager, ids, args.steps)
        per_session, charged = assay_memory(manager, ids)
        open_now = manager.open_count
    finally:
        manager.close()
    http = assay_http(min(args.sessions, 64), args.steps) if args.http else None
    print(f"starting {args.kernels} Jupyter kernels ...", flush=True)
    kernel, kernel_memory = jupyter(args.kernels, args.steps)
    a50, a99 = percentiles(direct)
    j50, j99 = percentiles(kernel)
    print()
    print(
        f"cell {CELL!r}, {args.steps} steps round-robin, one caller; {sys.platform}, {os.cpu_count()} cores"
    )
    print(f"{'':34} {'open':>6} {'MB/idle':>9} {'p50 ms':>8} {'p99 ms':>8}")
    print(f"{'assay session (SessionManager)':34} {open_now:>6} {per_session:>9.1f} {a50:>8.3f} {a99:>8.3f}")
    if http is not None:
        h50, h99 = percentiles(http)
        print(f"{'assay session (HTTP step)':34} {min(args.sessions, 64):>6} {'':>9} {h50:>8.3f} {h99:>8.3f}")
    name = "jupyter kernel (jupyter_client)"
    print(f"{name:34} {args.kernels:>6} {kernel_memory:>9.1f} {j50:>8.3f} {j99:>8.3f}")
    print(f"assay memory charged to the sessions' cgroups: {charged:.1f} MB per session")
    print(f"p50 ratio kernel/assay: {j50 / a50:.1f}x (target >= 3x)")
    if http is not None:
        print(f"p50 ratio kernel/assay-over-HTTP: {j50 / percentiles(http)[0]:.1f}x")
    print(f"memory ratio kernel/assay per idle session: {kernel_memory / per_session:.1f}x")


if __name__ == "__main__":
    main()
