"""Moved to `assay.rl_client.runs.mix` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.mix")

from assay.rl_client.runs.mix import *  # noqa: E402, F403
