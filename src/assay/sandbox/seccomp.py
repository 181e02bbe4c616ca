"""The seccomp filter every sandbox runs under, built with PyPI `pyseccomp` (ctypes over libseccomp).

bubblewrap takes a compiled BPF program on a file descriptor (`bwrap --seccomp FD`); we build the filter
once, export the BPF bytes, and hand each slot a fresh memfd holding them.

Denied with EPERM: sockets of every family but AF_UNIX (no network even if a namespace leaked), ptrace
and cross-process memory access, mount/unshare/setns/pivot_root (no nested namespaces), bpf, perf_event,
kernel keyrings, module loading, kexec, reboot, swap, clock setting, userfaultfd, io_uring; and signals
aimed at pid 1, pid 2 (the warm runtime) or at any process group, so a test cannot take its harness down.
"""

from __future__ import annotations

import errno
import os
from functools import lru_cache

# Syscalls no test program needs; each is denied outright.
DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "pidfd_send_signal",  # pidfd_open stays: the runtime polls on its child's exit
    "kcmp",
    "mount",
    "umount2",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "acct",
    "quotactl",
    "personality",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    "syslog",
    "vhangup",
)
AF_UNIX = 1
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: clone may not make namespaces.
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
PROTECTED_PIDS = (1, 2)  # bwrap's reaper and the warm runtime (see _runner)


def available() -> bool:
    """Whether pyseccomp and libseccomp can be loaded."""
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, OSError):
        return False
    return True


@lru_cache(maxsize=1)
def bpf_program() -> bytes:
    """The compiled filter as raw BPF (what `bwrap --seccomp` reads)."""
    import pyseccomp as sc

    flt = sc.SyscallFilter(sc.ALLOW)
    deny = sc.ERRNO(errno.EPERM)
    for name in DENIED:
        try:
            flt.add_rule(deny, name)
        except (OSError, ValueError, RuntimeError):  # unknown on this kernel/libseccomp: nothing to deny
            continue
    # Sockets: only AF_UNIX (python's multiprocessing and some runtimes use it inside the sandbox).
    flt.add_rule(deny, "socket", sc.Arg(0, sc.NE, AF_UNIX))
    flt.add_rule(deny, "socketpair", sc.Arg(0, sc.NE, AF_UNIX))
    # clone with namespace flags (clone3 passes flags in memory: make it look unsupported instead, so
    # glibc falls back to clone, which we can inspect).
    for flag in NAMESPACE_FLAGS:
        flt.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    _deny_signals(flt, sc, deny)
    memfd = os.memfd_create("seccomp")
    try:
        flt.export_bpf(_FdFile(memfd))
        os.lseek(memfd, 0, os.SEEK_SET)
        size = os.fstat(memfd).st_size
        return os.read(memfd, size)
    finally:
        os.close(memfd)


def _deny_signals(flt: object, sc: object, deny: int) -> None:
    """No signal to pid 1/2, to -1 (everyone) or to a process group (negative pid)."""
    negative = sc.Arg(0, sc.MASKED_EQ, 0x80000000, 0x80000000)  # type: ignore[attr-defined]
    for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        flt.add_rule(deny, name, negative)  # type: ignore[attr-defined]
        for pid in PROTECTED_PIDS:
            flt.add_rule(deny, name, sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, pid))  # type: ignore[attr-defined]
    for pid in PROTECTED_PIDS:
        flt.add_rule(deny, "tkill", sc.Arg(0, sc.MASKED_EQ, 0xFFFFFFFF, pid))  # type: ignore[attr-defined]


class _FdFile:
    """pyseccomp exports to anything with `fileno()`."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd


def seccomp_fd() -> int:
    """A fresh, inheritable memfd holding the BPF program, positioned at its start."""
    fd = os.memfd_create("assay-seccomp", 0)
    os.write(fd, bpf_program())
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    return fd
