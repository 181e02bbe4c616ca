"""Moved to `assay.rl_client.runs.data` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.data")

from assay.rl_client.runs.data import *  # noqa: E402, F403
