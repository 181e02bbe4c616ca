"""Each isolation layer on its own: what a program inside can and cannot see or do."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.sandbox import Executor, RunOutcome, seccomp
from assay.sandbox.bwrap import BwrapSlot

Run = Callable[..., RunOutcome]


def py(source: str) -> str:
    return textwrap.dedent(source).strip() + "\n"


def test_network_namespace_has_only_loopback(run: Run) -> None:
    out = run("print(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]))\n")
    assert out.stdout == b"['lo']\n"


def test_seccomp_refuses_inet_sockets_but_not_unix(run: Run) -> None:
    out = run(
        py("""
        import socket
        for family in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK, socket.AF_UNIX):
            try:
                socket.socket(family, socket.SOCK_DGRAM).close(); print("ok")
            except OSError as exc:
                print(exc.errno)
    """)
    )
    assert out.stdout.split() == [b"1", b"1", b"1", b"ok"]


def test_unprivileged_uid_inside_and_outside(run: Run, executor: Executor) -> None:
    out = run("import os\nprint(os.getuid(), os.getgid())\n")
    assert out.stdout == b"1000 1000\n"
    if os.geteuid() == 0:
        slots = executor.pool._idle
        assert slots and all(isinstance(s, BwrapSlot) and s.uid not in (None, 0) for s in slots)


def test_no_capabilities(run: Run) -> None:
    out = run("print([l for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm'))])\n")
    assert out.stdout.count(b"0000000000000000") == 2


def test_read_only_system(run: Run) -> None:
    out = run(
        py("""
        for path in ("/usr/evil", "/evil", "/proc/sys/kernel/hostname"):
            try:
                open(path, "w").write("x"); print("WROTE")
            except OSError as exc:
                print(exc.errno)
    """)
    )
    assert b"WROTE" not in out.stdout


def test_tmpfs_is_private_and_size_capped(run: Run) -> None:
    marker = Path("/tmp") / f"assay-sandbox-{os.getpid()}"
    out = run(
        py(f"""
        import os
        print(os.path.exists({str(marker)!r}))
        try:
            open("/tmp/big", "wb").write(b"0" * (100 << 20)); print("WROTE")
        except OSError as exc:
            print(exc.errno)
    """),
        file_bytes=1 << 30,
    )
    marker.write_text("host")
    try:
        assert out.stdout.split() == [b"False", b"28"]  # ENOSPC
    finally:
        marker.unlink()


def test_environment_is_clean(run: Run) -> None:
    out = run("import os\nprint(sorted(os.environ))\n")
    names = set(eval(out.stdout))
    threads = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}  # one BLAS thread per test
    assert names <= {"PATH", "LANG", "HOME", "PWD", "LC_CTYPE", *threads}


def test_pid_namespace_shows_only_the_sandbox(run: Run) -> None:
    out = run("import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n")
    pids = eval(out.stdout)
    assert pids[:2] == [1, 2] and len(pids) == 3


def test_rlimits_apply_per_test(run: Run) -> None:
    out = run(
        py("""
        import resource as r
        print(r.getrlimit(r.RLIMIT_CORE)[0], r.getrlimit(r.RLIMIT_NOFILE)[0], r.getrlimit(r.RLIMIT_FSIZE)[0],
              r.getrlimit(r.RLIMIT_CPU)[0], r.getrlimit(r.RLIMIT_AS)[0] > 0)
    """),
        open_files=100,
        file_bytes=12345,
    )
    assert out.stdout.split() == [b"0", b"100", b"12345", b"3", b"True"]


def test_cgroup_memory_limit_without_address_space_limit(run: Run, executor: Executor) -> None:
    slots = [s for s in executor.pool._idle if isinstance(s, BwrapSlot)]
    if not slots or slots[0].cgroup.memory is None:
        pytest.skip("no cgroup memory controller here")
    out = run(
        "x = bytearray(400 << 20)\nfor i in range(0, len(x), 4096): x[i] = 1\n",
        memory_mb=128,
        address_space=False,
    )
    assert out.status == "memory_limit"
    assert out.oom


def test_nested_user_namespaces_are_refused(run: Run) -> None:
    out = run(
        py("""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        print(libc.unshare(0x10000000), libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
    """)
    )
    assert out.stdout.split() == [b"-1", b"-1"]


def test_seccomp_program_is_built() -> None:
    if not seccomp.available():
        pytest.skip("pyseccomp not installed")
    program = seccomp.bpf_program()
    assert len(program) % 8 == 0 and len(program) > 100  # sock_filter entries are 8 bytes
