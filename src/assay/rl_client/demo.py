"""Moved to `assay.rl_client.runs.demo` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.demo")

from assay.rl_client.runs.demo import *  # noqa: E402, F403
