"""Long-lived sandboxed processes for programs other than the code runtime: the surface a session's
interpreter composes (issue 36), so that no other folder reaches into the sandbox's private modules.

A launcher holds one sandbox configuration, built from `CodeSettings` exactly as the code slots' is (the
same bubblewrap layers, seccomp filter, package prefix and process limit), and one cgroup folder. Each
`start` is a `SandboxProcess` running a stdlib-only Python file of the caller's, which reads and writes
frames (`read_frame`, `write_frame`) on its control pipe; `close` removes the folder.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from assay.sandbox import cgroups, runtime
from assay.sandbox.base import SandboxError
from assay.sandbox.bwrap import SandboxProcess, config_from

if TYPE_CHECKING:
    from assay.settings import CodeSettings


class SandboxLauncher:
    """Starts `SandboxProcess`es under one cgroup folder (`group`, below the cgroup root)."""

    def __init__(self, settings: CodeSettings, group: str, what: str = "sandboxed programs") -> None:
        try:
            prefix = runtime.check_prefix(settings.python_prefix)
        except ValueError as exc:
            raise SandboxError(str(exc)) from exc
        self.group = group
        self.config = config_from(settings, prefix, cgroup_parent=group, what=what)

    @property
    def nproc(self) -> int | None:
        """The RLIMIT_NPROC a started program should apply: set only as root, where each sandbox runs
        as a host uid of its own (as another uid it would count every process of that user)."""
        return self.config.processes if os.geteuid() == 0 else None

    def start(
        self, name: str, program: str, hello: dict[str, Any] | None = None, memory_mb: int | None = None
    ) -> SandboxProcess:
        """`program` (a host path) started and ready in a sandbox of its own; `hello` is the first frame it
        reads; `memory_mb` bounds the whole sandbox. SandboxError says why it did not start."""
        try:
            process = SandboxProcess(self.config, name, program=program, hello=hello)
        except OSError as exc:
            raise SandboxError(f"cannot start a sandboxed process: {exc}") from exc
        try:
            if memory_mb is not None:
                process.set_memory(memory_mb * 1024 * 1024)
        except OSError as exc:
            process.close()
            raise SandboxError(f"cannot limit a sandboxed process's memory: {exc}") from exc
        return process

    def close(self) -> None:
        """Remove the cgroup folder (its processes closed first)."""
        cgroups.remove_tree(self.group)
