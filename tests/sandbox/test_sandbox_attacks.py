"""One test per attack: each asserts the verdict and that the host is clean afterwards (the `run`
fixture checks that no process survived and that the pool still answers)."""

from __future__ import annotations

import os
import socket
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.sandbox import Executor, RunOutcome, lookup

Run = Callable[..., RunOutcome]
HAS_CPP = bool((cpp := lookup("cpp")) and cpp.available())


def py(source: str) -> str:
    return textwrap.dedent(source).strip() + "\n"


def test_fork_bomb_is_stopped(run: Run) -> None:
    out = run(
        py("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """),
        time_s=1.0,
    )
    assert out.status in ("time_limit", "runtime_error")


def test_fork_bomb_hits_the_process_limit(run: Run) -> None:
    out = run(
        py("""
        import os
        n = 0
        try:
            while True:
                if os.fork() == 0:
                    import time; time.sleep(30)  # sleep-ok: the sandboxed program
                n += 1
        except OSError:
            print("stopped after", n)
    """)
    )
    assert out.status == "passed"
    assert int(out.stdout.split()[-1]) <= 40


def test_memory_bomb_is_memory_limit(run: Run) -> None:
    out = run("x = []\nwhile True:\n    x.append(bytearray(10**7))\n", memory_mb=128)
    assert out.status == "memory_limit"


def test_infinite_loop_is_time_limit(run: Run) -> None:
    out = run("while True:\n    pass\n", time_s=1.0)
    assert out.status == "time_limit"
    assert out.cpu_s < 3.0  # stopped near its 1 s (by CPU, or by wall time on a loaded machine)


@pytest.mark.skipif(not HAS_CPP, reason="g++ not installed")
def test_cpp_busy_loop_is_time_limit(run: Run) -> None:
    out = run("int main(){volatile unsigned long x=0; for(;;) x++;}\n", language="cpp", time_s=1.0)
    assert out.status == "time_limit"


def test_huge_output_is_output_limit(run: Run) -> None:
    out = run("import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n", stdout_bytes=1 << 20)
    assert out.status == "output_limit"
    assert len(out.stdout) == 1 << 20  # kept up to the cap, not beyond


def test_disk_fill_fails_inside_its_tmpfs(run: Run) -> None:
    out = run(
        py("""
        with open("/tmp/fill", "wb") as fh:
            while True:
                fh.write(b"0" * (1 << 20))
    """),
        file_bytes=1 << 30,
    )
    assert out.status == "runtime_error"
    assert b"No space left" in out.stderr
    assert not Path("/tmp/fill").exists()


def test_disk_fill_hits_the_file_size_limit(run: Run) -> None:
    out = run("open('big', 'wb').write(b'0' * (8 << 20))\n", file_bytes=1 << 20)
    assert out.status in ("output_limit", "runtime_error")


def test_passwd_and_server_files_are_not_there(run: Run) -> None:
    here = str(Path(__file__).resolve())
    out = run(
        py(f"""
        for path in ["/etc/passwd", "/etc/shadow", {here!r}, "/home", "/root"]:
            try:
                open(path, "rb").read()
                print("READ", path)
            except OSError as exc:
                print("no", path, type(exc).__name__)
    """)
    )
    assert out.status == "passed"
    assert b"READ" not in out.stdout


def test_no_process_environment_leaks_in(run: Run) -> None:
    out = run(
        py("""
        import os
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            for name in ("environ", "cmdline"):
                try:
                    print(open(f"/proc/{pid}/{name}", "rb").read())
                except OSError:
                    pass
        print(dict(os.environ))
    """)
    )
    assert out.status == "passed"
    for key, value in os.environ.items():
        if len(value) > 6 and key not in ("LANG", "HOME", "PATH"):
            assert value.encode() not in out.stdout, key
    assert b"/root" not in out.stdout


def test_host_loopback_server_is_unreachable(run: Run) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.setblocking(False)
        port = server.getsockname()[1]
        out = run(
            py(f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=2)
                print("CONNECTED")
            except OSError as exc:
                print("blocked", exc.errno)
        """)
        )
        with pytest.raises(BlockingIOError):
            server.accept()
    assert out.status == "passed"
    assert out.stdout.startswith(b"blocked")


def test_signalling_the_runtime_is_refused(run: Run, executor: Executor) -> None:
    recycled = executor.pool.recycled
    out = run(
        py("""
        import os, signal
        for target in (os.getppid(), 1, -1, -os.getppid()):
            try:
                os.kill(target, signal.SIGKILL)
                print("SENT", target)
            except OSError:
                print("refused", target)
    """)
    )
    assert out.status == "passed"
    assert b"SENT" not in out.stdout
    assert executor.pool.recycled == recycled  # the slot survived


def test_ptrace_is_refused(run: Run) -> None:
    out = run(
        py("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        print(libc.ptrace(16, os.getppid(), 0, 0), ctypes.get_errno())  # PTRACE_ATTACH
        print(libc.ptrace(0, 0, 0, 0), ctypes.get_errno())  # PTRACE_TRACEME
    """)
    )
    assert out.stdout.split() == [b"-1", b"1", b"-1", b"1"]


def test_unshare_is_refused(run: Run) -> None:
    out = run(
        py("""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        for flag in (0x10000000, 0x40000000, 0x00020000):  # NEWUSER, NEWNET, NEWNS
            print(libc.unshare(flag), ctypes.get_errno())
    """)
    )
    assert out.stdout.split()[::2] == [b"-1", b"-1", b"-1"]


def test_double_forked_daemon_does_not_outlive_its_test(run: Run) -> None:
    out = run(
        py("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(60)  # sleep-ok: the sandboxed daemon
            os._exit(0)
        print("parent done")
    """)
    )
    assert out.status == "passed"
    assert out.wall_s < 10  # the daemon kept neither the test nor the pipes


def test_symlinks_lead_nowhere_outside(run: Run) -> None:
    out = run(
        py("""
        import os
        os.symlink("/proc/1/root/etc/passwd", "p")
        os.symlink("/root/.bashrc", "q")
        for name in ("p", "q"):
            try:
                open(name).read()
                print("READ", name)
            except OSError as exc:
                print("no", name)
        try:
            os.symlink("/tmp", "/usr/x")
            print("WROTE /usr")
        except OSError:
            print("ro")
    """)
    )
    assert out.status == "passed"
    assert b"READ" not in out.stdout and b"WROTE" not in out.stdout
    assert not Path("/usr/x").exists()


def test_binary_and_invalid_utf8_output_is_returned_raw(run: Run) -> None:
    out = run("import sys\nsys.stdout.buffer.write(b'\\xff\\xfe\\x00ok\\x80')\n")
    assert out.status == "passed"
    assert out.stdout == b"\xff\xfe\x00ok\x80"


def test_closed_stdin_is_a_runtime_error(run: Run) -> None:
    out = run("import os\nos.close(0)\nprint(input())\n")
    assert out.status == "runtime_error"


def test_reading_past_empty_stdin_is_eof(run: Run) -> None:
    out = run("import sys\nprint(repr(sys.stdin.read()))\n")
    assert out.stdout == b"''\n"
