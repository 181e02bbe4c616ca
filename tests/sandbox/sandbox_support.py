"""Shared by the sandbox tests (a plain module: `conftest` is ambiguous across test folders)."""

from __future__ import annotations

from assay.sandbox import Limits
from assay.settings import CodeSettings

# Generous wall limits: the CI machine has 2 cores shared with other test runs.
LIMITS = Limits(time_s=2.0, memory_mb=256, wall_s=20.0)
SETTINGS = CodeSettings(slots=2, tmpfs_mb=64, processes=32, max_waiting=8, wait_s=60)
