"""cgroup memory and pids limits per sandbox slot, on cgroup v1 or v2, degrading loudly.

One cgroup per slot (per controller on v1) holds the whole sandbox. The host moves the slot's launcher
into it before bubblewrap starts, so every process of the sandbox is charged there. Memory-limit verdicts
come from the `oom_kill` counter (v1 `memory.oom_control`, v2 `memory.events`). Where no controller can
be used (not root, v2 without delegated controllers), `CgroupSet.unavailable` says why and the pool logs
a warning: rlimits (address space, NPROC per slot uid) are then the only limits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("assay.sandbox")

ROOT = Path("/sys/fs/cgroup")


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


@dataclass
class CgroupSet:
    """The cgroup directories of one slot and how to set and read limits on them."""

    version: int  # 1, 2, or 0 when unavailable
    memory: Path | None = None
    pids: Path | None = None
    unavailable: list[str] = field(default_factory=list)
    _oom_fd: int | None = field(default=None, repr=False)  # kept open: read twice per test

    @property
    def procs_files(self) -> list[str]:
        dirs = {p for p in (self.memory, self.pids) if p is not None}
        return [str(d / "cgroup.procs") for d in sorted(dirs)]

    def set_memory(self, limit: int) -> None:
        if self.memory is None:
            return
        if self.version == 1:
            # memsw must stay >= memory: try both orders so raising and lowering both work.
            files = ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
            for order in (files, files[::-1]):
                try:
                    for name in order:
                        if (self.memory / name).exists():
                            (self.memory / name).write_text(str(limit))
                    return
                except OSError:
                    continue
            raise OSError(f"cannot set memory limit {limit} on {self.memory}")
        (self.memory / "memory.max").write_text(str(limit))
        with contextlib.suppress(OSError):
            (self.memory / "memory.swap.max").write_text("0")

    def set_pids(self, limit: int) -> None:
        if self.pids is not None:
            (self.pids / "pids.max").write_text(str(limit))

    def oom_kills(self) -> int:
        """How many processes the memory limit has killed so far (monotonic)."""
        if self.memory is None:
            return 0
        try:
            if self._oom_fd is None:
                name = "memory.oom_control" if self.version == 1 else "memory.events"
                self._oom_fd = os.open(self.memory / name, os.O_RDONLY | os.O_CLOEXEC)
            text = os.pread(self._oom_fd, 4096, 0)  # a cgroup file re-reads fresh from offset 0
            for line in text.splitlines():
                key, _, value = line.partition(b" ")
                if key == b"oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    @staticmethod
    def _tasks(procs: str) -> list[str]:
        try:
            return Path(procs).read_text().split()
        except OSError:
            return []

    def kill_all(self) -> None:
        """SIGKILL every task in the slot's cgroups (the host's last resort when a slot is torn down)."""
        for procs in self.procs_files:
            try:
                pids = [int(p) for p in Path(procs).read_text().split()]
            except OSError:
                continue
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self, wait_s: float = 5.0) -> None:
        """rmdir the slot's cgroups once their killed tasks have exited (rmdir fails while any remain)."""
        if self._oom_fd is not None:
            os.close(self._oom_fd)
            self._oom_fd = None
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(self._tasks(p) for p in self.procs_files):
            time.sleep(0.01)
        for d in {p for p in (self.memory, self.pids) if p is not None}:
            with contextlib.suppress(OSError):
                d.rmdir()


def create(name: str, root: Path = ROOT) -> CgroupSet:
    """Make the slot's cgroups under `root`; an empty set with reasons if that is impossible."""
    mem_v1, pids_v1 = root / "memory", root / "pids"
    if (mem_v1 / "memory.limit_in_bytes").exists() or (pids_v1 / "pids.max").exists():
        cg = CgroupSet(version=1)
        for attr, base, probe in (("memory", mem_v1, "memory.limit_in_bytes"), ("pids", pids_v1, "pids.max")):
            if not _writable(base):
                cg.unavailable.append(f"cgroup v1 {attr} controller is not writable at {base}")
                continue
            path = base / name
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                cg.unavailable.append(f"cannot create {path}: {exc}")
                continue
            if not (path / probe).exists():
                cg.unavailable.append(f"{path} has no {probe}")
                continue
            setattr(cg, attr, path)
        return cg
    return _create_v2(name, root)


def _create_v2(name: str, root: Path) -> CgroupSet:
    base = root / "unified" if (root / "unified" / "cgroup.controllers").exists() else root
    cg = CgroupSet(version=2)
    try:
        controllers = (base / "cgroup.controllers").read_text().split()
    except OSError:
        return CgroupSet(version=0, unavailable=[f"no cgroup filesystem at {root}"])
    missing = [c for c in ("memory", "pids") if c not in controllers]
    if missing:
        cg.unavailable.append(f"cgroup v2 at {base} has no {' and '.join(missing)} controller")
    if len(missing) == 2 or not _writable(base):
        cg.unavailable.append(f"cgroup v2 at {base} is not usable")
        cg.version = 0
        return cg
    path = base / name
    try:
        parent = path.parent
        parent.mkdir(parents=True, exist_ok=True)
        if parent != base:
            enable = " ".join(f"+{c}" for c in ("memory", "pids") if c not in missing)
            (base / "cgroup.subtree_control").write_text(enable)
            (parent / "cgroup.subtree_control").write_text(enable)
        path.mkdir(exist_ok=True)
    except OSError as exc:
        return CgroupSet(version=0, unavailable=[*cg.unavailable, f"cannot create {path}: {exc}"])
    cg.memory = path if "memory" not in missing else None
    cg.pids = path if "pids" not in missing else None
    return cg


def remove_tree(name: str, root: Path = ROOT) -> None:
    """Remove a pool's (empty) parent cgroups after its slots are gone."""
    for base in (root / "memory", root / "pids", root / "unified", root):
        with contextlib.suppress(OSError):
            (base / name).rmdir()
