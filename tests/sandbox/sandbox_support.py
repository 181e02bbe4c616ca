"""Shared by the sandbox tests (a plain module: `conftest` is ambiguous across test folders)."""

from __future__ import annotations

import os
from pathlib import Path

from assay.sandbox import Limits
from assay.sandbox.bwrap import find_bwrap
from assay.settings import CodeSettings

# Generous wall limits: the CI machine has 2 cores shared with other test runs.
LIMITS = Limits(time_s=2.0, memory_mb=256, wall_s=20.0)
SETTINGS = CodeSettings(slots=2, tmpfs_mb=64, processes=32, max_waiting=8, wait_s=60)


def bwrap_works() -> bool:
    try:
        find_bwrap()
    except Exception:
        return False
    return os.geteuid() == 0 or Path("/proc/sys/user/max_user_namespaces").read_text().strip() != "0"
