"""Sandboxed execution of untrusted programs: warm slots, one fork per test, many isolation layers.

How it works: a bounded pool of long-lived sandboxes ("slots"); inside each, a warm runtime (`_runner`)
forks once per test. Python runs in the already-started interpreter; C++, Java, Rust and Go compile once
per submission (cached on the host by source hash); node and compiled programs are exec'd. Expected
outputs never enter a sandbox.

Covered (each layer has a test in tests/sandbox):
- no network: a private network namespace with only `lo` (the host's 127.0.0.1 is unreachable), and
  seccomp refuses every socket family but AF_UNIX;
- an unprivileged host uid per slot (so RLIMIT_NPROC works while the server runs as root), uid 1000
  inside, `--cap-drop ALL`, no nested user namespaces (`--disable-userns` + seccomp on unshare/clone);
- a read-only /usr and nothing else of the host: no /etc/passwd, no server files, no environment; the
  host's Python site/dist-packages are masked, and Python programs get our package prefix instead
  (`runtime`, `make sandbox-runtime`);
- a private, size-capped tmpfs at /tmp, wiped after every submission;
- a pid namespace: after each test every process but the runtime is killed (double-forked daemons too);
- seccomp: ptrace, process_vm_*, mount, unshare/setns, bpf, perf, keyrings, io_uring, kexec..., and
  signals aimed at the runtime or at process groups;
- cgroup v1 or v2 memory (+swap) and pids limits per slot (degrading loudly to rlimits only when no
  controller can be used), rlimits per test (CPU, address space for C/C++/Python, file size, open files,
  processes, core 0), wall-clock limits and stdout/stderr caps enforced by the runtime.

- assert-style tests: the test code runs in an evaluator process forked beside the program's, from a
  runtime whose memory never held it; calls cross a pipe as plain data and only the evaluator writes the
  verdict (`_harness`, `_runner.run_assert`).

Other long-lived programs (a session's interpreter) run in the same sandbox through the public
`SandboxLauncher` and `SandboxProcess`: the launcher builds the configuration from `CodeSettings`; the
runtime starts the program's file in its place and lends it the frame codec (`read_frame`, `write_frame`).

Not covered: kernel exploits (bubblewrap shares the host kernel; for hostile multi-tenant use run the
server under gVisor or in microVMs such as Firecracker), side channels, and a test that trusts a helper
the program defines (HumanEval/32's `poly`): the program may redefine it. The docker backend
(`assay.sandbox.docker`) is only unit-tested: no engine exists on the development machines.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from assay.sandbox._harness import PLAIN_TYPES, decode_plain, from_wire
from assay.sandbox._runner import read_frame, write_frame
from assay.sandbox.base import (
    COMPILE_ERROR,
    MEMORY_LIMIT,
    OUTPUT_LIMIT,
    PASSED,
    RUNTIME_ERROR,
    TIME_LIMIT,
    WRONG_ANSWER,
    Limits,
    RunOutcome,
    SandboxError,
    Slot,
)
from assay.sandbox.bwrap import SandboxProcess
from assay.sandbox.executor import Execution, Executor, Program, TestInput
from assay.sandbox.languages import Language, lookup
from assay.sandbox.launcher import SandboxLauncher
from assay.sandbox.pool import SlotPool

if TYPE_CHECKING:
    from assay.settings import CodeSettings

log = logging.getLogger("assay.sandbox")

__all__ = [
    "COMPILE_ERROR",
    "MEMORY_LIMIT",
    "OUTPUT_LIMIT",
    "PASSED",
    "PLAIN_TYPES",
    "RUNTIME_ERROR",
    "TIME_LIMIT",
    "WRONG_ANSWER",
    "Execution",
    "Executor",
    "Language",
    "Limits",
    "Program",
    "RunOutcome",
    "SandboxError",
    "SandboxLauncher",
    "SandboxProcess",
    "SlotPool",
    "TestInput",
    "create_executor",
    "decode_plain",
    "from_wire",
    "lookup",
    "read_frame",
    "write_frame",
]


def create_executor(settings: CodeSettings) -> Executor:
    """Build the pool and executor for the configured backend. Slots start on first use."""
    from assay.sandbox import cgroups, runtime

    factory: Callable[[str], Slot]
    try:
        prefix = runtime.check_prefix(settings.python_prefix)
    except ValueError as exc:
        raise SandboxError(str(exc)) from exc
    if settings.backend == "docker":
        from assay.sandbox.docker import DockerConfig, DockerSlot

        dconfig = DockerConfig(
            image=settings.docker_image,
            tmpfs_mb=settings.tmpfs_mb,
            processes=settings.processes,
            python_prefix=prefix,
        )
        factory = lambda name: DockerSlot(dconfig, name)  # noqa: E731
    elif settings.backend == "bwrap":
        from assay.sandbox.bwrap import BwrapSlot, config_from

        bconfig = config_from(settings, prefix, cgroup_parent="assay", what="code slots")
        probe = cgroups.create(f"{bconfig.cgroup_parent}/probe")
        if probe.unavailable:
            log.warning(
                "SANDBOX DEGRADED: %s; only rlimits bound memory and processes", "; ".join(probe.unavailable)
            )
        probe.remove()
        if os.geteuid() != 0:
            log.warning(
                "SANDBOX DEGRADED: not root, so every slot runs as this uid and RLIMIT_NPROC is not set "
                "(it would count all of this user's processes); only a pids cgroup bounds fork bombs"
            )
        factory = lambda name: BwrapSlot(bconfig, name)  # noqa: E731
    else:
        raise SandboxError(f'unknown sandbox backend "{settings.backend}" (bwrap or docker)')
    pool = SlotPool(
        factory,
        size=settings.slots,
        recycle_after=settings.recycle_after,
        on_close=lambda prefix: cgroups.remove_tree(f"assay/{prefix}"),
    )
    compile_limits = Limits(
        time_s=settings.compile_timeout_s,
        memory_mb=settings.compile_memory_mb,
        wall_s=settings.compile_timeout_s * 2 + 5,
        address_space=False,
        processes=settings.processes,
    )
    return Executor(pool, compile_limits)
