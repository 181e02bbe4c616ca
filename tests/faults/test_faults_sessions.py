"""Session faults: a killed session sandbox ends only that session, with a reason; cycles leak nothing."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from session_testing import manager, python_session, run, sandbox_processes

from assay.sessions import SessionGone, SessionManager


@pytest.fixture
def mgr() -> Iterator[SessionManager]:
    yield from manager(max_open=16)


def _kill_sandbox(mgr: SessionManager, session_id: str) -> None:
    """SIGKILL every process of one session's sandbox, from the host, as the kernel's OOM killer or an
    operator would."""
    interp = mgr.get(session_id).tools["python"][1]
    for procs in interp.process.cgroup.procs_files:
        for pid in Path(procs).read_text().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                continue


def _ended(mgr: SessionManager, session_id: str) -> str | None:
    try:
        return mgr.get(session_id).ended
    except SessionGone as exc:
        return exc.reason


def test_killing_one_sandbox_under_load_ends_only_that_session(mgr: SessionManager) -> None:
    steps = 1024  # the load stops short of its step limit: a fast machine must not end its sessions
    victim, *others = [python_session(mgr, max_steps=steps) for _ in range(4)]
    for sid in others:
        run(mgr, sid, "total = 0")
    stop = threading.Event()
    failures: list[str] = []

    def load(sid: str) -> None:
        expected = 0
        while not stop.is_set() and expected < steps - 8:
            expected += 1
            step = run(mgr, sid, "total += 1\ntotal")
            if (step.status, step.observation) != ("ok", f"{expected}\n"):
                failures.append(f"{sid}: {step}")
                return

    threads = [threading.Thread(target=load, args=(sid,)) for sid in others]
    for thread in threads:
        thread.start()
    try:
        run(mgr, victim, "x = 1")
        _kill_sandbox(mgr, victim)
        step = run(mgr, victim, "x")
        assert step.status == "session_ended" and step.reason
        with pytest.raises(SessionGone) as gone:
            run(mgr, victim, "x")
        assert gone.value.ended and gone.value.reason == step.reason
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    assert failures == []
    for sid in others:
        assert run(mgr, sid, "total > 0").observation == "True\n"


def test_an_idle_session_whose_sandbox_dies_is_reaped_with_the_reason(mgr: SessionManager) -> None:
    victim, kept = python_session(mgr), python_session(mgr)
    _kill_sandbox(mgr, victim)
    deadline = time.monotonic() + 30
    while _ended(mgr, victim) is None and time.monotonic() < deadline:
        threading.Event().wait(0.05)
    assert _ended(mgr, victim) == "the session's sandbox process is gone"
    assert mgr.open_count == 1
    assert run(mgr, kept, "1 + 1").observation == "2\n"


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@pytest.mark.slow
def test_create_step_delete_cycles_leave_no_process_descriptor_or_memory(mgr: SessionManager) -> None:
    """300 cycles here (benchmarks/sessions.py --cycles 10000 runs the full count)."""

    def cycle() -> None:
        sid = python_session(mgr)
        assert run(mgr, sid, "import subprocess; subprocess.Popen(['sleep', '100']); 7").observation == "7\n"
        mgr.delete(sid)

    for _ in range(20):
        cycle()
    processes, fds, rss = sandbox_processes(), len(os.listdir("/proc/self/fd")), _rss_kb()
    for _ in range(300):
        cycle()
    assert sandbox_processes() == processes == 0
    assert len(os.listdir("/proc/self/fd")) == fds
    assert _rss_kb() - rss < 20 * 1024, "the server grew by more than 20 MB over 300 sessions"
    assert mgr.open_count == 0
