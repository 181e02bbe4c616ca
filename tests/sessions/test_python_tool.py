"""The `python` tool: a persistent interpreter per session in its own bubblewrap sandbox."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from session_testing import manager, python_session, run, sandbox_processes

from assay.sessions import SessionGone, SessionManager


@pytest.fixture(scope="module")
def mgr() -> Iterator[SessionManager]:
    yield from manager(call_wall_s=2.0)


@pytest.fixture
def sid(mgr: SessionManager) -> Iterator[str]:
    session_id = python_session(mgr)
    yield session_id
    mgr.delete(session_id)


def test_globals_survive_between_calls(mgr: SessionManager, sid: str) -> None:
    assert run(mgr, sid, "x = 41\ndef f(y):\n    return y + 1").status == "ok"
    step = run(mgr, sid, "f(x)")
    assert (step.status, step.observation, step.step) == ("ok", "42\n", 2)


def test_the_sandbox_packages_are_importable(mgr: SessionManager) -> None:
    sid = python_session(mgr, call_wall_s=60)  # importing sympy takes seconds on a busy machine
    step = run(mgr, sid, "import numpy as np, sympy\nprint(int(np.arange(5).sum()), sympy.factorint(12))")
    assert step.status == "ok", step.observation
    assert step.observation == "10 {2: 2, 3: 1}\n"
    mgr.delete(sid)


def test_an_exception_is_a_traceback_observation_and_the_session_goes_on(
    mgr: SessionManager, sid: str
) -> None:
    run(mgr, sid, "x = 1")
    step = run(mgr, sid, "print('before')\n1 / 0")
    assert (step.status, step.reason) == ("tool_error", "exception")
    assert step.observation.startswith("before\nTraceback (most recent call last):")
    assert "ZeroDivisionError: division by zero" in step.observation
    assert "runner.py" not in step.observation  # the harness's own frames are not shown
    assert run(mgr, sid, "x").observation == "1\n"


def test_exit_in_a_cell_is_an_error_not_the_end(mgr: SessionManager, sid: str) -> None:
    run(mgr, sid, "x = 5")
    assert run(mgr, sid, "import sys; sys.exit(3)").status == "tool_error"
    assert run(mgr, sid, "x").observation == "5\n"


def test_an_endless_cell_times_out_and_the_session_recovers(mgr: SessionManager, sid: str) -> None:
    run(mgr, sid, "x = 7")
    step = run(mgr, sid, "while True:\n    pass")
    assert (step.status, step.reason) == ("tool_error", "timeout")
    assert "wall limit" in step.observation
    after = run(mgr, sid, "x")
    assert (after.status, after.observation) == ("ok", "7\n")


def test_a_cell_that_ignores_the_interrupt_ends_the_session_with_a_reason(
    mgr: SessionManager, sid: str
) -> None:
    run(mgr, sid, "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)")
    step = run(mgr, sid, "while True:\n    pass")
    assert step.status == "session_ended"
    assert step.reason is not None and "did not stop when interrupted" in step.reason
    with pytest.raises(SessionGone) as gone:
        run(mgr, sid, "1")
    assert gone.value.ended and "did not stop" in gone.value.reason


def test_killing_the_interpreter_ends_only_that_session(mgr: SessionManager, sid: str) -> None:
    other = python_session(mgr)
    run(mgr, other, "kept = 'yes'")
    step = run(mgr, sid, "import os; os._exit(9)")
    assert (step.status, step.reason) == ("session_ended", "the interpreter exited with status 9")
    assert run(mgr, other, "kept").observation == "'yes'\n"
    mgr.delete(other)


def test_output_is_capped_and_the_cut_is_counted(mgr: SessionManager) -> None:
    sid = python_session(mgr, output_bytes=1000)
    step = run(mgr, sid, "print('a' * 5000)")
    assert step.status == "ok"
    assert step.observation.startswith("a" * 1000) and step.truncated == 4001
    assert "4001 more bytes of output cut" in step.observation
    mgr.delete(sid)


def test_a_cells_child_processes_do_not_outlive_it(mgr: SessionManager, sid: str) -> None:
    run(mgr, sid, "import subprocess\np = subprocess.Popen(['sleep', '1000'])")
    alive = (
        "import os\n"
        "stats = [open(f'/proc/{p}/stat').read() for p in os.listdir('/proc') if p.isdigit()]\n"
        "print(sorted(s.split(' (')[1].split(')')[0] for s in stats if s.rsplit(') ', 1)[1][0] != 'Z'))"
    )
    step = run(mgr, sid, alive)
    # bwrap's init, the supervisor and the interpreter (sleep is killed; its parent may not have reaped it)
    assert step.observation == "['bwrap', 'python3', 'python3']\n"


def test_the_cpu_budget_ends_the_session(mgr: SessionManager) -> None:
    sid = python_session(mgr, cpu_s=1, call_wall_s=10)
    step = run(mgr, sid, "while True:\n    pass")
    assert step.status == "session_ended"
    assert step.reason == "the session used its CPU budget (1 s)"


def test_cpu_spent_by_a_cells_child_processes_counts_against_the_budget(mgr: SessionManager) -> None:
    sid = python_session(mgr, cpu_s=1, call_wall_s=100)  # wall to spare on a loaded machine
    child = "import time\nwhile time.process_time() < 0.7: pass"  # each child stays under its own rlimit
    burn = (
        f"import subprocess, sys\nfor _ in range(2):\n    subprocess.run([sys.executable, '-c', {child!r}])"
    )
    step = run(mgr, sid, burn)
    assert step.status == "session_ended"
    assert step.reason == "the session used its CPU budget (1 s)"


def test_the_memory_limit_is_an_error_or_the_end_never_the_host(mgr: SessionManager) -> None:
    sid = python_session(mgr, memory_mb=64)
    step = run(mgr, sid, "x = bytearray(512 * 1024 * 1024)")
    assert step.status == "tool_error" and "MemoryError" in step.observation
    assert run(mgr, sid, "1 + 1").observation == "2\n"
    mgr.delete(sid)


def test_no_network_and_a_read_only_system(mgr: SessionManager, sid: str) -> None:
    step = run(mgr, sid, "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=1)")
    assert step.status == "tool_error" and (
        "PermissionError" in step.observation or "OSError" in step.observation
    )
    step = run(mgr, sid, "open('/usr/evil', 'w')")
    assert step.status == "tool_error" and "Read-only file system" in step.observation


def test_sessions_cannot_see_each_other(mgr: SessionManager) -> None:
    """Variables, files, processes and /proc of one session are not reachable from another."""
    a, b = python_session(mgr), python_session(mgr)
    run(mgr, a, "secret = 'tok-a'\nopen('/tmp/secret.txt', 'w').write('tok-a')\nimport os; me = os.getpid()")
    probe = (
        "import os, gc\n"
        "found = []\n"
        "found += [k for k in globals() if k == 'secret']\n"
        "found += [o for o in gc.get_objects() if isinstance(o, str) and o == 'tok-a']\n"
        "found += os.listdir('/tmp')\n"
        "for pid in os.listdir('/proc'):\n"
        "    if pid.isdigit():\n"
        "        try:\n"
        "            found.append(open(f'/proc/{pid}/environ', 'rb').read().count(b'tok-a'))\n"
        "            found.append(open(f'/proc/{pid}/cmdline', 'rb').read().count(b'tok-a'))\n"
        "        except OSError:\n"
        "            pass\n"
        "print([f for f in found if f])"
    )
    step = run(mgr, b, probe)
    assert (step.status, step.observation) == ("ok", "[]\n"), step.observation
    assert run(mgr, a, "open('/tmp/secret.txt').read()").observation == "'tok-a'\n"
    mgr.delete(a)
    mgr.delete(b)


def test_deleting_a_session_leaves_no_process(mgr: SessionManager) -> None:
    before = sandbox_processes()
    sid = python_session(mgr)
    run(mgr, sid, "import subprocess; subprocess.Popen(['sleep', '1000']); 1")
    assert sandbox_processes() > before
    mgr.delete(sid)
    assert sandbox_processes() == before
