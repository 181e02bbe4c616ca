"""Moved to `assay.rl_client.runs.command` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.command")

from assay.rl_client.runs.command import *  # noqa: E402, F403
