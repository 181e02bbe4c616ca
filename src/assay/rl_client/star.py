"""Moved to `assay.rl_client.runs.star` (issue 24): a deprecated alias."""

from assay._moved import warn_moved

warn_moved("assay.rl_client.star")

from assay.rl_client.runs.star import *  # noqa: E402, F403
