"""Moved to `assay.rl_client.runs.evaluate` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.evaluate")

from assay.rl_client.runs.evaluate import *  # noqa: E402, F403
