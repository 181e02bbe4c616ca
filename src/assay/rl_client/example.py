"""Moved to `assay.rl_client.runs.example` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.example")

from assay.rl_client.runs.example import *  # noqa: E402, F403
